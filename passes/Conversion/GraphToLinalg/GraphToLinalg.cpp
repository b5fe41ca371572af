//===- GraphToLinalg.cpp - graph ops to linalg on tensors -----------------===//
//
// The first step of the CPU code path: every graph op becomes upstream MLIR
// on tensors. Elementwise ops (with NumPy broadcasting) are one
// linalg.generic each, whose body is the scalar op in arith / math;
// reductions, matmul, softmax and the norms are linalg.generic with
// reduction iterators (row results read back through projected maps);
// gathers, reversed slices, pad modes and resize read with tensor.extract
// inside a generic; top_k is a rank count and a selection (two generics);
// scatter_elements an scf.for nest of tensor.insert on a copy of the data;
// conv uses the named NCHW conv ops, pooling one window generic;
// transpose, fill and iota have their linalg forms; reshapes are
// tensor.reshape. Dynamic dims are read from the operands with tensor.dim.
// Ops are lowered one by one in program order, so each sees its operands
// already lowered; every graph op without a lowering is reported.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/Passes.h"

#include "dialects/graph/GraphOps.h"
#include "dialects/kernel/KernelOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <functional>

using namespace mlir;
using namespace loom::graph;

namespace {

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

bool isFloat(Type t) { return isa<FloatType>(t); }

/// A scalar constant of element type `type`.
Value scalarConst(OpBuilder &b, Location loc, Type type, double value) {
  if (auto f = dyn_cast<FloatType>(type))
    return b.create<arith::ConstantOp>(loc, b.getFloatAttr(f, value));
  return b.create<arith::ConstantOp>(
      loc, b.getIntegerAttr(type, APInt(type.getIntOrFloatBitWidth(),
                                        (int64_t)value, /*isSigned=*/true)));
}

/// The sizes of `type`'s dynamic dims, each read with tensor.dim from the
/// first source (right-aligned, as in broadcasting) whose dim there is
/// dynamic too. Fails when none has it.
FailureOr<SmallVector<Value>> dynamicSizes(OpBuilder &b, Location loc,
                                           RankedTensorType type,
                                           ValueRange sources) {
  SmallVector<Value> sizes;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    if (!type.isDynamicDim(i))
      continue;
    Value size;
    for (Value s : sources) {
      RankedTensorType st = tensorType(s);
      int64_t j = i - (type.getRank() - st.getRank());
      if (j >= 0 && st.isDynamicDim(j)) {
        size = b.create<tensor::DimOp>(loc, s, j);
        break;
      }
    }
    if (!size)
      return failure();
    sizes.push_back(size);
  }
  return sizes;
}

/// The map from `result`'s iteration space to an operand broadcast into
/// it: dims aligned on the right, a static size-1 dim that the result
/// widens reads index 0.
AffineMap broadcastMap(RankedTensorType operand, RankedTensorType result) {
  MLIRContext *ctx = operand.getContext();
  SmallVector<AffineExpr> exprs;
  int64_t offset = result.getRank() - operand.getRank();
  for (int64_t j = 0; j < operand.getRank(); ++j) {
    int64_t i = j + offset;
    if (operand.getDimSize(j) == 1 && result.getDimSize(i) != 1)
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(getAffineDimExpr(i, ctx));
  }
  return AffineMap::get(result.getRank(), 0, exprs, ctx);
}

using ScalarFn =
    function_ref<Value(OpBuilder &, Location, ValueRange /*operands*/)>;

/// One linalg.generic over `type` whose body applies `fn` to the broadcast
/// operands.
FailureOr<Value> elementwise(OpBuilder &b, Location loc, RankedTensorType type,
                             ValueRange operands, ScalarFn fn) {
  auto sizes = dynamicSizes(b, loc, type, operands);
  if (failed(sizes))
    return failure();
  Value init = b.create<tensor::EmptyOp>(loc, type.getShape(),
                                         type.getElementType(), *sizes);
  SmallVector<AffineMap> maps;
  for (Value v : operands)
    maps.push_back(broadcastMap(tensorType(v), type));
  maps.push_back(b.getMultiDimIdentityMap(type.getRank()));
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  auto generic = b.create<linalg::GenericOp>(
      loc, TypeRange{type}, operands, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        nb.create<linalg::YieldOp>(nl, fn(nb, nl, args.drop_back()));
      });
  return generic.getResult(0);
}

/// Converts scalar `x` to element type `to`: float to integer rounds
/// toward zero, anything to i1 tests != 0, i1 widens as 0 / 1.
Value convertScalar(OpBuilder &b, Location loc, Value x, Type to) {
  Type from = x.getType();
  if (from == to)
    return x;
  if (to.isInteger(1)) {
    Value zero = scalarConst(b, loc, from, 0);
    if (isFloat(from))
      return b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::UNE, x, zero);
    return b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, x, zero);
  }
  if (isFloat(from) && isFloat(to)) {
    unsigned fw = from.getIntOrFloatBitWidth(), tw = to.getIntOrFloatBitWidth();
    if (fw == tw) // f16 <-> bf16 through f32
      return b.create<arith::TruncFOp>(
          loc, to, b.create<arith::ExtFOp>(loc, b.getF32Type(), x));
    if (fw < tw)
      return b.create<arith::ExtFOp>(loc, to, x);
    return b.create<arith::TruncFOp>(loc, to, x);
  }
  if (isFloat(to))
    return from.isInteger(1) ? (Value)b.create<arith::UIToFPOp>(loc, to, x)
                             : b.create<arith::SIToFPOp>(loc, to, x);
  if (isFloat(from))
    return b.create<arith::FPToSIOp>(loc, to, x);
  unsigned fw = from.getIntOrFloatBitWidth(), tw = to.getIntOrFloatBitWidth();
  if (fw < tw)
    return from.isInteger(1) ? (Value)b.create<arith::ExtUIOp>(loc, to, x)
                             : b.create<arith::ExtSIOp>(loc, to, x);
  return b.create<arith::TruncIOp>(loc, to, x);
}

/// `FOp` on floats, `IOp` (signed) on integers.
template <typename FOp, typename IOp>
Value floatOrInt(OpBuilder &b, Location loc, Value x, Value y) {
  if (isFloat(x.getType()))
    return b.create<FOp>(loc, x, y);
  return b.create<IOp>(loc, x, y);
}

Value maxScalar(OpBuilder &b, Location loc, Value x, Value y) {
  return floatOrInt<arith::MaximumFOp, arith::MaxSIOp>(b, loc, x, y);
}

Value minScalar(OpBuilder &b, Location loc, Value x, Value y) {
  return floatOrInt<arith::MinimumFOp, arith::MinSIOp>(b, loc, x, y);
}

Value addScalar(OpBuilder &b, Location loc, Value x, Value y) {
  return floatOrInt<arith::AddFOp, arith::AddIOp>(b, loc, x, y);
}

Value mulScalar(OpBuilder &b, Location loc, Value x, Value y) {
  return floatOrInt<arith::MulFOp, arith::MulIOp>(b, loc, x, y);
}

Value compareScalar(OpBuilder &b, Location loc, CompareDirection d, Value x,
                    Value y) {
  if (isFloat(x.getType())) {
    // Ordered, except ne (true when either side is NaN).
    arith::CmpFPredicate p =
        d == CompareDirection::eq   ? arith::CmpFPredicate::OEQ
        : d == CompareDirection::ne ? arith::CmpFPredicate::UNE
        : d == CompareDirection::lt ? arith::CmpFPredicate::OLT
        : d == CompareDirection::le ? arith::CmpFPredicate::OLE
        : d == CompareDirection::gt ? arith::CmpFPredicate::OGT
                                    : arith::CmpFPredicate::OGE;
    return b.create<arith::CmpFOp>(loc, p, x, y);
  }
  // Signed, except for i1 (false < true).
  bool u = x.getType().isInteger(1);
  arith::CmpIPredicate p =
      d == CompareDirection::eq   ? arith::CmpIPredicate::eq
      : d == CompareDirection::ne ? arith::CmpIPredicate::ne
      : d == CompareDirection::lt
          ? (u ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt)
      : d == CompareDirection::le
          ? (u ? arith::CmpIPredicate::ule : arith::CmpIPredicate::sle)
      : d == CompareDirection::gt
          ? (u ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::sgt)
          : (u ? arith::CmpIPredicate::uge : arith::CmpIPredicate::sge);
  return b.create<arith::CmpIOp>(loc, p, x, y);
}

/// 1 / sqrt(x): math.rsqrt has no lowering to LLVM (MLIR 19).
Value rsqrtScalar(OpBuilder &b, Location loc, Value x) {
  return b.create<arith::DivFOp>(loc, scalarConst(b, loc, x.getType(), 1),
                                 b.create<math::SqrtOp>(loc, x));
}

/// The scalar body of an elementwise graph op, or null when `op` is not
/// one.
Value elementwiseBody(Operation *op, OpBuilder &b, Location loc, ValueRange a) {
  Type elem = getElementTypeOrSelf(op->getResult(0).getType());
  bool fp = isFloat(elem);
  auto cst = [&](double v) { return scalarConst(b, loc, elem, v); };
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](NegOp) -> Value {
        if (fp)
          return b.create<arith::NegFOp>(loc, a[0]);
        return b.create<arith::SubIOp>(loc, cst(0), a[0]);
      })
      .Case([&](AbsOp) -> Value {
        if (fp)
          return b.create<math::AbsFOp>(loc, a[0]);
        return b.create<math::AbsIOp>(loc, a[0]);
      })
      .Case([&](ExpOp) { return b.create<math::ExpOp>(loc, a[0]); })
      .Case([&](LogOp) { return b.create<math::LogOp>(loc, a[0]); })
      .Case([&](SqrtOp) { return b.create<math::SqrtOp>(loc, a[0]); })
      .Case([&](RsqrtOp) { return rsqrtScalar(b, loc, a[0]); })
      .Case([&](TanhOp) { return b.create<math::TanhOp>(loc, a[0]); })
      .Case([&](CosOp) { return b.create<math::CosOp>(loc, a[0]); })
      .Case([&](SinOp) { return b.create<math::SinOp>(loc, a[0]); })
      .Case([&](ErfOp) { return b.create<math::ErfOp>(loc, a[0]); })
      .Case([&](FloorOp) { return b.create<math::FloorOp>(loc, a[0]); })
      .Case([&](CeilOp) { return b.create<math::CeilOp>(loc, a[0]); })
      .Case([&](RoundOp) { return b.create<math::RoundEvenOp>(loc, a[0]); })
      .Case([&](SigmoidOp) -> Value {
        // 1 / (1 + exp(-x))
        Value e =
            b.create<math::ExpOp>(loc, b.create<arith::NegFOp>(loc, a[0]));
        return b.create<arith::DivFOp>(loc, cst(1),
                                       b.create<arith::AddFOp>(loc, cst(1), e));
      })
      .Case([&](ReluOp) { return maxScalar(b, loc, a[0], cst(0)); })
      .Case([&](GeluOp o) -> Value {
        Value x = a[0], inner;
        if (o.getApproximate() == GeluApproximation::tanh) {
          // tanh(sqrt(2 / pi) * (x + 0.044715 x^3))
          Value x3 = b.create<arith::MulFOp>(
              loc, x, b.create<arith::MulFOp>(loc, x, x));
          Value s = b.create<arith::AddFOp>(
              loc, x, b.create<arith::MulFOp>(loc, cst(0.044715), x3));
          inner = b.create<math::TanhOp>(
              loc, b.create<arith::MulFOp>(loc, cst(std::sqrt(2 / M_PI)), s));
        } else {
          inner = b.create<math::ErfOp>(
              loc, b.create<arith::MulFOp>(loc, x, cst(M_SQRT1_2)));
        }
        Value half = b.create<arith::MulFOp>(loc, cst(0.5), x);
        return b.create<arith::MulFOp>(
            loc, half, b.create<arith::AddFOp>(loc, cst(1), inner));
      })
      .Case([&](ClampOp o) -> Value {
        Value x = a[0];
        if (auto lo = o.getMin())
          x = maxScalar(b, loc, x, cst(lo->convertToDouble()));
        if (auto hi = o.getMax())
          x = minScalar(b, loc, x, cst(hi->convertToDouble()));
        return x;
      })
      .Case([&](CastOp) { return convertScalar(b, loc, a[0], elem); })
      .Case([&](AddOp) { return addScalar(b, loc, a[0], a[1]); })
      .Case([&](SubOp) {
        return floatOrInt<arith::SubFOp, arith::SubIOp>(b, loc, a[0], a[1]);
      })
      .Case([&](MulOp) { return mulScalar(b, loc, a[0], a[1]); })
      .Case([&](DivOp) {
        return floatOrInt<arith::DivFOp, arith::DivSIOp>(b, loc, a[0], a[1]);
      })
      .Case([&](PowOp) { return b.create<math::PowFOp>(loc, a[0], a[1]); })
      .Case([&](MaxOp) { return maxScalar(b, loc, a[0], a[1]); })
      .Case([&](MinOp) { return minScalar(b, loc, a[0], a[1]); })
      .Case([&](RemOp) -> Value {
        if (fp)
          return b.create<arith::RemFOp>(loc, a[0], a[1]);
        return b.create<arith::RemSIOp>(loc, a[0], a[1]);
      })
      .Case([&](ModOp) -> Value {
        // The truncated remainder, moved by rhs when its sign differs.
        Value r = fp ? (Value)b.create<arith::RemFOp>(loc, a[0], a[1])
                     : b.create<arith::RemSIOp>(loc, a[0], a[1]);
        Value zero = cst(0);
        Value nonzero = compareScalar(b, loc, CompareDirection::ne, r, zero);
        Value rNeg = compareScalar(b, loc, CompareDirection::lt, r, zero);
        Value bNeg = compareScalar(b, loc, CompareDirection::lt, a[1], zero);
        Value fix = b.create<arith::AndIOp>(
            loc, nonzero, b.create<arith::XOrIOp>(loc, rNeg, bNeg));
        Value moved = fp ? (Value)b.create<arith::AddFOp>(loc, r, a[1])
                         : b.create<arith::AddIOp>(loc, r, a[1]);
        return b.create<arith::SelectOp>(loc, fix, moved, r);
      })
      .Case([&](CompareOp o) {
        return compareScalar(b, loc, o.getDirection(), a[0], a[1]);
      })
      .Case([&](WhereOp) {
        return b.create<arith::SelectOp>(loc, a[0], a[1], a[2]);
      })
      .Case([&](BroadcastToOp) { return a[0]; })
      .Default([](Operation *) { return Value(); });
}

bool isElementwise(Operation *op) {
  return isa<NegOp, AbsOp, ExpOp, LogOp, SqrtOp, RsqrtOp, TanhOp, CosOp, SinOp,
             ErfOp, FloorOp, CeilOp, RoundOp, SigmoidOp, ReluOp, GeluOp,
             ClampOp, CastOp, AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp,
             RemOp, ModOp, CompareOp, WhereOp, BroadcastToOp>(op);
}

/// tensor.empty of `type`, its dynamic sizes given.
Value emptyOf(OpBuilder &b, Location loc, RankedTensorType type,
              ValueRange sizes) {
  return b.create<tensor::EmptyOp>(loc, type.getShape(), type.getElementType(),
                                   sizes);
}

/// A size as an index value: the static size, or tensor.dim of `v`.
Value dimOf(OpBuilder &b, Location loc, Value v, int64_t i) {
  int64_t d = tensorType(v).getDimSize(i);
  if (ShapedType::isDynamic(d))
    return b.create<tensor::DimOp>(loc, v, i);
  return b.create<arith::ConstantIndexOp>(loc, d);
}

/// What a reduction computes.
enum class ReduceKind { Sum, Mean, Max, Min, Prod };

ReduceKind reduceKind(Operation *op) {
  return llvm::TypeSwitch<Operation *, ReduceKind>(op)
      .Case([](ReduceMeanOp) { return ReduceKind::Mean; })
      .Case([](ReduceMaxOp) { return ReduceKind::Max; })
      .Case([](ReduceMinOp) { return ReduceKind::Min; })
      .Case([](ReduceProdOp) { return ReduceKind::Prod; })
      .Default([](Operation *) { return ReduceKind::Sum; });
}

/// The largest (`max`) or smallest value of `elem`: an infinity for
/// floats.
Value extremeConst(OpBuilder &b, Location loc, Type elem, bool max) {
  if (auto f = dyn_cast<FloatType>(elem))
    return b.create<arith::ConstantOp>(
        loc, b.getFloatAttr(f, APFloat::getInf(f.getFloatSemantics(), !max)));
  unsigned w = elem.getIntOrFloatBitWidth();
  APInt v = w == 1 ? APInt(1, max ? 1 : 0)
                   : (max ? APInt::getSignedMaxValue(w)
                          : APInt::getSignedMinValue(w));
  return b.create<arith::ConstantOp>(loc, b.getIntegerAttr(elem, v));
}

