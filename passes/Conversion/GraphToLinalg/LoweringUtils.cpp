//===- LoweringUtils.cpp - helpers shared by the graph lowerings ----------===//

#include "LoweringUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace loom::graph;

namespace loom::graph_to_linalg {

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

bool isFloat(Type t) { return isa<FloatType>(t); }

Value scalarConst(OpBuilder &b, Location loc, Type type, double value) {
  if (auto f = dyn_cast<FloatType>(type))
    return b.create<arith::ConstantOp>(loc, b.getFloatAttr(f, value));
  return b.create<arith::ConstantOp>(
      loc, b.getIntegerAttr(type, APInt(type.getIntOrFloatBitWidth(),
                                        (int64_t)value, /*isSigned=*/true)));
}

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

FailureOr<Value> elementwise(OpBuilder &b, Location loc, RankedTensorType type,
                             ValueRange operands, ScalarFn fn) {
  auto sizes = dynamicSizes(b, loc, type, operands);
  if (failed(sizes))
    return failure();
  // Two operands' dynamic dims at one position must agree at run time
  // (graph IR broadcasts only a static 1): checked, and each operand then
  // viewed at the smaller size, so that a failed check keeps the loops in
  // bounds until the run returns its error.
  SmallVector<Value> checkedSize(type.getRank());
  for (int64_t i = 0, k = 0; i < type.getRank(); ++i) {
    if (!type.isDynamicDim(i))
      continue;
    Value &size = (*sizes)[k++];
    Value ok, first;
    for (Value v : operands) {
      RankedTensorType t = tensorType(v);
      int64_t j = i - (type.getRank() - t.getRank());
      if (j < 0 || !t.isDynamicDim(j))
        continue;
      // The first such operand gave `size`; the same value again agrees.
      if (!first || v == first) {
        first = v;
        continue;
      }
      Value dim = b.create<tensor::DimOp>(loc, v, j);
      Value same =
          b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, dim, size);
      ok = ok ? b.create<arith::AndIOp>(loc, ok, same) : same;
      size = b.create<arith::MinUIOp>(loc, size, dim);
    }
    if (!ok)
      continue;
    checkedSize[i] = size;
    std::string where = "elementwise op";
    Location named = loc;
    if (auto fused = dyn_cast<FusedLoc>(loc);
        fused && !fused.getLocations().empty())
      named = fused.getLocations().front();
    if (auto name = dyn_cast<NameLoc>(named))
      where += " (node '" + name.getName().str() + "')";
    b.create<cf::AssertOp>(loc, ok,
                           where + ": operands' sizes of dim " +
                               std::to_string(i) +
                               " differ at run time (only a size fixed at 1 "
                               "broadcasts)");
  }
  SmallVector<Value> viewed(operands.begin(), operands.end());
  for (Value &v : viewed) {
    RankedTensorType t = tensorType(v);
    int64_t offset = type.getRank() - t.getRank();
    bool cut = false;
    SmallVector<OpFoldResult> offsets, sizesOf, strides;
    for (int64_t j = 0; j < t.getRank(); ++j) {
      offsets.push_back(b.getIndexAttr(0));
      strides.push_back(b.getIndexAttr(1));
      Value checked = checkedSize[j + offset];
      if (t.isDynamicDim(j) && checked) {
        sizesOf.push_back(checked);
        cut = true;
      } else if (t.isDynamicDim(j)) {
        sizesOf.push_back(b.create<tensor::DimOp>(loc, v, j).getResult());
      } else {
        sizesOf.push_back(b.getIndexAttr(t.getDimSize(j)));
      }
    }
    if (cut)
      v = b.create<tensor::ExtractSliceOp>(loc, t, v, offsets, sizesOf,
                                           strides);
  }
  operands = viewed;
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
  // Booleans and unsigned integers widen and convert as unsigned.
  bool fromUnsigned = isUnsignedScalar(from);
  if (isFloat(to))
    return fromUnsigned ? (Value)b.create<arith::UIToFPOp>(loc, to, x)
                        : b.create<arith::SIToFPOp>(loc, to, x);
  if (isFloat(from))
    return to.isUnsignedInteger() ? (Value)b.create<arith::FPToUIOp>(loc, to, x)
                                  : b.create<arith::FPToSIOp>(loc, to, x);
  unsigned fw = from.getIntOrFloatBitWidth(), tw = to.getIntOrFloatBitWidth();
  if (fw == tw) // only the signedness differs: the same bits
    return b.create<arith::BitcastOp>(loc, to, x);
  if (fw < tw)
    return fromUnsigned ? (Value)b.create<arith::ExtUIOp>(loc, to, x)
                        : b.create<arith::ExtSIOp>(loc, to, x);
  return b.create<arith::TruncIOp>(loc, to, x);
}

