//===- LoweringUtils.h - helpers shared by the graph lowerings --*- C++ -*-===//
//
// Private to passes/Conversion/GraphToLinalg: the builders every family of
// graph-to-linalg patterns uses (broadcasting generics, reductions over
// rows, scalar arithmetic on any element type, run-time checks of shape
// parameters), and the populate functions of the families.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_CONVERSION_GRAPHTOLINALG_LOWERINGUTILS_H
#define LOOM_PASSES_CONVERSION_GRAPHTOLINALG_LOWERINGUTILS_H

#include "dialects/graph/GraphOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"

#include <type_traits>
#include <utility>

namespace loom {

/// Elementwise graph ops (NumPy broadcasting) and dropout: one
/// linalg.generic each.
void populateGraphToLinalgElementwisePatterns(
    mlir::RewritePatternSet &patterns);

/// Reductions, arg-reductions, softmax, the norms, the losses, cumsum and
/// top_k: linalg.generic with reduction iterators.
void populateGraphToLinalgReductionPatterns(mlir::RewritePatternSet &patterns);

/// Matmul, convolution and pooling.
void populateGraphToLinalgContractionPatterns(
    mlir::RewritePatternSet &patterns);

/// graph.conv_integer: one contraction generic over the grouped layout
/// (IntegerConv.cpp).
void populateGraphToLinalgIntegerConvPatterns(
    mlir::RewritePatternSet &patterns);

/// Constants, fills, iota, transpose, reshapes, concat, slice, gathers,
/// pad, trilu and scatter_elements.
void populateGraphToLinalgDataMovementPatterns(
    mlir::RewritePatternSet &patterns);

/// resize and dynamic_resize.
void populateGraphToLinalgResizePatterns(mlir::RewritePatternSet &patterns);

/// The ops whose shapes come from run-time tensors (graph.dynamic_*,
/// graph.range).
void populateGraphToLinalgDynamicShapePatterns(
    mlir::RewritePatternSet &patterns);

/// graph.if and graph.loop: scf.if and scf.while on tensors (ControlFlow.cpp).
void populateGraphToLinalgControlFlowPatterns(
    mlir::RewritePatternSet &patterns);

/// The random ops: one linalg.generic each over a counter-based generator
/// (Random.cpp).
void populateGraphToLinalgRandomPatterns(mlir::RewritePatternSet &patterns);

namespace graph_to_linalg {

using graph::CompareDirection;
namespace arith = mlir::arith;
namespace utils = mlir::utils;
using mlir::AffineMap;
using mlir::ArrayRef;
using mlir::FailureOr;
using mlir::function_ref;
using mlir::Location;
using mlir::MLIRContext;
using mlir::OpBuilder;
using mlir::Operation;
using mlir::OpFoldResult;
using mlir::OpRewritePattern;
using mlir::PatternRewriter;
using mlir::RankedTensorType;
using mlir::SmallVector;
using mlir::Twine;
using mlir::Type;
using mlir::Value;
using mlir::ValueRange;

/// The pattern that replaces each `OpT` with the value(s) that
/// `lower(builder, op)` builds before it (a `Value`, a
/// `FailureOr<Value>` or a `SmallVector<Value>`); when `lower` fails the op
/// stays and the pattern fails.
template <typename OpT, auto lower>
struct LowerOpPattern final : OpRewritePattern<OpT> {
  using OpRewritePattern<OpT>::OpRewritePattern;