/// The identity of a reduction's combiner, and the combiner.
Value reductionInit(OpBuilder &b, Location loc, ReduceKind kind, Type elem) {
  if (kind == ReduceKind::Sum || kind == ReduceKind::Mean)
    return scalarConst(b, loc, elem, 0);
  if (kind == ReduceKind::Prod)
    return scalarConst(b, loc, elem, 1);
  return extremeConst(b, loc, elem, /*max=*/kind == ReduceKind::Min);
}

Value reductionCombine(OpBuilder &b, Location loc, ReduceKind kind, Value acc,
                       Value x) {
  bool i1 = x.getType().isInteger(1);
  switch (kind) {
  case ReduceKind::Sum:
  case ReduceKind::Mean:
    return addScalar(b, loc, acc, x);
  case ReduceKind::Prod:
    return mulScalar(b, loc, acc, x);
  case ReduceKind::Max:
    return i1 ? (Value)b.create<arith::OrIOp>(loc, acc, x)
              : maxScalar(b, loc, acc, x);
  case ReduceKind::Min:
    return i1 ? (Value)b.create<arith::AndIOp>(loc, acc, x)
              : minScalar(b, loc, acc, x);
  }
  llvm_unreachable("unknown reduction");
}

/// The sizes of `v`'s dynamic dims, read with tensor.dim.
SmallVector<Value> dynamicDimsOf(OpBuilder &b, Location loc, Value v) {
  SmallVector<Value> sizes;
  RankedTensorType t = tensorType(v);
  for (int64_t i = 0; i < t.getRank(); ++i)
    if (t.isDynamicDim(i))
      sizes.push_back(b.create<tensor::DimOp>(loc, v, i));
  return sizes;
}

/// The map from a rank-`rank` iteration space to its dims `dims`.
AffineMap projection(MLIRContext *ctx, int64_t rank, ArrayRef<int64_t> dims) {
  SmallVector<AffineExpr> exprs;
  for (int64_t d : dims)
    exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(rank, 0, exprs, ctx);
}

/// The dims of a rank-`rank` space in [from, to).
SmallVector<int64_t> dimRange(int64_t from, int64_t to) {
  return llvm::to_vector(llvm::seq<int64_t>(from, to));
}

using BodyFn =
    function_ref<Value(OpBuilder &, Location, ValueRange /*ins, then out*/)>;

/// A linalg.generic into `init` that reads `ins` through `maps` (one per
/// input, then the output's) and yields `fn(ins..., out)`.
Value generic(OpBuilder &b, Location loc, Value init, ValueRange ins,
              ArrayRef<AffineMap> maps, ArrayRef<utils::IteratorType> iterators,
              BodyFn fn) {
  return b
      .create<linalg::GenericOp>(
          loc, TypeRange{init.getType()}, ins, ValueRange{init}, maps,
          iterators,
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            nb.create<linalg::YieldOp>(nl, fn(nb, nl, args));
          })
      .getResult(0);
}

/// A tensor of `type` filled with `value`.
Value filled(OpBuilder &b, Location loc, RankedTensorType type,
             ValueRange sizes, Value value) {
  Value empty = b.create<tensor::EmptyOp>(loc, type.getShape(),
                                          type.getElementType(), sizes);
  return b.create<linalg::FillOp>(loc, value, empty).getResult(0);
}

/// The rows of `x`: its shape without the dims marked `reduced`, their
/// dynamic sizes, and the map from `x`'s dims to them.
struct Rows {
  SmallVector<int64_t> shape;
  SmallVector<Value> sizes;
  AffineMap map;
};

/// The map from a space of `reduced.size()` dims to those not `reduced`.
AffineMap rowMap(MLIRContext *ctx, ArrayRef<bool> reduced) {
  SmallVector<int64_t> kept;
  for (auto [i, r] : llvm::enumerate(reduced))
    if (!r)
      kept.push_back(i);
  return projection(ctx, reduced.size(), kept);
}

Rows rowsOf(OpBuilder &b, Location loc, Value x, ArrayRef<bool> reduced) {
  RankedTensorType xt = tensorType(x);
  Rows rows;
  for (int64_t i = 0; i < xt.getRank(); ++i) {
    if (reduced[i])
      continue;
    rows.shape.push_back(xt.getDimSize(i));
    if (xt.isDynamicDim(i))
      rows.sizes.push_back(b.create<tensor::DimOp>(loc, x, i));
  }
  rows.map = rowMap(b.getContext(), reduced);
  return rows;
}

/// Reduces `x` over the dims marked `reduced`, from `init`: the body gets
/// (x, rowInputs..., acc), where each row input has the reduced shape.
Value reduceRows(OpBuilder &b, Location loc, Value x, ArrayRef<bool> reduced,
                 Value init, ValueRange rowInputs, BodyFn fn) {
  int64_t rank = tensorType(x).getRank();
  Rows rows = rowsOf(b, loc, x, reduced);
  auto type = RankedTensorType::get(rows.shape, init.getType());
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(rank)};
  maps.append(rowInputs.size() + 1, rows.map);
  SmallVector<utils::IteratorType> iterators;
  for (bool r : reduced)
    iterators.push_back(r ? utils::IteratorType::reduction
                          : utils::IteratorType::parallel);
  SmallVector<Value> ins = {x};
  llvm::append_range(ins, rowInputs);
  return generic(b, loc, filled(b, loc, type, rows.sizes, init), ins, maps,
                 iterators, fn);
}

/// A tensor of `x`'s shape and element type `elem` whose every element is
/// `fn(x, extras..., out)`, each extra read through its map.
Value mapLike(OpBuilder &b, Location loc, Value x, Type elem, ValueRange extras,
              ArrayRef<AffineMap> extraMaps, BodyFn fn) {
  RankedTensorType xt = tensorType(x);
  auto type = xt.clone(elem);
  Value init = b.create<tensor::EmptyOp>(loc, type.getShape(), elem,
                                         dynamicDimsOf(b, loc, x));
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(xt.getRank())};
  llvm::append_range(maps, extraMaps);
  maps.push_back(maps.front());
  SmallVector<Value> ins = {x};
  llvm::append_range(ins, extras);
  SmallVector<utils::IteratorType> iterators(xt.getRank(),
                                             utils::IteratorType::parallel);
  return generic(b, loc, init, ins, maps, iterators, fn);
}

/// The number of elements in dims `dims` of `x`, as a scalar of `elem`.
Value countOf(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> dims,
              Type elem) {
  Value count = b.create<arith::ConstantIndexOp>(loc, 1);
  for (int64_t d : dims)
    count = b.create<arith::MulIOp>(loc, count, dimOf(b, loc, x, d));
  return convertScalar(
      b, loc, b.create<arith::IndexCastOp>(loc, b.getI64Type(), count), elem);
}

/// The per-dim flags of `rank` dims with `dims` set.
SmallVector<bool> dimFlags(int64_t rank, ArrayRef<int64_t> dims) {
  SmallVector<bool> flags(rank, false);
  for (int64_t d : dims)
    flags[d] = true;
  return flags;
}

/// An index constant.
Value indexConst(OpBuilder &b, Location loc, int64_t v) {
  return b.create<arith::ConstantIndexOp>(loc, v);
}

/// `v` as an index value: a constant for an attribute.
Value indexValue(OpBuilder &b, Location loc, OpFoldResult v) {
  if (auto attr = dyn_cast<Attribute>(v))
    return indexConst(b, loc, cast<IntegerAttr>(attr).getInt());
  return cast<Value>(v);
}

/// An index `i` (from a tensor of indices, any integer type) counted from
/// the end of a dim of size `n` when negative, as an index value.
Value normalizeIndex(OpBuilder &b, Location loc, Value i, Value n) {
  Value idx = b.create<arith::IndexCastOp>(loc, b.getIndexType(), i);
  Value neg = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, idx,
                                      indexConst(b, loc, 0));
  return b.create<arith::SelectOp>(loc, neg,
                                   b.create<arith::AddIOp>(loc, idx, n), idx);
}

/// The linalg.index of every dim of a rank-`rank` generic.
SmallVector<Value> loopIndices(OpBuilder &b, Location loc, int64_t rank) {
  SmallVector<Value> indices;
  for (int64_t i = 0; i < rank; ++i)
    indices.push_back(b.create<linalg::IndexOp>(loc, i));
  return indices;
}

/// A tensor of `type` computed element by element: the body gets the
/// loop indices and yields the element.
Value tabulate(OpBuilder &b, Location loc, RankedTensorType type,
               ValueRange sizes,
               function_ref<Value(OpBuilder &, Location, ValueRange)> element) {
  Value init = b.create<tensor::EmptyOp>(loc, type.getShape(),
                                         type.getElementType(), sizes);
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  return generic(b, loc, init, {}, {b.getMultiDimIdentityMap(type.getRank())},
                 iterators, [&](OpBuilder &nb, Location nl, ValueRange) {
                   return element(nb, nl, loopIndices(nb, nl, type.getRank()));
                 });
}

/// The output size of one window dim as an index value, as windowOutput
/// in GraphOps.cpp: (in + pads - dilation * (k - 1) - 1) / stride + 1,
/// rounded up with `ceilMode` unless the last window would start past the
/// input and its begin padding.
Value windowOutputSize(OpBuilder &b, Location loc, Value in, Value k,
                       int64_t stride, int64_t padBegin, int64_t padEnd,
                       int64_t dilation, bool ceilMode) {
  auto c = [&](int64_t v) { return indexConst(b, loc, v); };
  Value reach = b.create<arith::AddIOp>(
      loc,
      b.create<arith::MulIOp>(loc, b.create<arith::SubIOp>(loc, k, c(1)),
                              c(dilation)),
      c(1));
  Value span = b.create<arith::SubIOp>(
      loc, b.create<arith::AddIOp>(loc, in, c(padBegin + padEnd)), reach);
  if (ceilMode)
    span = b.create<arith::AddIOp>(loc, span, c(stride - 1));
  Value out = b.create<arith::AddIOp>(
      loc, b.create<arith::DivSIOp>(loc, span, c(stride)), c(1));
  if (!ceilMode)
    return out;
  Value lastStart = b.create<arith::MulIOp>(
      loc, b.create<arith::SubIOp>(loc, out, c(1)), c(stride));
  Value past =
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sge, lastStart,
                              b.create<arith::AddIOp>(loc, in, c(padBegin)));
  return b.create<arith::SelectOp>(
      loc, past, b.create<arith::SubIOp>(loc, out, c(1)), out);
}

/// The shape of `v` with a size-1 dim inserted at `at`, and its sizes.
std::pair<RankedTensorType, SmallVector<OpFoldResult>>
withUnitDim(OpBuilder &b, Location loc, Value v, int64_t at) {
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, v);
  sizes.insert(sizes.begin() + at, b.getIndexAttr(1));
  SmallVector<int64_t> shape(tensorType(v).getShape());
  shape.insert(shape.begin() + at, 1);
  return {tensorType(v).clone(shape), sizes};
}

class Lowering {
public:
  explicit Lowering(IRRewriter &rw) : rw(rw) {}

  /// Lowers `op` (the rewriter's insertion point is before it) to one
  /// value per result; failure when there is no lowering.
  FailureOr<SmallVector<Value>> lowerAll(Operation *op) {
    if (auto o = dyn_cast<TopKOp>(op))
      return topK(o);
    if (auto o = dyn_cast<DynamicTopKOp>(op))
      return dynamicTopK(o);
    if (op->getNumResults() != 1)
      return failure();
    FailureOr<Value> lowered = lower(op);
    if (failed(lowered))
      return failure();
    return SmallVector<Value>{*lowered};
  }