bool isUnsignedScalar(Type t) {
  return t.isInteger(1) || t.isUnsignedInteger();
}

Value maxScalar(OpBuilder &b, Location loc, Value x, Value y) {
  if (x.getType().isUnsignedInteger())
    return b.create<arith::MaxUIOp>(loc, x, y);
  return floatOrInt<arith::MaximumFOp, arith::MaxSIOp>(b, loc, x, y);
}

Value minScalar(OpBuilder &b, Location loc, Value x, Value y) {
  if (x.getType().isUnsignedInteger())
    return b.create<arith::MinUIOp>(loc, x, y);
  return floatOrInt<arith::MinimumFOp, arith::MinSIOp>(b, loc, x, y);
}

Value divScalar(OpBuilder &b, Location loc, Value x, Value y) {
  if (x.getType().isUnsignedInteger())
    return b.create<arith::DivUIOp>(loc, x, y);
  return floatOrInt<arith::DivFOp, arith::DivSIOp>(b, loc, x, y);
}

Value remScalar(OpBuilder &b, Location loc, Value x, Value y) {
  if (x.getType().isUnsignedInteger())
    return b.create<arith::RemUIOp>(loc, x, y);
  return floatOrInt<arith::RemFOp, arith::RemSIOp>(b, loc, x, y);
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
  // Signed, except for i1 (false < true) and unsigned integers.
  bool u = isUnsignedScalar(x.getType());
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

Value rsqrtScalar(OpBuilder &b, Location loc, Value x) {
  return b.create<arith::DivFOp>(loc, scalarConst(b, loc, x.getType(), 1),
                                 b.create<math::SqrtOp>(loc, x));
}

Value emptyOf(OpBuilder &b, Location loc, RankedTensorType type,
              ValueRange sizes) {
  return b.create<tensor::EmptyOp>(loc, type.getShape(), type.getElementType(),
                                   sizes);
}

Value dimOf(OpBuilder &b, Location loc, Value v, int64_t i) {
  int64_t d = tensorType(v).getDimSize(i);
  if (ShapedType::isDynamic(d))
    return b.create<tensor::DimOp>(loc, v, i);
  return b.create<arith::ConstantIndexOp>(loc, d);
}

Value extremeConst(OpBuilder &b, Location loc, Type elem, bool max) {
  if (auto f = dyn_cast<FloatType>(elem))
    return b.create<arith::ConstantOp>(
        loc, b.getFloatAttr(f, APFloat::getInf(f.getFloatSemantics(), !max)));
  unsigned w = elem.getIntOrFloatBitWidth();
  APInt v =
      w == 1 || elem.isUnsignedInteger()
          ? (max ? APInt::getMaxValue(w) : APInt::getZero(w))
          : (max ? APInt::getSignedMaxValue(w) : APInt::getSignedMinValue(w));
  return b.create<arith::ConstantOp>(loc, b.getIntegerAttr(elem, v));
}

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

SmallVector<Value> dynamicDimsOf(OpBuilder &b, Location loc, Value v) {
  SmallVector<Value> sizes;
  RankedTensorType t = tensorType(v);
  for (int64_t i = 0; i < t.getRank(); ++i)
    if (t.isDynamicDim(i))
      sizes.push_back(b.create<tensor::DimOp>(loc, v, i));
  return sizes;
}

AffineMap projection(MLIRContext *ctx, int64_t rank, ArrayRef<int64_t> dims) {
  SmallVector<AffineExpr> exprs;
  for (int64_t d : dims)
    exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(rank, 0, exprs, ctx);
}

SmallVector<int64_t> dimRange(int64_t from, int64_t to) {
  return llvm::to_vector(llvm::seq<int64_t>(from, to));
}

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

Value filled(OpBuilder &b, Location loc, RankedTensorType type,
             ValueRange sizes, Value value) {
  Value empty = b.create<tensor::EmptyOp>(loc, type.getShape(),
                                          type.getElementType(), sizes);
  return b.create<linalg::FillOp>(loc, value, empty).getResult(0);
}

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

Value countOf(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> dims,
              Type elem) {
  Value count = b.create<arith::ConstantIndexOp>(loc, 1);
  for (int64_t d : dims)
    count = b.create<arith::MulIOp>(loc, count, dimOf(b, loc, x, d));
  return convertScalar(
      b, loc, b.create<arith::IndexCastOp>(loc, b.getI64Type(), count), elem);
}

SmallVector<bool> dimFlags(int64_t rank, ArrayRef<int64_t> dims) {
  SmallVector<bool> flags(rank, false);
  for (int64_t d : dims)
    flags[d] = true;
  return flags;
}

Value indexConst(OpBuilder &b, Location loc, int64_t v) {
  return b.create<arith::ConstantIndexOp>(loc, v);
}

Value indexValue(OpBuilder &b, Location loc, OpFoldResult v) {
  if (auto attr = dyn_cast<Attribute>(v))
    return indexConst(b, loc, cast<IntegerAttr>(attr).getInt());
  return cast<Value>(v);
}

Value normalizeIndex(OpBuilder &b, Location loc, Value i, Value n) {
  Value idx = b.create<arith::IndexCastOp>(loc, b.getIndexType(), i);
  Value zero = indexConst(b, loc, 0);
  Value neg =
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, idx, zero);
  Value wrapped = b.create<arith::SelectOp>(
      loc, neg, b.create<arith::AddIOp>(loc, idx, n), idx);
  Value last = b.create<arith::SubIOp>(loc, n, indexConst(b, loc, 1));
  return b.create<arith::MaxSIOp>(
      loc, b.create<arith::MinSIOp>(loc, wrapped, last), zero);
}