  mlir::LogicalResult
  matchAndRewrite(OpT op, PatternRewriter &rewriter) const override {
    auto lowered = lower(rewriter, op);
    if constexpr (std::is_same_v<decltype(lowered), FailureOr<Value>>) {
      if (mlir::failed(lowered))
        return mlir::failure();
      rewriter.replaceOp(op, *lowered);
    } else {
      rewriter.replaceOp(op, lowered);
    }
    return mlir::success();
  }
};

/// The ranked tensor type of `v`.
RankedTensorType tensorType(Value v);

/// Whether `t` is a float type.
bool isFloat(Type t);

/// A scalar constant of element type `type`.
Value scalarConst(OpBuilder &b, Location loc, Type type, double value);

/// The sizes of `type`'s dynamic dims, each read with tensor.dim from the
/// first source (right-aligned, as in broadcasting) whose dim there is
/// dynamic too. Fails when none has it.
FailureOr<SmallVector<Value>> dynamicSizes(OpBuilder &b, Location loc,
                                           RankedTensorType type,
                                           ValueRange sources);

/// The map from `result`'s iteration space to an operand broadcast into
/// it: dims aligned on the right, a static size-1 dim that the result
/// widens reads index 0.
AffineMap broadcastMap(RankedTensorType operand, RankedTensorType result);

/// Builds an element of an elementwise result from the operands' elements.
using ScalarFn =
    function_ref<Value(OpBuilder &, Location, ValueRange /*operands*/)>;

/// One linalg.generic over `type` whose body applies `fn` to the broadcast
/// operands.
FailureOr<Value> elementwise(OpBuilder &b, Location loc, RankedTensorType type,
                             ValueRange operands, ScalarFn fn);

/// Converts scalar `x` to element type `to`: float to integer rounds
/// toward zero, anything to i1 tests != 0, i1 widens as 0 / 1.
Value convertScalar(OpBuilder &b, Location loc, Value x, Type to);

/// `FOp` on floats, `IOp` (signed) on integers.
template <typename FOp, typename IOp>
Value floatOrInt(OpBuilder &b, Location loc, Value x, Value y) {
  if (isFloat(x.getType()))
    return b.create<FOp>(loc, x, y);
  return b.create<IOp>(loc, x, y);
}

/// Whether integer arithmetic on `t` is unsigned: i1 and the unsigned
/// integer types (ui8, ...), which the lowering carries until
/// eraseIntegerSignedness makes them signless.
bool isUnsignedScalar(Type t);

/// max / min (NaN-propagating on floats, signed or unsigned as the integer
/// type is), add and mul of two scalars of one type.
Value maxScalar(OpBuilder &b, Location loc, Value x, Value y);

Value minScalar(OpBuilder &b, Location loc, Value x, Value y);

/// x / y and the truncated remainder, signed or unsigned as the integer
/// type is.
Value divScalar(OpBuilder &b, Location loc, Value x, Value y);
Value remScalar(OpBuilder &b, Location loc, Value x, Value y);

Value addScalar(OpBuilder &b, Location loc, Value x, Value y);

Value mulScalar(OpBuilder &b, Location loc, Value x, Value y);

/// `x d y`: ordered float compares except ne (true on NaN); signed integer
/// compares except on i1 (false < true).
Value compareScalar(OpBuilder &b, Location loc, CompareDirection d, Value x,
                    Value y);

/// 1 / sqrt(x): math.rsqrt has no lowering to LLVM (MLIR 19).
Value rsqrtScalar(OpBuilder &b, Location loc, Value x);

/// tensor.empty of `type`, its dynamic sizes given.
Value emptyOf(OpBuilder &b, Location loc, RankedTensorType type,
              ValueRange sizes);

/// A size as an index value: the static size, or tensor.dim of `v`.
Value dimOf(OpBuilder &b, Location loc, Value v, int64_t i);

/// What a reduction computes.
enum class ReduceKind { Sum, Mean, Max, Min, Prod };

/// The largest (`max`) or smallest value of `elem`: an infinity for
/// floats.
Value extremeConst(OpBuilder &b, Location loc, Type elem, bool max);

/// The identity of a reduction's combiner, and the combiner.
Value reductionInit(OpBuilder &b, Location loc, ReduceKind kind, Type elem);

/// The combiner of a reduction: `acc` and the next element `x` combined
/// (on i1, max is or and min is and).
Value reductionCombine(OpBuilder &b, Location loc, ReduceKind kind, Value acc,
                       Value x);

/// The sizes of `v`'s dynamic dims, read with tensor.dim.
SmallVector<Value> dynamicDimsOf(OpBuilder &b, Location loc, Value v);

/// The map from a rank-`rank` iteration space to its dims `dims`.
AffineMap projection(MLIRContext *ctx, int64_t rank, ArrayRef<int64_t> dims);

/// The dims of a rank-`rank` space in [from, to).
SmallVector<int64_t> dimRange(int64_t from, int64_t to);

/// Builds the yielded value of a generic from its block arguments.
using BodyFn =
    function_ref<Value(OpBuilder &, Location, ValueRange /*ins, then out*/)>;

/// A linalg.generic into `init` that reads `ins` through `maps` (one per
/// input, then the output's) and yields `fn(ins..., out)`.
Value generic(OpBuilder &b, Location loc, Value init, ValueRange ins,
              ArrayRef<AffineMap> maps, ArrayRef<utils::IteratorType> iterators,
              BodyFn fn);

/// A tensor of `type` filled with `value`.
Value filled(OpBuilder &b, Location loc, RankedTensorType type,
             ValueRange sizes, Value value);

/// The rows of `x`: its shape without the dims marked `reduced`, their
/// dynamic sizes, and the map from `x`'s dims to them.
struct Rows {
  SmallVector<int64_t> shape;
  SmallVector<Value> sizes;
  AffineMap map;
};

/// The map from a space of `reduced.size()` dims to those not `reduced`.
AffineMap rowMap(MLIRContext *ctx, ArrayRef<bool> reduced);

/// The rows of `x` without the dims marked `reduced`.
Rows rowsOf(OpBuilder &b, Location loc, Value x, ArrayRef<bool> reduced);

/// Reduces `x` over the dims marked `reduced`, from `init`: the body gets
/// (x, rowInputs..., acc), where each row input has the reduced shape.
Value reduceRows(OpBuilder &b, Location loc, Value x, ArrayRef<bool> reduced,
                 Value init, ValueRange rowInputs, BodyFn fn);

/// A tensor of `x`'s shape and element type `elem` whose every element is
/// `fn(x, extras..., out)`, each extra read through its map.
Value mapLike(OpBuilder &b, Location loc, Value x, Type elem, ValueRange extras,
              ArrayRef<AffineMap> extraMaps, BodyFn fn);

/// The number of elements in dims `dims` of `x`, as a scalar of `elem`.
Value countOf(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> dims,
              Type elem);

/// The per-dim flags of `rank` dims with `dims` set.
SmallVector<bool> dimFlags(int64_t rank, ArrayRef<int64_t> dims);

/// An index constant.
Value indexConst(OpBuilder &b, Location loc, int64_t v);

/// `v` as an index value: a constant for an attribute.
Value indexValue(OpBuilder &b, Location loc, OpFoldResult v);

/// An index `i` (from a tensor of indices, any integer type) counted from
/// the end of a dim of size `n` when negative, as an index value, clamped
/// to [0, n - 1] so that an index out of range (which checkIndices
/// reports) never reads or writes outside the data.
Value normalizeIndex(OpBuilder &b, Location loc, Value i, Value n);

/// A run-time check (runtimeCheck) that every element of `indices` is in
/// [-n, n), the range ONNX's Gather, GatherElements and ScatterElements
/// accept for a dim of size `n`.
void checkIndices(OpBuilder &b, Operation *op, Value indices, Value n);

/// The linalg.index of every dim of a rank-`rank` generic.
SmallVector<Value> loopIndices(OpBuilder &b, Location loc, int64_t rank);

/// A tensor of `type` computed element by element: the body gets the
/// loop indices and yields the element.
Value tabulate(OpBuilder &b, Location loc, RankedTensorType type,
               ValueRange sizes,
               function_ref<Value(OpBuilder &, Location, ValueRange)> element);

/// The output size of one window dim as an index value, as windowOutput
/// in GraphOps.cpp: (in + pads - dilation * (k - 1) - 1) / stride + 1,
/// rounded up with `ceilMode` unless the last window would start past the
/// input and its begin padding.
Value windowOutputSize(OpBuilder &b, Location loc, Value in, Value k,
                       int64_t stride, int64_t padBegin, int64_t padEnd,
                       int64_t dilation, bool ceilMode);

/// The shape of `v` with a size-1 dim inserted at `at`, and its sizes.
std::pair<RankedTensorType, SmallVector<OpFoldResult>>
withUnitDim(OpBuilder &b, Location loc, Value v, int64_t at);

/// A reduction over `axes` into the dims that remain, then (mean) the
/// division by the count, then (keepdims) size-1 dims put back to give
/// `type`.
Value reduce(OpBuilder &builder, Location loc, ReduceKind kind, Value x,
             ArrayRef<int64_t> axes, bool keepdims, RankedTensorType type);

/// cumsum of `x` along `axis` into `type` (Reductions.cpp): one generic
/// with an extra reduction dim along the axis.
Value cumsumAlong(OpBuilder &builder, Location loc, Value x,
                  RankedTensorType type, int64_t axis, bool exclusive,
                  bool reverse);

/// The top k along `axis`; `k` (an index) sizes a dynamic axis dim of
/// the results.
SmallVector<Value> topKWith(OpBuilder &builder, Location loc, Value x,
                            RankedTensorType type, RankedTensorType indexType,
                            int64_t axis, bool smallest, Value k);

//===----------------------------------------------------------------------===//
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
//===----------------------------------------------------------------------===//

/// Index arithmetic at the insertion point of `b`.
struct IndexBuilder {
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

/// tensor.reshape of `x` to `type`; the size of each dynamic result dim
/// comes from `dynamicSize(i)`.
Value reshapeTo(OpBuilder &builder, Location loc, Value x,
                RankedTensorType type,
                function_ref<Value(int64_t)> dynamicSize);

/// The entries of the integer parameter tensor `t` (rank 0 or 1, static
/// length) as index values.
SmallVector<Value> entries(OpBuilder &builder, Location loc, Value t);

/// A run-time check: when `ok` is false the run fails with `what`,
/// prefixed with the op and its ONNX node.
void runtimeCheck(OpBuilder &builder, Operation *op, Value ok,
                  const Twine &what);

/// Axes `raw` normalized against `rank`, and whether all are in range and
/// distinct.
std::pair<SmallVector<Value>, Value> axesIn(IndexBuilder &ix,
                                            ArrayRef<Value> raw, Value rank);

/// Sizes of `type`'s dynamic dims among `dims`.
SmallVector<Value> dynamicOnly(RankedTensorType type, ArrayRef<Value> dims);

/// `x` reshaped to `dims` (index values, one per result dim); zero dims
/// when `ok` is false, so a failed check reads nothing.
Value reshapeChecked(OpBuilder &builder, Location loc, Value x,
                     RankedTensorType type, SmallVector<Value> dims, Value ok);

/// The sizes of every dim of `x` as index values.
SmallVector<Value> dimsOf(OpBuilder &builder, Location loc, Value x);

/// The product of `values`.
Value product(IndexBuilder &ix, ArrayRef<Value> values);

} // namespace graph_to_linalg
} // namespace loom

#endif // LOOM_PASSES_CONVERSION_GRAPHTOLINALG_LOWERINGUTILS_H