  /// Lowers single-result `op`; failure when there is no lowering.
  FailureOr<Value> lower(Operation *op) {
    Location loc = op->getLoc();
    if (isElementwise(op)) {
      auto type = cast<RankedTensorType>(op->getResult(0).getType());
      return elementwise(rw, loc, type, op->getOperands(),
                         [&](OpBuilder &b, Location l, ValueRange a) {
                           return elementwiseBody(op, b, l, a);
                         });
    }
    return llvm::TypeSwitch<Operation *, FailureOr<Value>>(op)
        .Case([&](ConstantOp c) -> FailureOr<Value> {
          return rw
              .create<arith::ConstantOp>(loc, cast<TypedAttr>(c.getValue()))
              .getResult();
        })
        .Case([&](FillLikeOp o) -> FailureOr<Value> {
          auto type = cast<RankedTensorType>(o.getType());
          auto sizes = dynamicSizes(rw, loc, type, o.getRef());
          if (failed(sizes))
            return failure();
          Value value = rw.create<arith::ConstantOp>(loc, o.getValue());
          return rw
              .create<linalg::FillOp>(loc, value,
                                      emptyOf(rw, loc, type, *sizes))
              .getResult(0);
        })
        .Case([&](IotaOp o) { return iota(o); })
        .Case([&](TransposeOp o) -> FailureOr<Value> {
          auto type = cast<RankedTensorType>(o.getType());
          SmallVector<Value> sizes;
          for (int64_t i = 0; i < type.getRank(); ++i)
            if (type.isDynamicDim(i))
              sizes.push_back(dimOf(rw, loc, o.getX(), o.getPerm()[i]));
          return rw
              .create<linalg::TransposeOp>(
                  loc, o.getX(), emptyOf(rw, loc, type, sizes), o.getPerm())
              .getResult()[0];
        })
        .Case([&](MatmulOp o) { return matmul(o); })
        .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp,
              ReduceProdOp>([&](auto o) -> FailureOr<Value> {
          return reduce(loc, reduceKind(o), o.getX(), o.getAxes(),
                        o.getKeepdims(), o.getType());
        })
        .Case<ReshapeOp, SqueezeOp, UnsqueezeOp, FlattenOp>(
            [&](auto o) { return reshape(o, o.getX()); })
        .Case([&](SoftmaxOp o) -> FailureOr<Value> {
          return softmax(loc, o.getX(), o.getAxis(), /*log=*/false);
        })
        .Case([&](LogSoftmaxOp o) -> FailureOr<Value> {
          return softmax(loc, o.getX(), o.getAxis(), /*log=*/true);
        })
        .Case([&](LayerNormOp o) -> FailureOr<Value> { return layerNorm(o); })
        .Case([&](BatchNormOp o) -> FailureOr<Value> { return batchNorm(o); })
        .Case([&](DropoutOp o) -> FailureOr<Value> { return dropout(o); })
        .Case([&](GlobalAvgPoolOp o) -> FailureOr<Value> {
          int64_t rank = o.getType().getRank();
          return reduce(loc, ReduceKind::Mean, o.getX(), dimRange(2, rank),
                        /*keepdims=*/true, o.getType());
        })
        .Case([&](MseLossOp o) { return mseLoss(o); })
        .Case([&](CrossEntropyOp o) -> FailureOr<Value> {
          return crossEntropy(o);
        })
        .Case<ArgMaxOp, ArgMinOp>([&](auto o) -> FailureOr<Value> {
          return argReduce(loc, o.getX(), o.getAxis(), isa<ArgMaxOp>(o),
                           o.getSelectLastIndex(), o.getKeepdims(),
                           o.getType());
        })
        .Case([&](ConcatOp o) -> FailureOr<Value> { return concat(o); })
        .Case([&](SliceOp o) -> FailureOr<Value> { return slice(o); })
        .Case([&](GatherOp o) -> FailureOr<Value> {
          return gather(loc, o.getData(), o.getIndices(), o.getAxis(),
                        o.getType());
        })
        .Case([&](EmbeddingOp o) -> FailureOr<Value> {
          return gather(loc, o.getTable(), o.getIds(), 0, o.getType());
        })
        .Case([&](GatherElementsOp o) -> FailureOr<Value> {
          return gatherElements(o);
        })
        .Case([&](PadOp o) -> FailureOr<Value> { return pad(o); })
        .Case([&](ScatterElementsOp o) -> FailureOr<Value> {
          return scatterElements(o);
        })
        .Case([&](ResizeOp o) -> FailureOr<Value> { return resize(o); })
        .Case([&](TriluOp o) -> FailureOr<Value> { return trilu(o); })
        .Case([&](CumSumOp o) -> FailureOr<Value> { return cumsum(o); })
        .Case([&](DynamicReshapeOp o) -> FailureOr<Value> {
          return dynamicReshape(o);
        })
        .Case([&](DynamicUnsqueezeOp o) -> FailureOr<Value> {
          return dynamicUnsqueeze(o);
        })
        .Case([&](DynamicSqueezeOp o) -> FailureOr<Value> {
          return dynamicSqueeze(o);
        })
        .Case([&](DynamicSliceOp o) -> FailureOr<Value> {
          return dynamicSlice(o);
        })
        .Case([&](DynamicReduceSumOp o) { return dynamicReduceSum(o); })
        .Case([&](DynamicCumSumOp o) -> FailureOr<Value> {
          return dynamicCumSum(o);
        })
        .Case(
            [&](DynamicFillOp o) -> FailureOr<Value> { return dynamicFill(o); })
        .Case([&](DynamicBroadcastOp o) -> FailureOr<Value> {
          return dynamicBroadcast(o);
        })
        .Case([&](RangeOp o) -> FailureOr<Value> { return range(o); })
        .Case(
            [&](DynamicTileOp o) -> FailureOr<Value> { return dynamicTile(o); })
        .Case([&](DynamicPadOp o) -> FailureOr<Value> { return dynamicPad(o); })
        .Case([&](DynamicResizeOp o) -> FailureOr<Value> {
          return dynamicResize(o);
        })
        .Case([&](ConvOp o) -> FailureOr<Value> { return conv(o); })
        .Case([&](MaxPoolOp o) -> FailureOr<Value> {
          return pool(loc, o.getX(), o.getKernel(), o.getStrides(),
                      o.getPadding(), o.getDilations(), o.getCeilMode(),
                      /*max=*/true, /*countIncludePad=*/false, o.getType());
        })
        .Case([&](AvgPoolOp o) -> FailureOr<Value> {
          SmallVector<int64_t> dilations(o.getKernel().size(), 1);
          return pool(loc, o.getX(), o.getKernel(), o.getStrides(),
                      o.getPadding(), dilations, o.getCeilMode(),
                      /*max=*/false, o.getCountIncludePad(), o.getType());
        })
        .Default([](Operation *) { return failure(); });
  }

private:
  FailureOr<Value> iota(IotaOp o) {
    Location loc = o.getLoc();
    auto type = cast<RankedTensorType>(o.getType());
    Type elem = type.getElementType();
    SmallVector<AffineMap> maps = {rw.getMultiDimIdentityMap(type.getRank())};
    SmallVector<utils::IteratorType> iterators(type.getRank(),
                                               utils::IteratorType::parallel);
    int64_t axis = o.getAxis();
    auto generic = rw.create<linalg::GenericOp>(
        loc, TypeRange{type}, ValueRange{},
        ValueRange{emptyOf(rw, loc, type, {})}, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange) {
          Value i = b.create<linalg::IndexOp>(l, axis);
          Value v = b.create<arith::IndexCastOp>(l, b.getI64Type(), i);
          b.create<linalg::YieldOp>(l, convertScalar(b, l, v, elem));
        });
    return generic.getResult(0);
  }

  /// NumPy matmul as one contraction: [batch..., m, k] x [batch..., k, n],
  /// batch dims broadcast, 1-D operands as a row / column vector.
  FailureOr<Value> matmul(MatmulOp o) {
    Location loc = o.getLoc();
    MLIRContext *ctx = o.getContext();
    auto type = cast<RankedTensorType>(o.getType());
    Value lhs = o.getLhs(), rhs = o.getRhs();
    RankedTensorType lt = tensorType(lhs), rt = tensorType(rhs);
    bool lhsVec = lt.getRank() == 1, rhsVec = rt.getRank() == 1;
    // Iteration space: batch..., [m], [n], k.
    int64_t batch = std::max<int64_t>(lt.getRank() - (lhsVec ? 1 : 2),
                                      rt.getRank() - (rhsVec ? 1 : 2));
    batch = std::max<int64_t>(batch, 0);
    int64_t m = lhsVec ? -1 : batch, n = rhsVec ? -1 : batch + !lhsVec;
    int64_t k = batch + !lhsVec + !rhsVec, loops = k + 1;
    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    auto c0 = getAffineConstantExpr(0, ctx);
    // An operand's batch dims, right-aligned against the result's.
    auto batchExprs = [&](RankedTensorType t, int64_t matrixDims,
                          SmallVectorImpl<AffineExpr> &exprs) {
      int64_t own = t.getRank() - matrixDims;
      for (int64_t j = 0; j < own; ++j) {
        int64_t i = batch - own + j;
        bool widened = t.getDimSize(j) == 1 && type.getDimSize(i) != 1;
        exprs.push_back(widened ? c0 : d(i));
      }
    };
    SmallVector<AffineExpr> le, re, oe;
    if (lhsVec) {
      le.push_back(d(k));
    } else {
      batchExprs(lt, 2, le);
      if (o.getTransposeLhs())
        le.append({d(k), d(m)});
      else
        le.append({d(m), d(k)});
    }
    if (rhsVec) {
      re.push_back(d(k));
    } else {
      batchExprs(rt, 2, re);
      if (o.getTransposeRhs())
        re.append({d(n), d(k)});
      else
        re.append({d(k), d(n)});
    }
    for (int64_t i = 0; i < batch; ++i)
      oe.push_back(d(i));
    if (!lhsVec)
      oe.push_back(d(m));
    if (!rhsVec)
      oe.push_back(d(n));
    SmallVector<AffineMap> maps = {AffineMap::get(loops, 0, le, ctx),
                                   AffineMap::get(loops, 0, re, ctx),
                                   AffineMap::get(loops, 0, oe, ctx)};
    SmallVector<utils::IteratorType> iterators(loops,
                                               utils::IteratorType::parallel);
    iterators[k] = utils::IteratorType::reduction;

    // The result's dynamic sizes: batch dims from either operand, m from
    // lhs, n from rhs.
    SmallVector<Value> sizes;
    for (int64_t i = 0; i < type.getRank(); ++i) {
      if (!type.isDynamicDim(i))
        continue;
      Value size;
      if (i < batch) {
        for (auto [v, t, md] : {std::make_tuple(lhs, lt, lhsVec ? 1 : 2),
                                std::make_tuple(rhs, rt, rhsVec ? 1 : 2)}) {
          int64_t j = i - (batch - (t.getRank() - md));
          if (j >= 0 && j < t.getRank() - md && t.isDynamicDim(j)) {
            size = rw.create<tensor::DimOp>(loc, v, j);
            break;
          }
        }
      } else if (i == m) {
        int64_t j = lt.getRank() - (o.getTransposeLhs() ? 1 : 2);
        size = dimOf(rw, loc, lhs, j);
      } else {
        int64_t j = rt.getRank() - (o.getTransposeRhs() ? 2 : 1);
        size = dimOf(rw, loc, rhs, j);
      }
      if (!size)
        return failure();
      sizes.push_back(size);
    }
    Type elem = type.getElementType();
    Value zero = scalarConst(rw, loc, elem, 0);
    Value init =
        rw.create<linalg::FillOp>(loc, zero, emptyOf(rw, loc, type, sizes))
            .getResult(0);
    bool fp = isFloat(elem);
    auto generic = rw.create<linalg::GenericOp>(
        loc, TypeRange{type}, ValueRange{lhs, rhs}, ValueRange{init}, maps,
        iterators, [&](OpBuilder &b, Location l, ValueRange a) {
          Value p = fp ? (Value)b.create<arith::MulFOp>(l, a[0], a[1])
                       : b.create<arith::MulIOp>(l, a[0], a[1]);
          Value s = fp ? (Value)b.create<arith::AddFOp>(l, a[2], p)
                       : b.create<arith::AddIOp>(l, a[2], p);
          b.create<linalg::YieldOp>(l, s);
        });
    return generic.getResult(0);
  }

  /// Softmax or log-softmax along `axis`, stable: the row max m, the sum
  /// s of exp(x - m), then exp(x - m) / s or x - m - log(s).
  Value softmax(Location loc, Value x, int64_t axis, bool log) {
    RankedTensorType xt = tensorType(x);
    Type elem = xt.getElementType();
    SmallVector<bool> reduced = dimFlags(xt.getRank(), {axis});
    Value m = reduceRows(rw, loc, x, reduced,
                         extremeConst(rw, loc, elem, /*max=*/false), {},
                         [](OpBuilder &b, Location l, ValueRange a) {
                           return maxScalar(b, l, a[1], a[0]);
                         });
    Value s = reduceRows(rw, loc, x, reduced, scalarConst(rw, loc, elem, 0), m,
                         [](OpBuilder &b, Location l, ValueRange a) -> Value {
                           Value e = b.create<math::ExpOp>(
                               l, b.create<arith::SubFOp>(l, a[0], a[1]));
                           return b.create<arith::AddFOp>(l, a[2], e);
                         });
    AffineMap rows = rowMap(rw.getContext(), reduced);
    return mapLike(
        rw, loc, x, elem, {m, s}, {rows, rows},
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value d = b.create<arith::SubFOp>(l, a[0], a[1]);
          if (log)
            return b.create<arith::SubFOp>(l, d,
                                           b.create<math::LogOp>(l, a[2]));
          return b.create<arith::DivFOp>(l, b.create<math::ExpOp>(l, d), a[2]);
        });
  }

  /// Mean over dims [axis, rank), then the biased variance as the mean of
  /// (x - mean)^2 (two passes, no cancellation), then
  /// (x - mean) * rsqrt(var + eps) * scale + bias.
  Value layerNorm(LayerNormOp o) {
    Location loc = o.getLoc();
    Value x = o.getX();
    int64_t rank = tensorType(x).getRank(), axis = o.getAxis();
    Type elem = tensorType(x).getElementType();
    SmallVector<int64_t> dims = dimRange(axis, rank);
    SmallVector<bool> reduced = dimFlags(rank, dims);
    Value n = countOf(rw, loc, x, dims, elem);
    Value zero = scalarConst(rw, loc, elem, 0);
    Value sum = reduceRows(rw, loc, x, reduced, zero, {},
                           [](OpBuilder &b, Location l, ValueRange a) {
                             return b.create<arith::AddFOp>(l, a[1], a[0]);
                           });
    Value mean = mapLike(rw, loc, sum, elem, {}, {},
                         [&](OpBuilder &b, Location l, ValueRange a) {
                           return b.create<arith::DivFOp>(l, a[0], n);
                         });
    Value sq = reduceRows(rw, loc, x, reduced, zero, mean,
                          [](OpBuilder &b, Location l, ValueRange a) -> Value {
                            Value d = b.create<arith::SubFOp>(l, a[0], a[1]);
                            return b.create<arith::AddFOp>(
                                l, a[2], b.create<arith::MulFOp>(l, d, d));
                          });
    AffineMap rows = rowMap(rw.getContext(), reduced);
    AffineMap affine = projection(rw.getContext(), rank, dims);
    SmallVector<Value> extras = {mean, sq, o.getScale()};
    SmallVector<AffineMap> maps = {rows, rows, affine};
    if (Value bias = o.getBias()) {
      extras.push_back(bias);
      maps.push_back(affine);
    }
    Value eps = scalarConst(rw, loc, elem, o.getEpsilon().convertToDouble());
    bool hasBias = o.getBias() != nullptr;
    return mapLike(rw, loc, x, elem, extras, maps,
                   [&](OpBuilder &b, Location l, ValueRange a) {
                     Value var = b.create<arith::DivFOp>(l, a[2], n);
                     Value inv = rsqrtScalar(
                         b, l, b.create<arith::AddFOp>(l, var, eps));
                     Value y = b.create<arith::MulFOp>(
                         l, b.create<arith::SubFOp>(l, a[0], a[1]), inv);
                     y = b.create<arith::MulFOp>(l, y, a[3]);
                     return hasBias ? b.create<arith::AddFOp>(l, y, a[4]) : y;
                   });
  }

  /// (x - mean) * rsqrt(var + eps) * scale + bias, the statistics read
  /// per channel (dim 1).
  Value batchNorm(BatchNormOp o) {
    Location loc = o.getLoc();
    Value x = o.getX();
    int64_t rank = tensorType(x).getRank();
    Type elem = tensorType(x).getElementType();
    AffineMap channel = projection(rw.getContext(), rank, {1});
    Value eps = scalarConst(rw, loc, elem, o.getEpsilon().convertToDouble());
    return mapLike(
        rw, loc, x, elem,
        {o.getScale(), o.getBias(), o.getMean(), o.getVariance()},
        {channel, channel, channel, channel},
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value inv = rsqrtScalar(b, l, b.create<arith::AddFOp>(l, a[4], eps));
          Value y = b.create<arith::MulFOp>(
              l, b.create<arith::SubFOp>(l, a[0], a[3]), inv);
          return b.create<arith::AddFOp>(l, b.create<arith::MulFOp>(l, y, a[1]),
                                         a[2]);
        });
  }

  /// The identity unless `training`. In training, the element at row-major
  /// index i is kept when the top 24 bits of the (i+1)-th SplitMix64 draw
  /// from `seed`, as a fraction of 2^24, are >= ratio; kept elements are
  /// scaled by 1 / (1 - ratio), the others are 0. The mask depends on the
  /// seed and the index only, never on x.
  Value dropout(DropoutOp o) {
    Location loc = o.getLoc();
    Value x = o.getX();
    double ratio = o.getRatio().convertToDouble();
    if (!o.getTraining() || ratio == 0)
      return x;
    RankedTensorType xt = tensorType(x);
    Type elem = xt.getElementType();
    SmallVector<Value> dims;
    for (int64_t i = 0; i < xt.getRank(); ++i)
      dims.push_back(dimOf(rw, loc, x, i));
    auto i64 = [&](OpBuilder &b, Location l, uint64_t v) -> Value {
      return b.create<arith::ConstantOp>(l, b.getI64IntegerAttr(v));
    };
    auto threshold = (uint64_t)std::ceil(ratio * (1 << 24));
    Value scale = scalarConst(rw, loc, elem, 1 / (1 - ratio));
    return mapLike(
        rw, loc, x, elem, {}, {},
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value index = b.create<arith::ConstantIndexOp>(l, 0);
          for (auto [i, d] : llvm::enumerate(dims))
            index =
                b.create<arith::AddIOp>(l, b.create<arith::MulIOp>(l, index, d),
                                        b.create<linalg::IndexOp>(l, i));
          Value n = b.create<arith::IndexCastOp>(l, b.getI64Type(), index);
          n = b.create<arith::AddIOp>(l, n, i64(b, l, 1));
          Value z = b.create<arith::AddIOp>(
              l, i64(b, l, o.getSeed()),
              b.create<arith::MulIOp>(l, n, i64(b, l, 0x9E3779B97F4A7C15ull)));
          for (auto [shift, mul] :
               {std::pair<uint64_t, uint64_t>{30, 0xBF58476D1CE4E5B9ull},
                {27, 0x94D049BB133111EBull},
                {31, 0}}) {
            z = b.create<arith::XOrIOp>(
                l, z, b.create<arith::ShRUIOp>(l, z, i64(b, l, shift)));
            if (mul)
              z = b.create<arith::MulIOp>(l, z, i64(b, l, mul));
          }
          Value bits = b.create<arith::ShRUIOp>(l, z, i64(b, l, 40));
          Value keep = b.create<arith::CmpIOp>(l, arith::CmpIPredicate::uge,
                                               bits, i64(b, l, threshold));
          return b.create<arith::SelectOp>(
              l, keep, b.create<arith::MulFOp>(l, a[0], scale),
              scalarConst(b, l, elem, 0));
        });
  }

  /// (pred - target)^2, then summed or averaged over every dim.
  FailureOr<Value> mseLoss(MseLossOp o) {
    Location loc = o.getLoc();
    RankedTensorType pt = tensorType(o.getPred()),
                     tt = tensorType(o.getTarget());
    SmallVector<int64_t> shape;
    for (auto [p, t] : llvm::zip(pt.getShape(), tt.getShape()))
      shape.push_back(ShapedType::isDynamic(p) ? t : p);
    auto sqType = pt.clone(shape);
    auto sq = elementwise(rw, loc, sqType, {o.getPred(), o.getTarget()},
                          [](OpBuilder &b, Location l, ValueRange a) -> Value {
                            Value d = b.create<arith::SubFOp>(l, a[0], a[1]);
                            return b.create<arith::MulFOp>(l, d, d);
                          });
    if (failed(sq) || o.getReduction() == Reduction::none)
      return sq;
    ReduceKind kind =
        o.getReduction() == Reduction::sum ? ReduceKind::Sum : ReduceKind::Mean;
    return reduce(loc, kind, *sq, dimRange(0, pt.getRank()),
                  /*keepdims=*/false, o.getType());
  }

  /// Per row, log(sum(exp(x - m))) + m - x[label] (0 for an ignored row),
  /// then the sum, or the mean over the rows not ignored.
  Value crossEntropy(CrossEntropyOp o) {
    Location loc = o.getLoc();
    Value logits = o.getLogits(), labels = o.getLabels();
    int64_t rank = tensorType(logits).getRank();
    Type elem = tensorType(logits).getElementType();
    SmallVector<bool> reduced = dimFlags(rank, {rank - 1});
    Value m = reduceRows(rw, loc, logits, reduced,
                         extremeConst(rw, loc, elem, /*max=*/false), {},
                         [](OpBuilder &b, Location l, ValueRange a) {
                           return maxScalar(b, l, a[1], a[0]);
                         });
    Value s =
        reduceRows(rw, loc, logits, reduced, scalarConst(rw, loc, elem, 0), m,
                   [](OpBuilder &b, Location l, ValueRange a) -> Value {
                     Value e = b.create<math::ExpOp>(
                         l, b.create<arith::SubFOp>(l, a[0], a[1]));
                     return b.create<arith::AddFOp>(l, a[2], e);
                   });
    std::optional<int64_t> ignore = o.getIgnoreIndex();
    Type labelElem = tensorType(labels).getElementType();
    // Whether a row counts, and its label (0 when it does not, so that
    // the read stays in bounds).
    auto counted = [&](OpBuilder &b, Location l, Value label) -> Value {
      return b.create<arith::CmpIOp>(l, arith::CmpIPredicate::ne, label,
                                     scalarConst(b, l, labelElem, *ignore));
    };
    AffineMap id = rw.getMultiDimIdentityMap(rank - 1);
    Value loss = mapLike(
        rw, loc, labels, elem, {m, s}, {id, id},
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value label = a[0];
          Value keep;
          if (ignore) {
            keep = counted(b, l, label);
            label = b.create<arith::SelectOp>(l, keep, label,
                                              scalarConst(b, l, labelElem, 0));
          }
          SmallVector<Value> at;
          for (int64_t i = 0; i < rank - 1; ++i)
            at.push_back(b.create<linalg::IndexOp>(l, i));
          at.push_back(
              b.create<arith::IndexCastOp>(l, b.getIndexType(), label));
          Value picked = b.create<tensor::ExtractOp>(l, logits, at);
          Value lse =
              b.create<arith::AddFOp>(l, b.create<math::LogOp>(l, a[2]), a[1]);
          Value r = b.create<arith::SubFOp>(l, lse, picked);
          if (ignore)
            r = b.create<arith::SelectOp>(l, keep, r,
                                          scalarConst(b, l, elem, 0));
          return r;
        });
    if (o.getReduction() == Reduction::none)
      return loss;
    SmallVector<int64_t> all = dimRange(0, rank - 1);
    if (o.getReduction() == Reduction::sum || !ignore)
      return reduce(loc,
                    o.getReduction() == Reduction::sum ? ReduceKind::Sum
                                                       : ReduceKind::Mean,
                    loss, all, /*keepdims=*/false, o.getType());
    Value total = reduce(loc, ReduceKind::Sum, loss, all, false, o.getType());
    Value weights =
        mapLike(rw, loc, labels, elem, {}, {},
                [&](OpBuilder &b, Location l, ValueRange a) {
                  return convertScalar(b, l, counted(b, l, a[0]), elem);
                });
    Value count =
        reduce(loc, ReduceKind::Sum, weights, all, false, o.getType());
    return mapLike(rw, loc, total, elem, count, rw.getMultiDimIdentityMap(0),
                   [](OpBuilder &b, Location l, ValueRange a) {
                     return b.create<arith::DivFOp>(l, a[0], a[1]);
                   });
  }

  /// The index of the first (or last) extreme element along `axis`: one
  /// reduction carrying the best value and its index. NaN beats every
  /// number, as in NumPy.
  Value argReduce(Location loc, Value x, int64_t axis, bool isMax, bool last,
                  bool keepdims, RankedTensorType type) {
    RankedTensorType xt = tensorType(x);
    Type elem = xt.getElementType(), indexElem = type.getElementType();
    int64_t rank = xt.getRank();
    SmallVector<bool> reduced = dimFlags(rank, {axis});
    Rows rows = rowsOf(rw, loc, x, reduced);
    Value values =
        filled(rw, loc, RankedTensorType::get(rows.shape, elem), rows.sizes,
               extremeConst(rw, loc, elem, /*max=*/!isMax));
    Value indices =
        filled(rw, loc, RankedTensorType::get(rows.shape, indexElem),
               rows.sizes, scalarConst(rw, loc, indexElem, 0));
    SmallVector<AffineMap> maps = {rw.getMultiDimIdentityMap(rank), rows.map,
                                   rows.map};
    SmallVector<utils::IteratorType> iterators;
    for (bool r : reduced)
      iterators.push_back(r ? utils::IteratorType::reduction
                            : utils::IteratorType::parallel);
    CompareDirection dir =
        isMax ? (last ? CompareDirection::ge : CompareDirection::gt)
              : (last ? CompareDirection::le : CompareDirection::lt);
    auto generic = rw.create<linalg::GenericOp>(
        loc, TypeRange{values.getType(), indices.getType()}, ValueRange{x},
        ValueRange{values, indices}, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value take = compareScalar(b, l, dir, a[0], a[1]);
          if (isFloat(elem)) {
            auto isNan = [&](Value v) {
              return b.create<arith::CmpFOp>(l, arith::CmpFPredicate::UNO, v,
                                             v);
            };
            Value nan = isNan(a[0]);
            if (!last)
              nan = b.create<arith::AndIOp>(
                  l, nan,
                  b.create<arith::XOrIOp>(
                      l, isNan(a[1]),
                      b.create<arith::ConstantOp>(l, b.getBoolAttr(true))));
            take = b.create<arith::OrIOp>(l, take, nan);
          }
          Value i = convertScalar(
              b, l,
              b.create<arith::IndexCastOp>(l, b.getI64Type(),
                                           b.create<linalg::IndexOp>(l, axis)),
              indexElem);
          b.create<linalg::YieldOp>(
              l, ValueRange{b.create<arith::SelectOp>(l, take, a[0], a[1]),
                            b.create<arith::SelectOp>(l, take, i, a[2])});
        });
    Value r = generic.getResult(1);
    if (!keepdims)
      return r;
    return reshapeTo(loc, r, type, [&](int64_t i) {
      return rw.create<tensor::DimOp>(loc, x, i).getResult();
    });
  }

  /// tensor.insert_slice of each input at its running offset along the
  /// axis.
  Value concat(ConcatOp o) {
    Location loc = o.getLoc();
    RankedTensorType type = o.getType();
    int64_t axis = o.getAxis();
    SmallVector<Value> sizes;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (!type.isDynamicDim(d))
        continue;
      if (d != axis) {
        // Dynamic in the result: dynamic in every input.
        sizes.push_back(rw.create<tensor::DimOp>(loc, o.getInputs()[0], d));
        continue;
      }
      Value total = indexConst(rw, loc, 0);
      for (Value in : o.getInputs())
        total = rw.create<arith::AddIOp>(loc, total, dimOf(rw, loc, in, d));
      sizes.push_back(total);
    }
    Value result = emptyOf(rw, loc, type, sizes);
    OpFoldResult offset = rw.getIndexAttr(0);
    int64_t staticOffset = 0;
    for (Value in : o.getInputs()) {
      SmallVector<OpFoldResult> offsets(type.getRank(), rw.getIndexAttr(0));
      offsets[axis] = offset;
      SmallVector<OpFoldResult> inSizes = tensor::getMixedSizes(rw, loc, in);
      SmallVector<OpFoldResult> strides(type.getRank(), rw.getIndexAttr(1));
      result = rw.create<tensor::InsertSliceOp>(loc, in, result, offsets,
                                                inSizes, strides);
      // The next offset: a constant while every size so far is static.
      int64_t n = tensorType(in).getDimSize(axis);
      if (isa<Attribute>(offset) && !ShapedType::isDynamic(n)) {
        staticOffset += n;
        offset = rw.getIndexAttr(staticOffset);
      } else {
        offset = rw.create<arith::AddIOp>(loc, indexValue(rw, loc, offset),
                                          dimOf(rw, loc, in, axis))
                     .getResult();
      }
    }
    return result;
  }

  /// One tensor.extract_slice with positive strides; a dim with a negative
  /// step takes the same elements from its lowest one up and is then
  /// reversed. Starts and ends of dynamic dims are normalized and clamped
  /// at run time as in the op's description.
  Value slice(SliceOp o) {
    Location loc = o.getLoc();
    Value x = o.getX();
    RankedTensorType xt = tensorType(x), type = o.getType();
    int64_t rank = xt.getRank();
    SmallVector<OpFoldResult> offsets, sizes, strides;
    SmallVector<bool> reversed;
    auto c = [&](int64_t v) { return indexConst(rw, loc, v); };
    auto select = [&](arith::CmpIPredicate p, Value a, Value b, Value t,
                      Value f) -> Value {
      return rw.create<arith::SelectOp>(
          loc, rw.create<arith::CmpIOp>(loc, p, a, b), t, f);
    };
    auto clamp = [&](Value v, Value lo, Value hi) -> Value {
      return rw.create<arith::MinSIOp>(
          loc, rw.create<arith::MaxSIOp>(loc, v, lo), hi);
    };
    for (int64_t d = 0; d < rank; ++d) {
      int64_t start = o.getStarts()[d], end = o.getEnds()[d],
              step = o.getSteps()[d], k = std::abs(step);
      reversed.push_back(step < 0);
      strides.push_back(rw.getIndexAttr(k));
      if (!xt.isDynamicDim(d)) {
        // The static case, as sliceLength in GraphOps.cpp.
        int64_t n = xt.getDimSize(d), len = type.getDimSize(d);
        int64_t s = start < 0 ? start + n : start;
        s = step > 0 ? std::clamp<int64_t>(s, 0, n)
                     : std::clamp<int64_t>(s, 0, std::max<int64_t>(n - 1, 0));
        int64_t first = step > 0 || len == 0 ? s : s - (len - 1) * k;
        offsets.push_back(rw.getIndexAttr(len == 0 ? 0 : first));
        sizes.push_back(rw.getIndexAttr(len));
        continue;
      }
      Value n = rw.create<tensor::DimOp>(loc, x, d);
      Value zero = c(0), one = c(1);
      auto normalized = [&](int64_t v) {
        return v < 0 ? (Value)rw.create<arith::AddIOp>(loc, c(v), n) : c(v);
      };
      // The elements taken from `from` toward `to` (excluded):
      // (|to - from| - 1) / k + 1 when from is before to, else 0.
      auto count = [&](Value lo, Value hi) -> Value {
        Value span = rw.create<arith::SubIOp>(loc, hi, lo);
        Value len = rw.create<arith::AddIOp>(
            loc,
            rw.create<arith::DivSIOp>(
                loc, rw.create<arith::SubIOp>(loc, span, one), c(k)),
            one);
        return select(arith::CmpIPredicate::sgt, hi, lo, len, zero);
      };
      Value s = normalized(start), e = normalized(end), len, first;
      if (step > 0) {
        s = clamp(s, zero, n);
        e = clamp(e, zero, n);
        len = count(s, e);
        first = s;
      } else {
        Value last = rw.create<arith::SubIOp>(loc, n, one);
        s = clamp(s, zero, last);
        e = clamp(e, c(-1), last);
        len = count(e, s);
        // The lowest element taken: s - (len - 1) * k, 0 when none is.
        first = rw.create<arith::SubIOp>(
            loc, s,
            rw.create<arith::MulIOp>(
                loc, rw.create<arith::SubIOp>(loc, len, one), c(k)));
        first = rw.create<arith::MaxSIOp>(loc, first, zero);
      }
      offsets.push_back(first);
      sizes.push_back(len);
    }
    Value r = rw.create<tensor::ExtractSliceOp>(loc, type, x, offsets, sizes,
                                                strides);
    if (!llvm::is_contained(reversed, true))
      return r;
    SmallVector<Value> dims;
    for (int64_t d = 0; d < rank; ++d)
      dims.push_back(dimOf(rw, loc, r, d));
    return tabulate(
        rw, loc, type, dynamicDimsOf(rw, loc, r),
        [&](OpBuilder &b, Location l, ValueRange i) -> Value {
          SmallVector<Value> at(i);
          for (int64_t d = 0; d < rank; ++d)
            if (reversed[d])
              at[d] = b.create<arith::SubIOp>(
                  l, b.create<arith::SubIOp>(l, dims[d], indexConst(b, l, 1)),
                  i[d]);
          return b.create<tensor::ExtractOp>(l, r, at);
        });
  }

  /// ONNX Gather: a generic over the result that reads the index (negative
  /// ones counted from the end) and extracts the element of `data`.
  Value gather(Location loc, Value data, Value indices, int64_t axis,
               RankedTensorType type) {
    int64_t ri = tensorType(indices).getRank();
    int64_t rank = type.getRank();
    SmallVector<Value> sizes;
    for (int64_t d = 0; d < rank; ++d) {
      if (!type.isDynamicDim(d))
        continue;
      if (d < axis)
        sizes.push_back(rw.create<tensor::DimOp>(loc, data, d));
      else if (d < axis + ri)
        sizes.push_back(rw.create<tensor::DimOp>(loc, indices, d - axis));
      else
        sizes.push_back(rw.create<tensor::DimOp>(loc, data, d - ri + 1));
    }
    Value n = dimOf(rw, loc, data, axis);
    Value init = emptyOf(rw, loc, type, sizes);
    SmallVector<AffineMap> maps = {
        projection(rw.getContext(), rank, dimRange(axis, axis + ri)),
        rw.getMultiDimIdentityMap(rank)};
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    return generic(rw, loc, init, indices, maps, iterators,
                   [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                     SmallVector<Value> i = loopIndices(b, l, rank);
                     SmallVector<Value> at(i.begin(), i.begin() + axis);
                     at.push_back(normalizeIndex(b, l, a[0], n));
                     at.append(i.begin() + axis + ri, i.end());
                     return b.create<tensor::ExtractOp>(l, data, at);
                   });
  }

  /// ONNX GatherElements: the element of `data` at the loop's position
  /// with the axis coordinate replaced by the index.
  Value gatherElements(GatherElementsOp o) {
    Location loc = o.getLoc();
    Value data = o.getData();
    int64_t axis = o.getAxis();
    Value n = dimOf(rw, loc, data, axis);
    return mapLike(rw, loc, o.getIndices(), o.getType().getElementType(), {},
                   {}, [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                     SmallVector<Value> at =
                         loopIndices(b, l, o.getType().getRank());
                     at[axis] = normalizeIndex(b, l, a[0], n);
                     return b.create<tensor::ExtractOp>(l, data, at);
                   });
  }

  /// constant: tensor.pad. reflect and edge: a generic that reads each
  /// element from the input at the mirrored or clamped position.
  Value pad(PadOp o) {
    Location loc = o.getLoc();
    Value x = o.getX();
    RankedTensorType type = o.getType();
    Type elem = type.getElementType();
    int64_t rank = type.getRank();
    ArrayRef<int64_t> pads = o.getPads();
    if (o.getMode() == PadMode::constant) {
      SmallVector<OpFoldResult> low, high;
      for (int64_t d = 0; d < rank; ++d) {
        low.push_back(rw.getIndexAttr(pads[d]));
        high.push_back(rw.getIndexAttr(pads[rank + d]));
      }
      double v = o.getValue().convertToDouble();
      Value value = elem.isInteger(1) ? scalarConst(rw, loc, elem, v != 0)
                                      : scalarConst(rw, loc, elem, v);
      return rw.create<tensor::PadOp>(loc, type, x, low, high, value);
    }
    SmallVector<Value> sizes, dims;
    for (int64_t d = 0; d < rank; ++d) {
      dims.push_back(dimOf(rw, loc, x, d));
      if (type.isDynamicDim(d))
        sizes.push_back(rw.create<arith::AddIOp>(
            loc, dims[d], indexConst(rw, loc, pads[d] + pads[rank + d])));
    }
    bool reflect = o.getMode() == PadMode::reflect;
    return tabulate(rw, loc, type, sizes,
                    [&](OpBuilder &b, Location l, ValueRange i) -> Value {
                      SmallVector<Value> at;
                      for (int64_t d = 0; d < rank; ++d) {
                        Value zero = indexConst(b, l, 0);
                        Value last = b.create<arith::SubIOp>(
                            l, dims[d], indexConst(b, l, 1));
                        Value p = b.create<arith::SubIOp>(
                            l, i[d], indexConst(b, l, pads[d]));
                        if (reflect) {
                          // |p|, then mirrored at the last element: last -
                          // |last - p|.
                          Value neg = b.create<arith::SubIOp>(l, zero, p);
                          p = b.create<arith::MaxSIOp>(l, p, neg);
                          Value over = b.create<arith::SubIOp>(l, last, p);
                          Value abs = b.create<arith::MaxSIOp>(
                              l, over, b.create<arith::SubIOp>(l, zero, over));
                          p = b.create<arith::SubIOp>(l, last, abs);
                        } else {
                          p = b.create<arith::MinSIOp>(
                              l, b.create<arith::MaxSIOp>(l, p, zero), last);
                        }
                        at.push_back(p);
                      }
                      return b.create<tensor::ExtractOp>(l, x, at);
                    });
  }

  /// Keeps x where the column minus the row is <= k (lower) or >= k
  /// (upper), else 0.
  Value trilu(TriluOp o) {
    Location loc = o.getLoc();
    Value x = o.getX();
    int64_t rank = o.getType().getRank();
    Type elem = o.getType().getElementType();
    return mapLike(
        rw, loc, x, elem, {}, {},
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value diff =
              b.create<arith::SubIOp>(l, b.create<linalg::IndexOp>(l, rank - 1),
                                      b.create<linalg::IndexOp>(l, rank - 2));
          Value keep =
              b.create<arith::CmpIOp>(l,
                                      o.getUpper() ? arith::CmpIPredicate::sge
                                                   : arith::CmpIPredicate::sle,
                                      diff, indexConst(b, l, o.getK()));
          return b.create<arith::SelectOp>(l, keep, a[0],
                                           scalarConst(b, l, elem, 0));
        });
  }

  /// y[i] = sum of x[j] over the j that i takes in (j <= i; j < i when
  /// exclusive; mirrored when reverse): one generic with an extra reduction
  /// dim j along the axis. Quadratic in the axis length; fine for the
  /// sequence lengths cumsum sees (position ids, masks).
  Value cumsum(CumSumOp o) {
    return cumsumAlong(o.getLoc(), o.getX(), o.getType(), o.getAxis(),
                       o.getExclusive(), o.getReverse());
  }
  Value cumsumAlong(Location loc, Value x, RankedTensorType type, int64_t axis,
                    bool exclusive, bool reverse) {
    MLIRContext *ctx = rw.getContext();
    Type elem = type.getElementType();
    int64_t rank = type.getRank();
    SmallVector<AffineExpr> in;
    for (int64_t d = 0; d < rank; ++d)
      in.push_back(getAffineDimExpr(d == axis ? rank : d, ctx));
    SmallVector<AffineMap> maps = {
        AffineMap::get(rank + 1, 0, in, ctx),
        projection(ctx, rank + 1, dimRange(0, rank))};
    SmallVector<utils::IteratorType> iterators(rank + 1,
                                               utils::IteratorType::parallel);
    iterators[rank] = utils::IteratorType::reduction;
    Value init = filled(rw, loc, type, dynamicDimsOf(rw, loc, x),
                        scalarConst(rw, loc, elem, 0));
    arith::CmpIPredicate p = reverse ? (exclusive ? arith::CmpIPredicate::ugt
                                                  : arith::CmpIPredicate::uge)
                                     : (exclusive ? arith::CmpIPredicate::ult
                                                  : arith::CmpIPredicate::ule);
    return generic(rw, loc, init, x, maps, iterators,
                   [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                     Value taken = b.create<arith::CmpIOp>(
                         l, p, b.create<linalg::IndexOp>(l, rank),
                         b.create<linalg::IndexOp>(l, axis));
                     Value sum = addScalar(b, l, a[1], a[0]);
                     return b.create<arith::SelectOp>(l, taken, sum, a[1]);
                   });
  }

  /// Convolution with upstream's named ops on NCHW: a 1-D conv is a 2-D
  /// one over a unit height; groups split the channels into a G dim for
  /// linalg.conv_2d_ngchw_gfchw. Pads are a zero tensor.pad; the bias, when
  /// there is one, is broadcast into the accumulator.
  FailureOr<Value> conv(ConvOp o) {
    Location loc = o.getLoc();
    Value input = o.getInput(), filter = o.getFilter();
    RankedTensorType type = o.getType();
    Type elem = type.getElementType();
    bool oneD = type.getRank() == 3;
    SmallVector<int64_t> strides(o.getStrides()), dilations(o.getDilations()),
        padding(o.getPadding());
    SmallVector<ReassociationIndices> unitH = {{0}, {1}, {2, 3}};
    if (oneD) {
      strides.insert(strides.begin(), 1);
      dilations.insert(dilations.begin(), 1);
      padding = {0, padding[0], 0, padding[1]};
      for (Value *v : {&input, &filter}) {
        auto [t, sizes] = withUnitDim(rw, loc, *v, 2);
        *v = rw.create<tensor::ExpandShapeOp>(loc, t, *v, unitH, sizes);
      }
    }
    if (llvm::any_of(padding, [](int64_t p) { return p != 0; })) {
      SmallVector<OpFoldResult> low(2, rw.getIndexAttr(0)), high = low;
      SmallVector<int64_t> shape(tensorType(input).getShape());
      for (int64_t i = 0; i < 2; ++i) {
        low.push_back(rw.getIndexAttr(padding[i]));
        high.push_back(rw.getIndexAttr(padding[2 + i]));
        if (!ShapedType::isDynamic(shape[2 + i]))
          shape[2 + i] += padding[i] + padding[2 + i];
      }
      input =
          rw.create<tensor::PadOp>(loc, tensorType(input).clone(shape), input,
                                   low, high, scalarConst(rw, loc, elem, 0));
    }
    // The 2-D result: [N, O, Ho, Wo].
    SmallVector<int64_t> shape(type.getShape());
    if (oneD)
      shape.insert(shape.begin() + 2, 1);
    auto outType = type.clone(shape);
    SmallVector<Value> sizes;
    for (int64_t d = 0; d < 4; ++d) {
      if (!outType.isDynamicDim(d))
        continue;
      if (d < 2) {
        // N from the input, O from the filter.
        sizes.push_back(
            rw.create<tensor::DimOp>(loc, d == 0 ? input : filter, 0));
        continue;
      }
      // Over the padded input, so without pads here.
      sizes.push_back(windowOutputSize(
          rw, loc, dimOf(rw, loc, input, d), dimOf(rw, loc, filter, d),
          strides[d - 2], 0, 0, dilations[d - 2], /*ceilMode=*/false));
    }
    Value init;
    if (Value bias = o.getBias())
      init = generic(
          rw, loc, emptyOf(rw, loc, outType, sizes), bias,
          {projection(rw.getContext(), 4, {1}), rw.getMultiDimIdentityMap(4)},
          SmallVector<utils::IteratorType>(4, utils::IteratorType::parallel),
          [](OpBuilder &, Location, ValueRange a) { return a[0]; });
    else
      init = filled(rw, loc, outType, sizes, scalarConst(rw, loc, elem, 0));
    SmallVector<NamedAttribute> attrs = {
        rw.getNamedAttr("strides", rw.getI64TensorAttr(strides)),
        rw.getNamedAttr("dilations", rw.getI64TensorAttr(dilations))};
    Value result;
    int64_t groups = o.getGroups();
    if (groups == 1) {
      result = rw.create<linalg::Conv2DNchwFchwOp>(loc, TypeRange{outType},
                                                   ValueRange{input, filter},
                                                   ValueRange{init}, attrs)
                   .getResult(0);
    } else {
      // [N, C, H, W] -> [N, G, C/G, H, W]; [O, C/G, kh, kw] ->
      // [G, O/G, C/G, kh, kw]; the accumulator [N, G, O/G, Ho, Wo].
      auto split = [&](Value v, int64_t at) {
        SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rw, loc, v);
        SmallVector<int64_t> shape(tensorType(v).getShape());
        int64_t whole = shape[at];
        shape[at] = groups;
        shape.insert(shape.begin() + at + 1,
                     ShapedType::isDynamic(whole) ? whole : whole / groups);
        OpFoldResult part =
            ShapedType::isDynamic(whole)
                ? OpFoldResult(
                      rw.create<arith::DivUIOp>(loc, cast<Value>(sizes[at]),
                                                indexConst(rw, loc, groups))
                          .getResult())
                : rw.getIndexAttr(whole / groups);
        sizes[at] = rw.getIndexAttr(groups);
        sizes.insert(sizes.begin() + at + 1, part);
        SmallVector<ReassociationIndices> re;
        for (int64_t d = 0; d < tensorType(v).getRank(); ++d) {
          if (d < at)
            re.push_back({d});
          else if (d == at)
            re.push_back({d, d + 1});
          else
            re.push_back({d + 1});
        }
        return std::make_pair(
            rw.create<tensor::ExpandShapeOp>(loc, tensorType(v).clone(shape), v,
                                             re, sizes)
                .getResult(),
            re);
      };
      Value in = split(input, 1).first, w = split(filter, 0).first;
      auto [acc, re] = split(init, 1);
      Value r = rw.create<linalg::Conv2DNgchwGfchwOp>(
                      loc, TypeRange{acc.getType()}, ValueRange{in, w},
                      ValueRange{acc}, attrs)
                    .getResult(0);
      result = rw.create<tensor::CollapseShapeOp>(loc, outType, r, re);
    }
    if (oneD)
      result = rw.create<tensor::CollapseShapeOp>(loc, type, result, unitH);
    return result;
  }

  /// Max and average pooling over 1-3 spatial dims, one generic: the
  /// input padded (with the lowest value for max, 0 for average, and at
  /// the end as far as ceil_mode's last window reaches), read at
  /// o * stride + k * dilation for a window operand's k. The average
  /// divides by the window's count of real elements, or with
  /// count_include_pad of elements inside the padded input (never those
  /// past it, as in PyTorch).
  Value pool(Location loc, Value x, ArrayRef<int64_t> kernel,
             ArrayRef<int64_t> strides, ArrayRef<int64_t> padding,
             ArrayRef<int64_t> dilations, bool ceilMode, bool max,
             bool countIncludePad, RankedTensorType type) {
    MLIRContext *ctx = rw.getContext();
    RankedTensorType xt = tensorType(x);
    Type elem = xt.getElementType();
    int64_t spatial = kernel.size(), rank = xt.getRank();
    SmallVector<Value> inSizes, outSizes, outDims;
    for (int64_t d = 0; d < rank; ++d)
      inSizes.push_back(dimOf(rw, loc, x, d));
    for (int64_t d = 0; d < rank; ++d) {
      Value size = d < 2 ? inSizes[d]
                         : windowOutputSize(rw, loc, inSizes[d],
                                            indexConst(rw, loc, kernel[d - 2]),
                                            strides[d - 2], padding[d - 2],
                                            padding[spatial + d - 2],
                                            dilations[d - 2], ceilMode);
      if (!type.isDynamicDim(d))
        size = indexConst(rw, loc, type.getDimSize(d));
      outDims.push_back(size);
      if (type.isDynamicDim(d))
        outSizes.push_back(size);
    }
    // Pads: the given ones, and at the end what the last window needs.
    SmallVector<OpFoldResult> low(2, rw.getIndexAttr(0)), high = low;
    SmallVector<int64_t> paddedShape(xt.getShape());
    for (int64_t i = 0; i < spatial; ++i) {
      low.push_back(rw.getIndexAttr(padding[i]));
      int64_t d = i + 2, reach = (kernel[i] - 1) * dilations[i] + 1;
      int64_t in = xt.getDimSize(d), out = type.getDimSize(d);
      if (!ShapedType::isDynamic(in) && !ShapedType::isDynamic(out)) {
        int64_t need = (out - 1) * strides[i] + reach;
        int64_t end = std::max(need - in - padding[i], padding[spatial + i]);
        high.push_back(rw.getIndexAttr(end));
        paddedShape[d] = in + padding[i] + end;
        continue;
      }
      auto c = [&](int64_t v) { return indexConst(rw, loc, v); };
      Value need = rw.create<arith::AddIOp>(
          loc,
          rw.create<arith::MulIOp>(
              loc, rw.create<arith::SubIOp>(loc, outDims[d], c(1)),
              c(strides[i])),
          c(reach));
      Value end = rw.create<arith::SubIOp>(
          loc, need, rw.create<arith::AddIOp>(loc, inSizes[d], c(padding[i])));
      high.push_back(
          rw.create<arith::MaxSIOp>(loc, end, c(padding[spatial + i]))
              .getResult());
      paddedShape[d] = ShapedType::kDynamic;
    }
    Value padValue = max ? extremeConst(rw, loc, elem, /*max=*/false)
                         : scalarConst(rw, loc, elem, 0);
    Value padded = rw.create<tensor::PadOp>(loc, xt.clone(paddedShape), x, low,
                                            high, padValue);
    // Iteration space: n, c, outputs..., window...
    int64_t loops = 2 + 2 * spatial;
    SmallVector<AffineExpr> in = {getAffineDimExpr(0, ctx),
                                  getAffineDimExpr(1, ctx)};
    for (int64_t i = 0; i < spatial; ++i)
      in.push_back(getAffineDimExpr(2 + i, ctx) * strides[i] +
                   getAffineDimExpr(2 + spatial + i, ctx) * dilations[i]);
    SmallVector<AffineMap> maps = {
        AffineMap::get(loops, 0, in, ctx),
        projection(ctx, loops, dimRange(2 + spatial, loops)),
        projection(ctx, loops, dimRange(0, 2 + spatial))};
    SmallVector<utils::IteratorType> iterators(loops,
                                               utils::IteratorType::parallel);
    for (int64_t i = 0; i < spatial; ++i)
      iterators[2 + spatial + i] = utils::IteratorType::reduction;
    Value window = rw.create<tensor::EmptyOp>(loc, kernel, elem);
    Value init = filled(rw, loc, type, outSizes, padValue);
    Value r = generic(rw, loc, init, {padded, window}, maps, iterators,
                      [&](OpBuilder &b, Location l, ValueRange a) {
                        return max ? maxScalar(b, l, a[2], a[0])
                                   : addScalar(b, l, a[2], a[0]);
                      });
    if (max)
      return r;
    return mapLike(
        rw, loc, r, elem, {}, {},
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value count = indexConst(b, l, 1);
          for (int64_t i = 0; i < spatial; ++i) {
            auto c = [&](int64_t v) { return indexConst(b, l, v); };
            Value start = b.create<arith::SubIOp>(
                l,
                b.create<arith::MulIOp>(l, b.create<linalg::IndexOp>(l, 2 + i),
                                        c(strides[i])),
                c(padding[i]));
            Value end = b.create<arith::AddIOp>(l, start, c(kernel[i]));
            Value n;
            if (countIncludePad) {
              Value limit = b.create<arith::AddIOp>(l, inSizes[2 + i],
                                                    c(padding[spatial + i]));
              n = b.create<arith::SubIOp>(
                  l, b.create<arith::MinSIOp>(l, end, limit), start);
            } else {
              n = b.create<arith::SubIOp>(
                  l, b.create<arith::MinSIOp>(l, end, inSizes[2 + i]),
                  b.create<arith::MaxSIOp>(l, start, c(0)));
            }
            count = b.create<arith::MulIOp>(l, count, n);
          }
          Value countF = convertScalar(
              b, l, b.create<arith::IndexCastOp>(l, b.getI64Type(), count),
              elem);
          return b.create<arith::DivFOp>(l, a[0], countF);
        });
  }

  /// A reduction over `axes` into the dims that remain, then (mean) the
  /// division by the count, then (keepdims) size-1 dims put back to give
  /// `type`.
  Value reduce(Location loc, ReduceKind kind, Value x, ArrayRef<int64_t> axes,
               bool keepdims, RankedTensorType type) {
    RankedTensorType xt = tensorType(x);
    Type elem = xt.getElementType();
    SmallVector<bool> reduced = dimFlags(xt.getRank(), axes);
    Value r =
        reduceRows(rw, loc, x, reduced, reductionInit(rw, loc, kind, elem), {},
                   [&](OpBuilder &b, Location l, ValueRange a) {
                     return reductionCombine(b, l, kind, a[1], a[0]);
                   });
    if (kind == ReduceKind::Mean) {
      Value count = countOf(rw, loc, x, axes, elem);
      r = mapLike(rw, loc, r, elem, {}, {},
                  [&](OpBuilder &b, Location l, ValueRange a) {
                    return b.create<arith::DivFOp>(l, a[0], count);
                  });
    }
    if (!keepdims)
      return r;
    return reshapeTo(loc, r, type, /*dynamicFrom=*/[&](int64_t i) {
      return rw.create<tensor::DimOp>(loc, x, i).getResult();
    });
  }

  /// tensor.reshape of `x` to `type`; the size of each dynamic result dim
  /// comes from `dynamicSize(i)`.
  Value reshapeTo(Location loc, Value x, RankedTensorType type,
                  function_ref<Value(int64_t)> dynamicSize) {
    SmallVector<Value> dims;
    for (int64_t i = 0; i < type.getRank(); ++i) {
      Value size =
          type.isDynamicDim(i)
              ? dynamicSize(i)
              : rw.create<arith::ConstantIndexOp>(loc, type.getDimSize(i));
      dims.push_back(size);
    }
    auto shapeType = RankedTensorType::get({type.getRank()}, rw.getIndexType());
    Value shape = rw.create<tensor::FromElementsOp>(loc, shapeType, dims);
    return rw.create<tensor::ReshapeOp>(loc, type, x, shape);
  }

  /// Reshape, squeeze, unsqueeze and flatten: tensor.reshape, with each
  /// dynamic result dim computed from the operand's dims.
  FailureOr<Value> reshape(Operation *op, Value x) {
    Location loc = op->getLoc();
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    RankedTensorType xt = tensorType(x);
    auto numel = [&]() {
      Value n = rw.create<arith::ConstantIndexOp>(loc, 1);
      for (int64_t i = 0; i < xt.getRank(); ++i)
        n = rw.create<arith::MulIOp>(loc, n, dimOf(rw, loc, x, i));
      return n;
    };
    // Squeeze and unsqueeze only drop or add size-1 dims: the dynamic dims
    // of the result are those of the operand, in order.
    SmallVector<int64_t> operandDynamic;
    for (int64_t i = 0; i < xt.getRank(); ++i)
      if (xt.isDynamicDim(i))
        operandDynamic.push_back(i);
    int64_t nextDynamic = 0;
    bool ok = true;
    Value result = reshapeTo(loc, x, type, [&](int64_t i) -> Value {
      if (isa<SqueezeOp, UnsqueezeOp>(op)) {
        if (nextDynamic >= (int64_t)operandDynamic.size()) {
          ok = false;
          return rw.create<arith::ConstantIndexOp>(loc, 1);
        }
        return rw.create<tensor::DimOp>(loc, x, operandDynamic[nextDynamic++]);
      }
      if (auto f = dyn_cast<FlattenOp>(op)) {
        int64_t axis = f.getAxis();
        Value n = rw.create<arith::ConstantIndexOp>(loc, 1);
        for (int64_t j = i == 0 ? 0 : axis; j < (i == 0 ? axis : xt.getRank());
             ++j)
          n = rw.create<arith::MulIOp>(loc, n, dimOf(rw, loc, x, j));
        return n;
      }
      ArrayRef<int64_t> spec = cast<ReshapeOp>(op).getShape();
      if (spec[i] == 0)
        return dimOf(rw, loc, x, i);
      // -1: the element count over the product of the other dims.
      Value others = rw.create<arith::ConstantIndexOp>(loc, 1);
      for (int64_t j = 0; j < (int64_t)spec.size(); ++j) {
        if (j == i)
          continue;
        Value dj =
            spec[j] == 0
                ? dimOf(rw, loc, x, j)
                : rw.create<arith::ConstantIndexOp>(loc, spec[j]).getResult();
        others = rw.create<arith::MulIOp>(loc, others, dj);
      }
      return rw.create<arith::DivUIOp>(loc, numel(), others);
    });
    if (!ok)
      return failure();
    return result;
  }

  /// ONNX TopK in two generics, quadratic in the axis length (k and the
  /// axes TopK sees are small): each element's rank is the count of
  /// elements that come before it (larger, or smaller with `smallest`;
  /// equal ones with a lower index; NaN above every number), a
  /// permutation of [0, n); output j along the axis takes the element of
  /// rank j. The result is sorted, which `unsorted` allows.
  SmallVector<Value> topK(TopKOp o) {
    return topKWith(o.getLoc(), o.getX(), o.getValues().getType(),
                    o.getIndices().getType(), o.getAxis(), o.getSmallest(),
                    Value());
  }

  /// dynamic_top_k: k checked against the axis dim, clamped into it.
  SmallVector<Value> dynamicTopK(DynamicTopKOp o) {
    Location loc = o.getLoc();
    Ix ix{rw, loc};
    Value k = entries(loc, o.getK()).front();
    Value dim = dimOf(rw, loc, o.getX(), o.getAxis());
    Value ok = ix.both(ix.le(ix.c(0), k), ix.le(k, dim));
    check(o, ok, "k is negative or larger than the axis dim");
    return topKWith(loc, o.getX(), o.getValues().getType(),
                    o.getIndices().getType(), o.getAxis(), o.getSmallest(),
                    ix.sel(ok, k, ix.c(0)));
  }

  /// The top k along `axis`; `k` (an index) sizes a dynamic axis dim of
  /// the results.
  SmallVector<Value> topKWith(Location loc, Value x, RankedTensorType type,
                              RankedTensorType indexType, int64_t axis,
                              bool smallest, Value k) {
    MLIRContext *ctx = rw.getContext();
    RankedTensorType xt = tensorType(x);
    Type elem = xt.getElementType(), i64 = rw.getI64Type();
    int64_t rank = xt.getRank();
    // x with the axis dim replaced by loop dim `rank` of a rank+1 space.
    SmallVector<AffineExpr> along;
    for (int64_t d = 0; d < rank; ++d)
      along.push_back(getAffineDimExpr(d == axis ? rank : d, ctx));
    AffineMap alongMap = AffineMap::get(rank + 1, 0, along, ctx);
    AffineMap outer = projection(ctx, rank + 1, dimRange(0, rank));
    SmallVector<utils::IteratorType> iterators(rank + 1,
                                               utils::IteratorType::parallel);
    iterators[rank] = utils::IteratorType::reduction;
    auto asI64 = [&](OpBuilder &b, Location l, int64_t dim) -> Value {
      return b.create<arith::IndexCastOp>(l, b.getI64Type(),
                                          b.create<linalg::IndexOp>(l, dim));
    };
    // Whether a (at index ia) comes before b (at index ib).
    auto before = [&](OpBuilder &b, Location l, Value a, Value ia, Value vb,
                      Value ib) -> Value {
      CompareDirection dir =
          smallest ? CompareDirection::lt : CompareDirection::gt;
      Value wins = compareScalar(b, l, dir, a, vb);
      Value same = compareScalar(b, l, CompareDirection::eq, a, vb);
      if (isFloat(elem)) {
        auto isNan = [&](Value v) {
          return b.create<arith::CmpFOp>(l, arith::CmpFPredicate::UNO, v, v);
        };
        Value nanA = isNan(a), nanB = isNan(vb);
        Value t = b.create<arith::ConstantOp>(l, b.getBoolAttr(true));
        // largest: a NaN beats a number; smallest: a number beats a NaN.
        Value nanWins = smallest
                            ? b.create<arith::AndIOp>(
                                  l, b.create<arith::XOrIOp>(l, nanA, t), nanB)
                            : b.create<arith::AndIOp>(
                                  l, nanA, b.create<arith::XOrIOp>(l, nanB, t));
        wins = b.create<arith::OrIOp>(l, wins, nanWins);
        same = b.create<arith::OrIOp>(l, same,
                                      b.create<arith::AndIOp>(l, nanA, nanB));
      }
      Value lower =
          b.create<arith::CmpIOp>(l, arith::CmpIPredicate::slt, ia, ib);
      return b.create<arith::OrIOp>(l, wins,
                                    b.create<arith::AndIOp>(l, same, lower));
    };
    Value ranks =
        generic(rw, loc,
                filled(rw, loc, xt.clone(i64), dynamicDimsOf(rw, loc, x),
                       scalarConst(rw, loc, i64, 0)),
                {x, x}, {outer, alongMap, outer}, iterators,
                [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                  Value earlier = before(b, l, a[1], asI64(b, l, rank), a[0],
                                         asI64(b, l, axis));
                  return b.create<arith::AddIOp>(
                      l, a[2], b.create<arith::ExtUIOp>(l, i64, earlier));
                });
    SmallVector<Value> sizes;
    for (int64_t d = 0; d < rank; ++d)
      if (type.isDynamicDim(d))
        sizes.push_back(d == axis && k ? k
                                       : rw.create<tensor::DimOp>(loc, x, d));
    Value values = filled(rw, loc, type, sizes, scalarConst(rw, loc, elem, 0));
    Value indices =
        filled(rw, loc, indexType, sizes, scalarConst(rw, loc, i64, 0));
    auto pick = rw.create<linalg::GenericOp>(
        loc, TypeRange{type, indexType}, ValueRange{x, ranks},
        ValueRange{values, indices},
        ArrayRef<AffineMap>{alongMap, alongMap, outer, outer}, iterators,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value hit = b.create<arith::CmpIOp>(l, arith::CmpIPredicate::eq, a[1],
                                              asI64(b, l, axis));
          b.create<linalg::YieldOp>(
              l, ValueRange{b.create<arith::SelectOp>(l, hit, a[0], a[2]),
                            b.create<arith::SelectOp>(l, hit, asI64(b, l, rank),
                                                      a[3])});
        });
    return {pick.getResult(0), pick.getResult(1)};
  }

  /// ONNX ScatterElements: a copy of data (linalg.copy, so that the
  /// writes never land in data's buffer), then an scf.for nest over the
  /// updates that inserts each one (combined with the element there by the
  /// reduction) at its position with the axis coordinate from indices,
  /// negative ones counted from the end. Updates apply in row-major order,
  /// so with `none` the last of duplicate indices wins. On i1, add is or
  /// and mul is and.
  Value scatterElements(ScatterElementsOp o) {
    Location loc = o.getLoc();
    Value data = o.getData(), indices = o.getIndices(),
          updates = o.getUpdates();
    RankedTensorType type = o.getType();
    int64_t rank = type.getRank(), axis = o.getAxis();
    bool i1 = type.getElementType().isInteger(1);
    Value copy =
        rw.create<linalg::CopyOp>(
              loc, data, emptyOf(rw, loc, type, dynamicDimsOf(rw, loc, data)))
            .getResult(0);
    std::optional<ReduceKind> kind;
    switch (o.getReduction()) {
    case ScatterReduction::none:
      break;
    case ScatterReduction::add:
      kind = i1 ? ReduceKind::Max : ReduceKind::Sum;
      break;
    case ScatterReduction::mul:
      kind = i1 ? ReduceKind::Min : ReduceKind::Prod;
      break;
    case ScatterReduction::max:
      kind = ReduceKind::Max;
      break;
    case ScatterReduction::min:
      kind = ReduceKind::Min;
      break;
    }
    Value n = dimOf(rw, loc, data, axis);
    SmallVector<Value> lbs(rank, indexConst(rw, loc, 0)),
        steps(rank, indexConst(rw, loc, 1)), ubs;
    for (int64_t d = 0; d < rank; ++d)
      ubs.push_back(dimOf(rw, loc, indices, d));
    scf::LoopNest nest = scf::buildLoopNest(
        rw, loc, lbs, ubs, steps, copy,
        [&](OpBuilder &b, Location l, ValueRange ivs,
            ValueRange acc) -> scf::ValueVector {
          Value u = b.create<tensor::ExtractOp>(l, updates, ivs);
          SmallVector<Value> at(ivs);
          at[axis] = normalizeIndex(
              b, l, b.create<tensor::ExtractOp>(l, indices, ivs), n);
          if (kind)
            u = reductionCombine(b, l, *kind,
                                 b.create<tensor::ExtractOp>(l, acc[0], at), u);
          return {b.create<tensor::InsertOp>(l, u, acc[0], at)};
        });
    return nest.results[0];
  }

  /// One resized dim of graph.resize: its index, input size, scale, and
  /// the reference's output width (scale * in, not rounded) and size, all
  /// but the first as f64 values.
  struct ResizedDim {
    int64_t dim;
    Value in, inF, scale, width, outF;
  };

  /// The input coordinate of output coordinate `x` (f64) along `r`, as in
  /// ONNX's reference (onnx/backend/test/case/node/resize.py) and the
  /// Resize spec for half_pixel_symmetric.
  Value resizeCoordinate(OpBuilder &b, Location l, CoordinateMode mode,
                         const ResizedDim &r, Value x) {
    Type f64 = b.getF64Type();
    auto c = [&](double v) { return scalarConst(b, l, f64, v); };
    auto isOne = [&](Value v) {
      return b.create<arith::CmpFOp>(l, arith::CmpFPredicate::OEQ, v, c(1));
    };
    auto halfPixel = [&]() -> Value {
      Value s = b.create<arith::DivFOp>(l, b.create<arith::AddFOp>(l, x, c(.5)),
                                        r.scale);
      return b.create<arith::SubFOp>(l, s, c(.5));
    };
    switch (mode) {
    case CoordinateMode::half_pixel:
      return halfPixel();
    case CoordinateMode::pytorch_half_pixel:
      return b.create<arith::SelectOp>(l, isOne(r.width), c(-.5), halfPixel());
    case CoordinateMode::align_corners: {
      Value v = b.create<arith::DivFOp>(
          l,
          b.create<arith::MulFOp>(l, x,
                                  b.create<arith::SubFOp>(l, r.inF, c(1))),
          b.create<arith::SubFOp>(l, r.width, c(1)));
      return b.create<arith::SelectOp>(l, isOne(r.width), c(0), v);
    }
    case CoordinateMode::asymmetric:
      return b.create<arith::DivFOp>(l, x, r.scale);
    case CoordinateMode::half_pixel_symmetric: {
      // offset + (x + 0.5) / scale - 0.5, offset = in / 2 * (1 - out /
      // width).
      Value adjustment = b.create<arith::DivFOp>(l, r.outF, r.width);
      Value offset =
          b.create<arith::MulFOp>(l, b.create<arith::DivFOp>(l, r.inF, c(2)),
                                  b.create<arith::SubFOp>(l, c(1), adjustment));
      return b.create<arith::AddFOp>(l, offset, halfPixel());
    }
    }
    llvm_unreachable("unknown coordinate mode");
  }

  /// ONNX Resize as one generic over the output, exactly as the ONNX
  /// reference (onnx/backend/test/case/node/resize.py) computes it, in
  /// f64: per resized dim the input coordinate x, then nearest: x rounded
  /// by nearest_mode; linear / cubic: the taps base + t (t in [0, 2) or
  /// [-1, 3)) with base = floor(x), or x - 1 when x is whole (the
  /// reference's ratio 1), weighted by the linear or cubic (cubic_coeff_a)
  /// coefficients of x - base, outside taps dropped and the rest
  /// renormalized with exclude_outside. Taps read the input at clamped
  /// indices (the reference's edge padding) with tensor.extract, the
  /// combinations of every resized dim's taps summed innermost dim first.
  /// Dims with scale 1 and their own size are plain indices.
  Value resize(ResizeOp o) {
    Location loc = o.getLoc();
    Value x = o.getX();
    RankedTensorType xt = tensorType(x), type = o.getType();
    Type f64 = rw.getF64Type();
    ArrayRef<double> scales = o.getScales();
    ArrayRef<int64_t> sizes = o.getSizes();
    return resizeWith(
        loc, x, type, o.getMode(), o.getCoordinateMode(), o.getNearestMode(),
        o.getCubicCoeffA().convertToDouble(), o.getExcludeOutside(),
        [&](int64_t d, Value in, Value inF) -> std::optional<ResizeSize> {
          if (scales[d] == 1 && (sizes[d] < 0 || sizes[d] == xt.getDimSize(d)))
            return std::nullopt; // not resized
          Value out;
          if (!type.isDynamicDim(d)) {
            out = indexConst(rw, loc, type.getDimSize(d));
          } else {
            // floor(in * scale); a dynamic output dim has no size.
            Value f = rw.create<math::FloorOp>(
                loc, rw.create<arith::MulFOp>(
                         loc, inF, scalarConst(rw, loc, f64, scales[d])));
            out = rw.create<arith::IndexCastOp>(
                loc, rw.getIndexType(),
                rw.create<arith::FPToSIOp>(loc, rw.getI64Type(), f));
          }
          Value scale =
              scales[d] > 0 ? scalarConst(rw, loc, f64, scales[d]) : Value();
          return ResizeSize{out, scale};
        });
  }

  /// A resized dim's output size (index) and scale (f64; null for out /
  /// in).
  struct ResizeSize {
    Value out, scale;
  };

  /// graph.dynamic_resize: every dim resized by the run-time scales (a
  /// float operand) or sizes (an integer one).
  Value dynamicResize(DynamicResizeOp o) {
    Location loc = o.getLoc();
    Ix ix{rw, loc};
    Type f64 = rw.getF64Type();
    Value param = o.getParam();
    bool bySizes = isa<IntegerType>(tensorType(param).getElementType());
    int64_t rank = o.getType().getRank();
    SmallVector<Value> sizes, scales;
    Value ok = ix.yes();
    for (int64_t d = 0; d < rank; ++d) {
      Value v = rw.create<tensor::ExtractOp>(
          loc, param, ValueRange{indexConst(rw, loc, d)});
      if (bySizes) {
        Value n = rw.create<arith::IndexCastOp>(loc, rw.getIndexType(), v);
        ok = ix.both(ok, ix.le(ix.c(0), n));
        sizes.push_back(n);
        continue;
      }
      v = convertScalar(rw, loc, v, f64);
      // A positive, finite scale whose output size fits.
      Value in = dimOf(rw, loc, o.getX(), d);
      Value inF = rw.create<arith::SIToFPOp>(
          loc, f64, rw.create<arith::IndexCastOp>(loc, rw.getI64Type(), in));
      Value f =
          rw.create<math::FloorOp>(loc, rw.create<arith::MulFOp>(loc, inF, v));
      Value good = rw.create<arith::AndIOp>(
          loc,
          rw.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OGT, v,
                                   scalarConst(rw, loc, f64, 0)),
          rw.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLT, f,
                                   scalarConst(rw, loc, f64, 1e15)));
      ok = ix.both(ok, good);
      f = rw.create<arith::SelectOp>(loc, good, f,
                                     scalarConst(rw, loc, f64, 0));
      sizes.push_back(rw.create<arith::IndexCastOp>(
          loc, rw.getIndexType(),
          rw.create<arith::FPToSIOp>(loc, rw.getI64Type(), f)));
      scales.push_back(v);
    }
    check(o, ok,
          bySizes ? "a size is negative"
                  : "a scale is not positive, or too large");
    return resizeWith(
        loc, o.getX(), o.getType(), o.getMode(), o.getCoordinateMode(),
        o.getNearestMode(), o.getCubicCoeffA().convertToDouble(),
        o.getExcludeOutside(),
        [&](int64_t d, Value, Value) -> std::optional<ResizeSize> {
          return ResizeSize{ix.sel(ok, sizes[d], ix.c(0)),
                            bySizes ? Value() : scales[d]};
        });
  }

  Value resizeWith(
      Location loc, Value x, RankedTensorType type, ResizeMode mode,
      CoordinateMode coordMode, NearestMode nearestMode, double a,
      bool excludeOutside,
      function_ref<std::optional<ResizeSize>(int64_t, Value, Value)> sizeOf) {
    Type elem = type.getElementType(), f64 = rw.getF64Type();
    int64_t rank = type.getRank();
    auto toF64 = [&](OpBuilder &b, Location l, Value index) -> Value {
      return b.create<arith::SIToFPOp>(
          l, f64, b.create<arith::IndexCastOp>(l, b.getI64Type(), index));
    };
    SmallVector<Value> outSizes;
    SmallVector<ResizedDim> resized;
    for (int64_t d = 0; d < rank; ++d) {
      Value in = dimOf(rw, loc, x, d), inF = toF64(rw, loc, in);
      std::optional<ResizeSize> size = sizeOf(d, in, inF);
      if (!size) {
        if (type.isDynamicDim(d))
          outSizes.push_back(in);
        continue;
      }
      if (type.isDynamicDim(d))
        outSizes.push_back(size->out);
      Value outF = toF64(rw, loc, size->out);
      Value scale = size->scale
                        ? size->scale
                        : rw.create<arith::DivFOp>(loc, outF, inF).getResult();
      Value width = rw.create<arith::MulFOp>(loc, scale, inF);
      resized.push_back({d, in, inF, scale, width, outF});
    }
    // Per resized dim, its taps: clamped index and weight (none for
    // nearest).
    using Taps = SmallVector<std::pair<Value, Value>>;
    auto tapsOf = [&](OpBuilder &b, Location l, const ResizedDim &r,
                      Value i) -> Taps {
      auto c = [&](double v) { return scalarConst(b, l, f64, v); };
      Value xo = resizeCoordinate(b, l, coordMode, r, toF64(b, l, i));
      Value last = b.create<arith::SubIOp>(l, r.in, indexConst(b, l, 1));
      auto clamped = [&](Value f) -> Value {
        Value idx = b.create<arith::IndexCastOp>(
            l, b.getIndexType(),
            b.create<arith::FPToSIOp>(l, b.getI64Type(), f));
        return b.create<arith::MinSIOp>(
            l, b.create<arith::MaxSIOp>(l, idx, indexConst(b, l, 0)), last);
      };
      Value base = b.create<math::FloorOp>(l, xo);
      Value ratio = b.create<arith::SubFOp>(l, xo, base);
      if (mode == ResizeMode::nearest) {
        Value f;
        switch (nearestMode) {
        case NearestMode::floor:
          f = base;
          break;
        case NearestMode::ceil:
          f = b.create<math::CeilOp>(l, xo);
          break;
        case NearestMode::round_prefer_floor:
        case NearestMode::round_prefer_ceil: {
          Value up = b.create<arith::CmpFOp>(
              l,
              nearestMode == NearestMode::round_prefer_floor
                  ? arith::CmpFPredicate::OGT
                  : arith::CmpFPredicate::OGE,
              ratio, c(.5));
          f = b.create<arith::AddFOp>(
              l, base,
              b.create<arith::SelectOp>(l, up, c(1), c(0)).getResult());
          break;
        }
        }
        return {{clamped(f), Value()}};
      }
      // A whole x: base x - 1 and ratio 1, as the reference.
      Value whole =
          b.create<arith::CmpFOp>(l, arith::CmpFPredicate::OEQ, ratio, c(0));
      base = b.create<arith::SelectOp>(
          l, whole, b.create<arith::SubFOp>(l, base, c(1)), base);
      Value t = b.create<arith::SelectOp>(l, whole, c(1), ratio);
      auto add = [&](Value p, Value q) -> Value {
        return b.create<arith::AddFOp>(l, p, q);
      };
      auto mul = [&](Value p, Value q) -> Value {
        return b.create<arith::MulFOp>(l, p, q);
      };
      auto sub = [&](Value p, Value q) -> Value {
        return b.create<arith::SubFOp>(l, p, q);
      };
      SmallVector<Value> weights;
      int64_t first;
      if (mode == ResizeMode::linear) {
        weights = {sub(c(1), t), t};
        first = 0;
      } else {
        // The reference's cubic_coeffs: the kernel at distances 1 + t, t,
        // 1 - t and 2 - t.
        Value s = sub(c(1), t);
        auto far = [&](Value u) { // 1 < |d| < 2, u = d
          Value v = add(mul(sub(mul(c(a), u), c(5 * a)), u), c(8 * a));
          return sub(mul(v, u), c(4 * a));
        };
        auto near = [&](Value u) { // |d| <= 1
          Value v = sub(mul(c(a + 2), u), c(a + 3));
          return add(mul(mul(v, u), u), c(1));
        };
        weights = {far(add(t, c(1))), near(t), near(s), far(add(s, c(1)))};
        first = -1;
      }
      Taps taps;
      Value sum;
      for (auto [k, w] : llvm::enumerate(weights)) {
        Value f = add(base, c(first + (int64_t)k));
        if (excludeOutside) {
          Value inside = b.create<arith::AndIOp>(
              l, b.create<arith::CmpFOp>(l, arith::CmpFPredicate::OGE, f, c(0)),
              b.create<arith::CmpFOp>(l, arith::CmpFPredicate::OLT, f, r.inF));
          w = b.create<arith::SelectOp>(l, inside, w, c(0));
          sum = sum ? add(sum, w) : w;
        }
        taps.push_back({clamped(f), w});
      }
      if (excludeOutside)
        for (auto &tap : taps)
          tap.second = b.create<arith::DivFOp>(l, tap.second, sum);
      return taps;
    };
    return tabulate(
        rw, loc, type, outSizes,
        [&](OpBuilder &b, Location l, ValueRange i) -> Value {
          SmallVector<Taps> taps;
          for (const ResizedDim &r : resized)
            taps.push_back(tapsOf(b, l, r, i[r.dim]));
          SmallVector<Value> at(i);
          // The value interpolated over resized dims [level, ...) at `at`.
          std::function<Value(size_t)> over = [&](size_t level) -> Value {
            if (level == resized.size()) {
              Value v = b.create<tensor::ExtractOp>(l, x, at);
              return mode == ResizeMode::nearest ? v
                                                 : convertScalar(b, l, v, f64);
            }
            Value acc;
            for (auto [index, weight] : taps[level]) {
              at[resized[level].dim] = index;
              Value v = over(level + 1);
              if (!weight)
                return v;
              v = b.create<arith::MulFOp>(l, weight, v);
              acc = acc ? b.create<arith::AddFOp>(l, acc, v) : v;
            }
            return acc;
          };
          Value v = over(0);
          return mode == ResizeMode::nearest ? v : convertScalar(b, l, v, elem);
        });
  }

  //===------------------------------------------------------------------===//
  // Run-time shape parameters
  //
  // The parameters are read with tensor.extract and turned into index
  // values. What ONNX calls an error (an axis out of range, a shape whose
  // element count differs) becomes a cf.assert naming the op, which the
  // CPU pipeline turns into a run-time error status (loom_rt_fail); the
  // code goes on with sizes clamped to zero, so it never reads or writes
  // out of bounds. Ops whose loop structure depends on an axis (a reduction
  // over run-time axes, a cumsum along a run-time axis) switch over every
  // possible axis set with scf.index_switch.
  //===------------------------------------------------------------------===//

  /// Index arithmetic at the rewriter's insertion point.
  struct Ix {
    OpBuilder &b;
    Location loc;
    Value c(int64_t v) { return b.create<arith::ConstantIndexOp>(loc, v); }
    Value add(Value x, Value y) { return b.create<arith::AddIOp>(loc, x, y); }
    Value sub(Value x, Value y) { return b.create<arith::SubIOp>(loc, x, y); }
    Value mul(Value x, Value y) { return b.create<arith::MulIOp>(loc, x, y); }
    Value max(Value x, Value y) { return b.create<arith::MaxSIOp>(loc, x, y); }
    Value min(Value x, Value y) { return b.create<arith::MinSIOp>(loc, x, y); }
    Value clamp(Value x, Value lo, Value hi) { return min(max(x, lo), hi); }
    Value cmp(arith::CmpIPredicate p, Value x, Value y) {
      return b.create<arith::CmpIOp>(loc, p, x, y);
    }
    Value eq(Value x, Value y) { return cmp(arith::CmpIPredicate::eq, x, y); }
    Value lt(Value x, Value y) { return cmp(arith::CmpIPredicate::slt, x, y); }
    Value le(Value x, Value y) { return cmp(arith::CmpIPredicate::sle, x, y); }
    Value sel(Value c, Value x, Value y) {
      return b.create<arith::SelectOp>(loc, c, x, y);
    }
    Value both(Value x, Value y) { return b.create<arith::AndIOp>(loc, x, y); }
    Value either(Value x, Value y) { return b.create<arith::OrIOp>(loc, x, y); }
    Value no(Value x) {
      return b.create<arith::XOrIOp>(loc, x,
                                     b.create<arith::ConstantIntOp>(loc, 1, 1));
    }
    Value yes() { return b.create<arith::ConstantIntOp>(loc, 1, 1); }
    /// x / y for x >= 0 and y > 0.
    Value div(Value x, Value y) { return b.create<arith::DivSIOp>(loc, x, y); }
    /// `v` when >= 0, else v + n (an axis or bound counted from the end).
    Value fromEnd(Value v, Value n) { return sel(lt(v, c(0)), add(v, n), v); }
    /// values[i] for a run-time i (0 when out of range).
    Value pick(ArrayRef<Value> values, Value i) {
      Value r = c(0);
      for (auto [j, v] : llvm::enumerate(values))
        r = sel(eq(i, c(j)), v, r);
      return r;
    }
  };

  /// The entries of the integer parameter tensor `t` (rank 0 or 1, static
  /// length) as index values.
  SmallVector<Value> entries(Location loc, Value t) {
    RankedTensorType type = tensorType(t);
    SmallVector<Value> out;
    int64_t n = type.getRank() == 0 ? 1 : type.getDimSize(0);
    for (int64_t i = 0; i < n; ++i) {
      SmallVector<Value> at;
      if (type.getRank() == 1)
        at.push_back(indexConst(rw, loc, i));
      Value v = rw.create<tensor::ExtractOp>(loc, t, at);
      out.push_back(rw.create<arith::IndexCastOp>(loc, rw.getIndexType(), v));
    }
    return out;
  }

  /// A run-time check: when `ok` is false the run fails with `what`,
  /// prefixed with the op and its ONNX node.
  void check(Operation *op, Value ok, const Twine &what) {
    std::string where = op->getName().getStringRef().str();
    Location loc = op->getLoc();
    if (auto fused = dyn_cast<FusedLoc>(loc);
        fused && !fused.getLocations().empty())
      loc = fused.getLocations().front();
    if (auto name = dyn_cast<NameLoc>(loc))
      where += " (node '" + name.getName().str() + "')";
    rw.create<cf::AssertOp>(op->getLoc(), ok, (where + ": " + what).str());
  }

  /// Axes `raw` normalized against `rank`, and whether all are in range and
  /// distinct.
  std::pair<SmallVector<Value>, Value> axesIn(Ix &ix, ArrayRef<Value> raw,
                                              Value rank) {
    SmallVector<Value> axes;
    Value ok = ix.yes();
    for (Value a : raw) {
      Value n = ix.fromEnd(a, rank);
      ok = ix.both(ok, ix.both(ix.le(ix.c(0), n), ix.lt(n, rank)));
      for (Value prev : axes)
        ok = ix.both(ok, ix.no(ix.eq(prev, n)));
      axes.push_back(n);
    }
    return {axes, ok};
  }

  /// Sizes of `type`'s dynamic dims among `dims`.
  static SmallVector<Value> dynamicOnly(RankedTensorType type,
                                        ArrayRef<Value> dims) {
    SmallVector<Value> out;
    for (auto [i, d] : llvm::enumerate(dims))
      if (type.isDynamicDim(i))
        out.push_back(d);
    return out;
  }

  /// `x` reshaped to `dims` (index values, one per result dim); zero dims
  /// when `ok` is false, so a failed check reads nothing.
  Value reshapeChecked(Location loc, Value x, RankedTensorType type,
                       SmallVector<Value> dims, Value ok) {
    Ix ix{rw, loc};
    for (Value &d : dims)
      d = ix.sel(ok, d, ix.c(0));
    return reshapeTo(loc, x, type, [&](int64_t i) { return dims[i]; });
  }

  SmallVector<Value> dimsOf(Location loc, Value x) {
    SmallVector<Value> dims;
    for (int64_t i = 0; i < tensorType(x).getRank(); ++i)
      dims.push_back(dimOf(rw, loc, x, i));
    return dims;
  }

  Value product(Ix &ix, ArrayRef<Value> values) {
    Value p = ix.c(1);
    for (Value v : values)
      p = ix.mul(p, v);
    return p;
  }

  Value dynamicReshape(DynamicReshapeOp o) {
    Location loc = o.getLoc();
    Ix ix{rw, loc};
    Value x = o.getX();
    SmallVector<Value> in = dimsOf(loc, x), dims = entries(loc, o.getShape());
    Value ok = ix.yes(), inferred = ix.c(0), known = ix.c(1);
    Value minusOne = ix.c(-1);
    for (auto [i, d] : llvm::enumerate(dims)) {
      // 0 copies the input's dim (unless allowzero).
      if (!o.getAllowzero())
        d = ix.sel(ix.eq(d, ix.c(0)), i < in.size() ? in[i] : ix.c(0), d);
      ok = ix.both(ok, ix.le(minusOne, d));
      known = ix.mul(known, ix.sel(ix.eq(d, minusOne), ix.c(1), d));
      inferred = ix.add(inferred, ix.sel(ix.eq(d, minusOne), ix.c(1), ix.c(0)));
    }
    Value numel = product(ix, in);
    ok = ix.both(ok, ix.le(inferred, ix.c(1)));
    // The -1 dim: the element count over the others (0 when they are).
    Value safeKnown = ix.sel(ix.eq(known, ix.c(0)), ix.c(1), known);
    Value missing =
        ix.sel(ix.eq(known, ix.c(0)), ix.c(0), ix.div(numel, safeKnown));
    for (Value &d : dims)
      d = ix.sel(ix.eq(d, minusOne), missing, d);
    ok = ix.both(ok, ix.eq(product(ix, dims), numel));
    check(o, ok,
          "the shape has a negative entry, more than one -1, or another "
          "element count than the input");
    return reshapeChecked(loc, x, o.getType(), dims, ok);
  }

  Value dynamicUnsqueeze(DynamicUnsqueezeOp o) {
    Location loc = o.getLoc();
    Ix ix{rw, loc};
    Value x = o.getX();
    SmallVector<Value> in = dimsOf(loc, x);
    int64_t rank = o.getType().getRank();
    auto [axes, ok] = axesIn(ix, entries(loc, o.getAxes()), ix.c(rank));
    check(o, ok, "the axes are out of range or repeat one");
    SmallVector<Value> dims;
    Value before = ix.c(0); // axes before position p
    for (int64_t p = 0; p < rank; ++p) {
      Value isAxis = ix.no(ix.yes());
      for (Value a : axes)
        isAxis = ix.either(isAxis, ix.eq(a, ix.c(p)));
      dims.push_back(
          ix.sel(isAxis, ix.c(1), ix.pick(in, ix.sub(ix.c(p), before))));
      before = ix.add(before, ix.sel(isAxis, ix.c(1), ix.c(0)));
    }
    return reshapeChecked(loc, x, o.getType(), dims, ok);
  }

  Value dynamicSqueeze(DynamicSqueezeOp o) {
    Location loc = o.getLoc();
    Ix ix{rw, loc};
    Value x = o.getX();
    SmallVector<Value> in = dimsOf(loc, x);
    int64_t rank = in.size(), outRank = o.getType().getRank();
    auto [axes, ok] = axesIn(ix, entries(loc, o.getAxes()), ix.c(rank));
    for (Value a : axes)
      ok = ix.both(ok, ix.eq(ix.pick(in, a), ix.c(1)));
    check(o, ok,
          "the axes are out of range, repeat one, or name a dim "
          "that is not 1");
    SmallVector<Value> dims(outRank, ix.c(0));
    Value before = ix.c(0);
    for (int64_t p = 0; p < rank; ++p) {
      Value isAxis = ix.no(ix.yes());
      for (Value a : axes)
        isAxis = ix.either(isAxis, ix.eq(a, ix.c(p)));
      Value q = ix.sub(ix.c(p), before); // p's position in the result
      for (int64_t j = 0; j < outRank; ++j)
        dims[j] =
            ix.sel(ix.both(ix.no(isAxis), ix.eq(q, ix.c(j))), in[p], dims[j]);
      before = ix.add(before, ix.sel(isAxis, ix.c(1), ix.c(0)));
    }
    return reshapeChecked(loc, x, o.getType(), dims, ok);
  }

  Value dynamicSlice(DynamicSliceOp o) {
    Location loc = o.getLoc();
    Ix ix{rw, loc};
    Value x = o.getX();
    SmallVector<Value> in = dimsOf(loc, x);
    int64_t rank = in.size();
    SmallVector<Value> starts = entries(loc, o.getStarts()),
                       ends = entries(loc, o.getEnds()),
                       steps = entries(loc, o.getSteps());
    auto [axes, ok] = axesIn(ix, entries(loc, o.getAxes()), ix.c(rank));
    for (Value st : steps)
      ok = ix.both(ok, ix.no(ix.eq(st, ix.c(0))));
    check(o, ok, "the axes are out of range or repeat one, or a step is 0");
    SmallVector<Value> first, step, sizes;
    for (int64_t d = 0; d < rank; ++d) {
      Value n = in[d];
      // The bounds of dim d: the entry whose axis is d, else all of it.
      Value s = ix.c(0), e = n, k = ix.c(1);
      for (size_t j = 0; j < axes.size(); ++j) {
        Value mine = ix.eq(axes[j], ix.c(d));
        s = ix.sel(mine, starts[j], s);
        e = ix.sel(mine, ends[j], e);
        k = ix.sel(mine, steps[j], k);
      }
      k = ix.sel(ix.eq(k, ix.c(0)), ix.c(1), k);
      s = ix.fromEnd(s, n);
      e = ix.fromEnd(e, n);
      Value forward = ix.lt(ix.c(0), k);
      Value last = ix.sub(n, ix.c(1));
      // Forward: [s, e) clamped to [0, n]; backward: (e, s] clamped to
      // [-1, n - 1]. Length: (span - 1) / |k| + 1 when span > 0.
      Value sf = ix.clamp(s, ix.c(0), n), ef = ix.clamp(e, ix.c(0), n);
      Value sb = ix.clamp(s, ix.c(0), last), eb = ix.clamp(e, ix.c(-1), last);
      Value span = ix.sel(forward, ix.sub(ef, sf), ix.sub(sb, eb));
      Value absK = ix.sel(forward, k, ix.sub(ix.c(0), k));
      Value len =
          ix.sel(ix.lt(ix.c(0), span),
                 ix.add(ix.div(ix.sub(span, ix.c(1)), absK), ix.c(1)), ix.c(0));
      first.push_back(ix.sel(forward, sf, sb));
      step.push_back(k);
      sizes.push_back(ix.sel(ok, len, ix.c(0)));
    }
    return tabulate(rw, loc, o.getType(), sizes,
                    [&](OpBuilder &b, Location l, ValueRange i) -> Value {
                      Ix bx{b, l};
                      SmallVector<Value> at;
                      for (int64_t d = 0; d < rank; ++d)
                        at.push_back(bx.add(first[d], bx.mul(i[d], step[d])));
                      return b.create<tensor::ExtractOp>(l, x, at);
                    });
  }

  /// An scf.index_switch on `key` with one case per entry of `cases`, each
  /// building its `type` result with `build(case)`; the default yields an
  /// empty tensor (the run has failed a check by then).
  Value switchOn(Location loc, Value key, ArrayRef<int64_t> cases,
                 RankedTensorType type, function_ref<Value(int64_t)> build) {
    auto sw = rw.create<scf::IndexSwitchOp>(loc, TypeRange{type}, key, cases,
                                            cases.size());
    OpBuilder::InsertionGuard guard(rw);
    for (auto [i, c] : llvm::enumerate(cases)) {
      rw.createBlock(&sw.getCaseRegions()[i]);
      Value v = build(c);
      if (v.getType() != type)
        v = rw.create<tensor::CastOp>(loc, type, v);
      rw.create<scf::YieldOp>(loc, v);
    }
    rw.createBlock(&sw.getDefaultRegion());
    SmallVector<Value> zeros(type.getNumDynamicDims(), indexConst(rw, loc, 0));
    rw.create<scf::YieldOp>(loc, emptyOf(rw, loc, type, zeros));
    return sw.getResult(0);
  }

  FailureOr<Value> dynamicReduceSum(DynamicReduceSumOp o) {
    Location loc = o.getLoc();
    Ix ix{rw, loc};
    Value x = o.getX();
    RankedTensorType xt = tensorType(x), type = o.getType();
    int64_t rank = xt.getRank();
    bool keepdims = o.getKeepdims();
    // The static result type of reducing `axes`.
    auto reducedType = [&](ArrayRef<int64_t> axes) {
      SmallVector<int64_t> shape;
      for (int64_t d = 0; d < rank; ++d) {
        if (!llvm::is_contained(axes, d))
          shape.push_back(xt.getDimSize(d));
        else if (keepdims)
          shape.push_back(1);
      }
      return xt.clone(shape);
    };
    auto reduceOver = [&](ArrayRef<int64_t> axes) -> Value {
      if (axes.empty())
        return x;
      return reduce(loc, ReduceKind::Sum, x, axes, keepdims, reducedType(axes));
    };
    SmallVector<Value> raw = entries(loc, o.getAxes());
    if (raw.empty()) {
      Value r = o.getNoopWithEmptyAxes() ? x : reduceOver(dimRange(0, rank));
      return rw.create<tensor::CastOp>(loc, type, r).getResult();
    }
    // Every set of k distinct axes, keyed by its bit mask.
    int64_t k = raw.size();
    SmallVector<int64_t> masks;
    for (int64_t m = 0; m < (int64_t(1) << rank); ++m)
      if (llvm::popcount(uint64_t(m)) == k)
        masks.push_back(m);
    if (masks.size() > 256)
      return o.emitError() << "run-time axes over rank " << rank
                           << " have too many possible sets to compile";
    auto [axes, ok] = axesIn(ix, raw, ix.c(rank));
    check(o, ok, "the axes are out of range or repeat one");
    Value key = ix.c(0);
    for (Value a : axes)
      key = ix.add(key, rw.create<arith::ShLIOp>(loc, ix.c(1), a));
    return switchOn(loc, key, masks, type, [&](int64_t m) {
      SmallVector<int64_t> set;
      for (int64_t d = 0; d < rank; ++d)
        if (m & (int64_t(1) << d))
          set.push_back(d);
      return reduceOver(set);
    });
  }

  Value dynamicCumSum(DynamicCumSumOp o) {
    Location loc = o.getLoc();
    Ix ix{rw, loc};
    RankedTensorType type = o.getType();
    int64_t rank = type.getRank();
    auto [axes, ok] = axesIn(ix, entries(loc, o.getAxis()), ix.c(rank));
    check(o, ok, "the axis is out of range");
    return switchOn(loc, axes.front(), dimRange(0, rank), type,
                    [&](int64_t axis) {
                      return cumsumAlong(loc, o.getX(), type, axis,
                                         o.getExclusive(), o.getReverse());
                    });
  }

  Value dynamicFill(DynamicFillOp o) {
    Location loc = o.getLoc();
    Ix ix{rw, loc};
    SmallVector<Value> dims = entries(loc, o.getShape());
    Value ok = ix.yes();
    for (Value &d : dims) {
      ok = ix.both(ok, ix.le(ix.c(0), d));
      d = ix.max(d, ix.c(0));
    }
    check(o, ok, "the shape has a negative entry");
    Value value =
        rw.create<arith::ConstantOp>(loc, cast<TypedAttr>(o.getValue()));
    return filled(rw, loc, o.getType(), dims, value);
  }

  Value dynamicBroadcast(DynamicBroadcastOp o) {
    Location loc = o.getLoc();
    Ix ix{rw, loc};
    Value x = o.getX();
    RankedTensorType type = o.getType();
    SmallVector<Value> in = dimsOf(loc, x), shape = entries(loc, o.getShape());
    int64_t rank = type.getRank(), xr = in.size(), n = shape.size();
    SmallVector<Value> dims, xOne;
    Value ok = ix.yes();
    for (int64_t p = 0; p < rank; ++p) {
      Value xd = p - (rank - xr) >= 0 ? in[p - (rank - xr)] : ix.c(1);
      Value sd = p - (rank - n) >= 0 ? shape[p - (rank - n)] : ix.c(1);
      Value one = ix.eq(xd, ix.c(1));
      ok = ix.both(
          ok, ix.either(one, ix.either(ix.eq(sd, ix.c(1)), ix.eq(sd, xd))));
      ok = ix.both(ok, ix.le(ix.c(0), sd));
      dims.push_back(ix.sel(one, ix.max(sd, ix.c(0)), xd));
      if (p - (rank - xr) >= 0)
        xOne.push_back(one);
    }
    check(o, ok, "the shape does not broadcast with the input");
    for (Value &d : dims)
      d = ix.sel(ok, d, ix.c(0));
    return tabulate(rw, loc, type, dynamicOnly(type, dims),
                    [&](OpBuilder &b, Location l, ValueRange i) -> Value {
                      Ix bx{b, l};
                      SmallVector<Value> at;
                      for (int64_t d = 0; d < xr; ++d)
                        at.push_back(
                            bx.sel(xOne[d], bx.c(0), i[rank - xr + d]));
                      return b.create<tensor::ExtractOp>(l, x, at);
                    });
  }

  Value range(RangeOp o) {
    Location loc = o.getLoc();
    Ix ix{rw, loc};
    Type elem = o.getType().getElementType();
    auto scalar = [&](Value t) -> Value {
      return rw.create<tensor::ExtractOp>(loc, t, ValueRange{});
    };
    Value start = scalar(o.getStart()), limit = scalar(o.getLimit()),
          delta = scalar(o.getDelta());
    Value zero = scalarConst(rw, loc, elem, 0), count, ok;
    if (isa<FloatType>(elem)) {
      ok =
          rw.create<arith::CmpFOp>(loc, arith::CmpFPredicate::ONE, delta, zero);
      Value q = rw.create<arith::DivFOp>(
          loc, rw.create<arith::SubFOp>(loc, limit, start), delta);
      q = rw.create<math::CeilOp>(loc, q);
      // NaN or huge counts become 0 with the failed check below.
      Value f64 = convertScalar(rw, loc, q, rw.getF64Type());
      Value finite = rw.create<arith::CmpFOp>(
          loc, arith::CmpFPredicate::OLT, f64,
          rw.create<arith::ConstantOp>(loc, rw.getF64FloatAttr(1e15)));
      ok = ix.both(ok, finite);
      f64 = rw.create<arith::SelectOp>(
          loc, finite, f64,
          rw.create<arith::ConstantOp>(loc, rw.getF64FloatAttr(0)));
      count = rw.create<arith::IndexCastOp>(
          loc, rw.getIndexType(),
          rw.create<arith::FPToSIOp>(loc, rw.getI64Type(), f64));
    } else {
      ok = rw.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, delta, zero);
      Value one = scalarConst(rw, loc, elem, 1);
      Value safe = rw.create<arith::SelectOp>(loc, ok, delta, one);
      // ceil((limit - start) / delta): the truncated quotient, one up when
      // the remainder is left and has delta's sign.
      Value span = rw.create<arith::SubIOp>(loc, limit, start);
      Value q = rw.create<arith::DivSIOp>(loc, span, safe);
      Value rem = rw.create<arith::RemSIOp>(loc, span, safe);
      auto negative = [&](Value v) -> Value {
        return rw.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, v,
                                        zero);
      };
      Value up = rw.create<arith::AndIOp>(
          loc,
          rw.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, rem, zero),
          rw.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, negative(rem),
                                   negative(safe)));
      q = rw.create<arith::SelectOp>(loc, up,
                                     rw.create<arith::AddIOp>(loc, q, one), q);
      count = rw.create<arith::IndexCastOp>(loc, rw.getIndexType(), q);
    }
    check(o, ok, "delta is 0, or the count is not finite");
    count = ix.sel(ok, ix.max(count, ix.c(0)), ix.c(0));
    return tabulate(rw, loc, o.getType(), {count},
                    [&](OpBuilder &b, Location l, ValueRange i) -> Value {
                      Value f =
                          b.create<arith::IndexCastOp>(l, b.getI64Type(), i[0]);
                      f = convertScalar(b, l, f, elem);
                      return addScalar(b, l, start, mulScalar(b, l, f, delta));
                    });
  }

  Value dynamicTile(DynamicTileOp o) {
    Location loc = o.getLoc();
    Ix ix{rw, loc};
    Value x = o.getX();
    SmallVector<Value> in = dimsOf(loc, x), reps = entries(loc, o.getRepeats());
    Value ok = ix.yes();
    SmallVector<Value> dims;
    for (auto [n, r] : llvm::zip(in, reps)) {
      ok = ix.both(ok, ix.le(ix.c(0), r));
      dims.push_back(ix.mul(n, ix.max(r, ix.c(0))));
    }
    check(o, ok, "a repeat count is negative");
    return tabulate(rw, loc, o.getType(), dims,
                    [&](OpBuilder &b, Location l, ValueRange i) -> Value {
                      SmallVector<Value> at;
                      for (auto [d, n] : llvm::enumerate(in))
                        at.push_back(b.create<arith::RemUIOp>(l, i[d], n));
                      return b.create<tensor::ExtractOp>(l, x, at);
                    });
  }

  Value dynamicPad(DynamicPadOp o) {
    Location loc = o.getLoc();
    Ix ix{rw, loc};
    Value x = o.getX();
    SmallVector<Value> in = dimsOf(loc, x), pads = entries(loc, o.getPads());
    int64_t rank = in.size();
    PadMode mode = o.getMode();
    Value ok = ix.yes();
    SmallVector<Value> dims;
    for (int64_t d = 0; d < rank; ++d) {
      Value size = ix.add(in[d], ix.add(pads[d], pads[rank + d]));
      ok = ix.both(ok, ix.le(ix.c(0), size));
      // Reflect and edge read the input: it must have elements (reflect:
      // more than the pads).
      Value empty = ix.eq(in[d], ix.c(0));
      if (mode != PadMode::constant)
        ok = ix.both(ok, ix.either(ix.no(empty), ix.eq(size, ix.c(0))));
      if (mode == PadMode::reflect)
        ok = ix.both(
            ok, ix.both(ix.lt(pads[d], in[d]), ix.lt(pads[rank + d], in[d])));
      dims.push_back(size);
    }
    check(o, ok,
          "the pads make a negative size or, with reflect or edge, "
          "reach past the input");
    for (Value &d : dims)
      d = ix.sel(ok, d, ix.c(0));
    Value value = rw.create<tensor::ExtractOp>(loc, o.getValue(), ValueRange{});
    return tabulate(
        rw, loc, o.getType(), dims,
        [&](OpBuilder &b, Location l, ValueRange i) -> Value {
          Ix bx{b, l};
          SmallVector<Value> at;
          Value inside = bx.yes();
          for (int64_t d = 0; d < rank; ++d) {
            Value p = bx.sub(i[d], pads[d]), last = bx.sub(in[d], bx.c(1));
            if (mode == PadMode::constant) {
              inside =
                  bx.both(inside, bx.both(bx.le(bx.c(0), p), bx.lt(p, in[d])));
            } else if (mode == PadMode::reflect) {
              // |p|, then mirrored at the last element: last - |last - p|.
              p = bx.max(p, bx.sub(bx.c(0), p));
              Value over = bx.sub(last, p);
              p = bx.sub(last, bx.max(over, bx.sub(bx.c(0), over)));
            }
            at.push_back(bx.clamp(p, bx.c(0), bx.max(last, bx.c(0))));
          }
          if (mode != PadMode::constant)
            return b.create<tensor::ExtractOp>(l, x, at);
          auto read = b.create<scf::IfOp>(
              l, inside,
              [&](OpBuilder &tb, Location tl) {
                tb.create<scf::YieldOp>(
                    tl, tb.create<tensor::ExtractOp>(tl, x, at).getResult());
              },
              [&](OpBuilder &eb, Location el) {
                eb.create<scf::YieldOp>(el, value);
              });
          return read.getResult(0);
        });
  }

  IRRewriter &rw;
};