void checkIndices(OpBuilder &b, Operation *op, Value indices, Value n) {
  Location loc = op->getLoc();
  RankedTensorType t = tensorType(indices);
  Type i1 = b.getI1Type();
  Value init = b.create<tensor::EmptyOp>(loc, ArrayRef<int64_t>{}, i1);
  init = b.create<linalg::FillOp>(loc, scalarConst(b, loc, i1, 1), init)
             .getResult(0);
  SmallVector<AffineMap> maps = {
      b.getMultiDimIdentityMap(t.getRank()),
      AffineMap::get(t.getRank(), 0, {}, b.getContext())};
  SmallVector<utils::IteratorType> iterators(t.getRank(),
                                             utils::IteratorType::reduction);
  Value bound =
      b.create<arith::IndexCastOp>(loc, t.getElementType(), n).getResult();
  auto all = b.create<linalg::GenericOp>(
      loc, TypeRange{init.getType()}, ValueRange{indices}, ValueRange{init},
      maps, iterators, [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value low = nb.create<arith::SubIOp>(
            nl, scalarConst(nb, nl, t.getElementType(), 0), bound);
        Value in = nb.create<arith::AndIOp>(
            nl,
            nb.create<arith::CmpIOp>(nl, arith::CmpIPredicate::sge, a[0], low),
            nb.create<arith::CmpIOp>(nl, arith::CmpIPredicate::slt, a[0],
                                     bound));
        nb.create<linalg::YieldOp>(
            nl, nb.create<arith::AndIOp>(nl, in, a[1]).getResult());
      });
  Value ok = b.create<tensor::ExtractOp>(loc, all.getResult(0), ValueRange{});
  runtimeCheck(b, op, ok, "an index is out of range for its dim");
}