struct GraphToLinalgPass
    : PassWrapper<GraphToLinalgPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(GraphToLinalgPass)

  StringRef getArgument() const override { return "graph-to-linalg"; }
  StringRef getDescription() const override {
    return "Lower graph ops to linalg, tensor, arith and math on tensors";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, cf::ControlFlowDialect,
                    linalg::LinalgDialect, math::MathDialect, scf::SCFDialect,
                    tensor::TensorDialect>();
  }

  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<GraphDialect>(op->getDialect()))
        ops.push_back(op);
    });
    IRRewriter rw(&getContext());
    Lowering lowering(rw);
    bool failedAny = false;
    for (Operation *op : ops) {
      rw.setInsertionPoint(op);
      FailureOr<SmallVector<Value>> lowered = lowering.lowerAll(op);
      if (failed(lowered)) {
        op->emitError() << "'" << op->getName()
                        << "' has no lowering to linalg yet";
        failedAny = true;
        continue;
      }
      rw.replaceOp(op, *lowered);
    }
    if (failedAny)
      return signalPassFailure();
    // Ops nested in kernel.fusion regions are lowered in place. A region
    // whose ops all lowered to their operands (inference dropout, a
    // broadcast to the same shape) is replaced by what it forwards: an
    // empty body is invalid.
    SmallVector<Operation *> fusions;
    getOperation().walk(
        [&](loom::kernel::FusionOp op) { fusions.push_back(op); });
    if (fusions.empty())
      return;
    RewritePatternSet patterns(&getContext());
    loom::kernel::FusionOp::getCanonicalizationPatterns(patterns,
                                                        &getContext());
    GreedyRewriteConfig config;
    config.strictMode = GreedyRewriteStrictness::ExistingOps;
    (void)applyOpPatternsAndFold(fusions, std::move(patterns), config);
  }
};

} // namespace

std::unique_ptr<Pass> loom::createGraphToLinalgPass() {
  return std::make_unique<GraphToLinalgPass>();
}

void loom::registerConversionPasses() { PassRegistration<GraphToLinalgPass>(); }