SmallVector<Value> loopIndices(OpBuilder &b, Location loc, int64_t rank) {
  SmallVector<Value> indices;
  for (int64_t i = 0; i < rank; ++i)
    indices.push_back(b.create<linalg::IndexOp>(loc, i));
  return indices;
}

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

std::pair<RankedTensorType, SmallVector<OpFoldResult>>
withUnitDim(OpBuilder &b, Location loc, Value v, int64_t at) {
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, v);
  sizes.insert(sizes.begin() + at, b.getIndexAttr(1));
  SmallVector<int64_t> shape(tensorType(v).getShape());
  shape.insert(shape.begin() + at, 1);
  return {tensorType(v).clone(shape), sizes};
}

Value reshapeTo(OpBuilder &builder, Location loc, Value x,
                RankedTensorType type,
                function_ref<Value(int64_t)> dynamicSize) {
  SmallVector<Value> dims;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    Value size =
        type.isDynamicDim(i)
            ? dynamicSize(i)
            : builder.create<arith::ConstantIndexOp>(loc, type.getDimSize(i));
    dims.push_back(size);
  }
  auto shapeType =
      RankedTensorType::get({type.getRank()}, builder.getIndexType());
  Value shape = builder.create<tensor::FromElementsOp>(loc, shapeType, dims);
  return builder.create<tensor::ReshapeOp>(loc, type, x, shape);
}

SmallVector<Value> entries(OpBuilder &builder, Location loc, Value t) {
  RankedTensorType type = tensorType(t);
  SmallVector<Value> out;
  int64_t n = type.getRank() == 0 ? 1 : type.getDimSize(0);
  for (int64_t i = 0; i < n; ++i) {
    SmallVector<Value> at;
    if (type.getRank() == 1)
      at.push_back(indexConst(builder, loc, i));
    Value v = builder.create<tensor::ExtractOp>(loc, t, at);
    out.push_back(
        builder.create<arith::IndexCastOp>(loc, builder.getIndexType(), v));
  }
  return out;
}

void runtimeCheck(OpBuilder &builder, Operation *op, Value ok,
                  const Twine &what) {
  std::string where = op->getName().getStringRef().str();
  Location loc = op->getLoc();
  if (auto fused = dyn_cast<FusedLoc>(loc);
      fused && !fused.getLocations().empty())
    loc = fused.getLocations().front();
  if (auto name = dyn_cast<NameLoc>(loc))
    where += " (node '" + name.getName().str() + "')";
  builder.create<cf::AssertOp>(op->getLoc(), ok, (where + ": " + what).str());
}

std::pair<SmallVector<Value>, Value> axesIn(IndexBuilder &ix,
                                            ArrayRef<Value> raw, Value rank) {
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

SmallVector<Value> dynamicOnly(RankedTensorType type, ArrayRef<Value> dims) {
  SmallVector<Value> out;
  for (auto [i, d] : llvm::enumerate(dims))
    if (type.isDynamicDim(i))
      out.push_back(d);
  return out;
}

Value reshapeChecked(OpBuilder &builder, Location loc, Value x,
                     RankedTensorType type, SmallVector<Value> dims, Value ok) {
  IndexBuilder ix{builder, loc};
  for (Value &d : dims)
    d = ix.sel(ok, d, ix.c(0));
  return reshapeTo(builder, loc, x, type, [&](int64_t i) { return dims[i]; });
}

SmallVector<Value> dimsOf(OpBuilder &builder, Location loc, Value x) {
  SmallVector<Value> dims;
  for (int64_t i = 0; i < tensorType(x).getRank(); ++i)
    dims.push_back(dimOf(builder, loc, x, i));
  return dims;
}

Value product(IndexBuilder &ix, ArrayRef<Value> values) {
  Value p = ix.c(1);
  for (Value v : values)
    p = ix.mul(p, v);
  return p;
}

} // namespace loom::graph_to_linalg
