//===- Reductions.cpp - reductions and normalizations to linalg -----------===//
//
// Reductions, softmax, the norms and the losses are linalg.generic with
// reduction iterators, their row results read back through projected maps;
// arg-reductions carry the best value and its index in one generic; cumsum
// adds a reduction dim along the axis; top_k is a rank count and a
// selection (two generics).
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace loom::graph;
using namespace loom::graph_to_linalg;

/// A reduction over `axes` into the dims that remain, then (mean) the
/// division by the count, then (keepdims) size-1 dims put back to give
/// `type`.
Value loom::graph_to_linalg::reduce(OpBuilder &builder, Location loc,
                                    ReduceKind kind, Value x,
                                    ArrayRef<int64_t> axes, bool keepdims,
                                    RankedTensorType type) {
  RankedTensorType xt = tensorType(x);
  Type elem = xt.getElementType();
  SmallVector<bool> reduced = dimFlags(xt.getRank(), axes);
  Value r = reduceRows(builder, loc, x, reduced,
                       reductionInit(builder, loc, kind, elem), {},
                       [&](OpBuilder &b, Location l, ValueRange a) {
                         return reductionCombine(b, l, kind, a[1], a[0]);
                       });
  if (kind == ReduceKind::Mean) {
    Value count = countOf(builder, loc, x, axes, elem);
    r = mapLike(builder, loc, r, elem, {}, {},
                [&](OpBuilder &b, Location l, ValueRange a) {
                  return b.create<arith::DivFOp>(l, a[0], count);
                });
  }
  if (!keepdims)
    return r;
  return reshapeTo(builder, loc, r, type, /*dynamicFrom=*/[&](int64_t i) {
    return builder.create<tensor::DimOp>(loc, x, i).getResult();
  });
}

/// Softmax or log-softmax along `axis`, stable: the row max m, the sum
/// s of exp(x - m), then exp(x - m) / s or x - m - log(s).
static Value softmax(OpBuilder &builder, Location loc, Value x, int64_t axis,
                     bool log) {
  RankedTensorType xt = tensorType(x);
  Type elem = xt.getElementType();
  SmallVector<bool> reduced = dimFlags(xt.getRank(), {axis});
  Value m = reduceRows(builder, loc, x, reduced,
                       extremeConst(builder, loc, elem, /*max=*/false), {},
                       [](OpBuilder &b, Location l, ValueRange a) {
                         return maxScalar(b, l, a[1], a[0]);
                       });
  Value s =
      reduceRows(builder, loc, x, reduced, scalarConst(builder, loc, elem, 0),
                 m, [](OpBuilder &b, Location l, ValueRange a) -> Value {
                   Value e = b.create<math::ExpOp>(
                       l, b.create<arith::SubFOp>(l, a[0], a[1]));
                   return b.create<arith::AddFOp>(l, a[2], e);
                 });
  AffineMap rows = rowMap(builder.getContext(), reduced);
  return mapLike(
      builder, loc, x, elem, {m, s}, {rows, rows},
      [&](OpBuilder &b, Location l, ValueRange a) -> Value {
        Value d = b.create<arith::SubFOp>(l, a[0], a[1]);
        if (log)
          return b.create<arith::SubFOp>(l, d, b.create<math::LogOp>(l, a[2]));
        return b.create<arith::DivFOp>(l, b.create<math::ExpOp>(l, d), a[2]);
      });
}

/// Mean over dims [axis, rank), then the biased variance as the mean of
/// (x - mean)^2 (two passes, no cancellation), then
/// (x - mean) * rsqrt(var + eps) * scale + bias.
static Value lowerLayerNorm(OpBuilder &builder, LayerNormOp o) {
  Location loc = o.getLoc();
  Value x = o.getX();
  int64_t rank = tensorType(x).getRank(), axis = o.getAxis();
  Type elem = tensorType(x).getElementType();
  SmallVector<int64_t> dims = dimRange(axis, rank);
  SmallVector<bool> reduced = dimFlags(rank, dims);
  Value n = countOf(builder, loc, x, dims, elem);
  Value zero = scalarConst(builder, loc, elem, 0);
  Value sum = reduceRows(builder, loc, x, reduced, zero, {},
                         [](OpBuilder &b, Location l, ValueRange a) {
                           return b.create<arith::AddFOp>(l, a[1], a[0]);
                         });
  Value mean = mapLike(builder, loc, sum, elem, {}, {},
                       [&](OpBuilder &b, Location l, ValueRange a) {
                         return b.create<arith::DivFOp>(l, a[0], n);
                       });
  Value sq = reduceRows(builder, loc, x, reduced, zero, mean,
                        [](OpBuilder &b, Location l, ValueRange a) -> Value {
                          Value d = b.create<arith::SubFOp>(l, a[0], a[1]);
                          return b.create<arith::AddFOp>(
                              l, a[2], b.create<arith::MulFOp>(l, d, d));
                        });
  AffineMap rows = rowMap(builder.getContext(), reduced);
  AffineMap affine = projection(builder.getContext(), rank, dims);
  SmallVector<Value> extras = {mean, sq, o.getScale()};
  SmallVector<AffineMap> maps = {rows, rows, affine};
  if (Value bias = o.getBias()) {
    extras.push_back(bias);
    maps.push_back(affine);
  }
  Value eps = scalarConst(builder, loc, elem, o.getEpsilon().convertToDouble());
  bool hasBias = o.getBias() != nullptr;
  return mapLike(builder, loc, x, elem, extras, maps,
                 [&](OpBuilder &b, Location l, ValueRange a) {
                   Value var = b.create<arith::DivFOp>(l, a[2], n);
                   Value inv =
                       rsqrtScalar(b, l, b.create<arith::AddFOp>(l, var, eps));
                   Value y = b.create<arith::MulFOp>(
                       l, b.create<arith::SubFOp>(l, a[0], a[1]), inv);
                   y = b.create<arith::MulFOp>(l, y, a[3]);
                   return hasBias ? b.create<arith::AddFOp>(l, y, a[4]) : y;
                 });
}

/// (x - mean) * rsqrt(var + eps) * scale + bias, the statistics read
/// per channel (dim 1).
static Value lowerBatchNorm(OpBuilder &builder, BatchNormOp o) {
  Location loc = o.getLoc();
  Value x = o.getX();
  int64_t rank = tensorType(x).getRank();
  Type elem = tensorType(x).getElementType();
  AffineMap channel = projection(builder.getContext(), rank, {1});
  Value eps = scalarConst(builder, loc, elem, o.getEpsilon().convertToDouble());
  return mapLike(builder, loc, x, elem,
                 {o.getScale(), o.getBias(), o.getMean(), o.getVariance()},
                 {channel, channel, channel, channel},
                 [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                   Value inv =
                       rsqrtScalar(b, l, b.create<arith::AddFOp>(l, a[4], eps));
                   Value y = b.create<arith::MulFOp>(
                       l, b.create<arith::SubFOp>(l, a[0], a[3]), inv);
                   return b.create<arith::AddFOp>(
                       l, b.create<arith::MulFOp>(l, y, a[1]), a[2]);
                 });
}

/// (pred - target)^2, then summed or averaged over every dim.
static FailureOr<Value> lowerMseLoss(OpBuilder &builder, MseLossOp o) {
  Location loc = o.getLoc();
  RankedTensorType pt = tensorType(o.getPred()), tt = tensorType(o.getTarget());
  SmallVector<int64_t> shape;
  for (auto [p, t] : llvm::zip(pt.getShape(), tt.getShape()))
    shape.push_back(ShapedType::isDynamic(p) ? t : p);
  auto sqType = pt.clone(shape);
  auto sq = elementwise(builder, loc, sqType, {o.getPred(), o.getTarget()},
                        [](OpBuilder &b, Location l, ValueRange a) -> Value {
                          Value d = b.create<arith::SubFOp>(l, a[0], a[1]);
                          return b.create<arith::MulFOp>(l, d, d);
                        });
  if (failed(sq) || o.getReduction() == Reduction::none)
    return sq;
  ReduceKind kind =
      o.getReduction() == Reduction::sum ? ReduceKind::Sum : ReduceKind::Mean;
  return reduce(builder, loc, kind, *sq, dimRange(0, pt.getRank()),
                /*keepdims=*/false, o.getType());
}

/// Per row, log(sum(exp(x - m))) + m - x[label] (0 for an ignored row),
/// then the sum, or the mean over the rows not ignored.
static Value lowerCrossEntropy(OpBuilder &builder, CrossEntropyOp o) {
  Location loc = o.getLoc();
  Value logits = o.getLogits(), labels = o.getLabels();
  int64_t rank = tensorType(logits).getRank();
  Type elem = tensorType(logits).getElementType();
  SmallVector<bool> reduced = dimFlags(rank, {rank - 1});
  Value m = reduceRows(builder, loc, logits, reduced,
                       extremeConst(builder, loc, elem, /*max=*/false), {},
                       [](OpBuilder &b, Location l, ValueRange a) {
                         return maxScalar(b, l, a[1], a[0]);
                       });
  Value s = reduceRows(
      builder, loc, logits, reduced, scalarConst(builder, loc, elem, 0), m,
      [](OpBuilder &b, Location l, ValueRange a) -> Value {
        Value e =
            b.create<math::ExpOp>(l, b.create<arith::SubFOp>(l, a[0], a[1]));
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
  AffineMap id = builder.getMultiDimIdentityMap(rank - 1);
  Value loss = mapLike(
      builder, loc, labels, elem, {m, s}, {id, id},
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
        at.push_back(b.create<arith::IndexCastOp>(l, b.getIndexType(), label));
        Value picked = b.create<tensor::ExtractOp>(l, logits, at);
        Value lse =
            b.create<arith::AddFOp>(l, b.create<math::LogOp>(l, a[2]), a[1]);
        Value r = b.create<arith::SubFOp>(l, lse, picked);
        if (ignore)
          r = b.create<arith::SelectOp>(l, keep, r, scalarConst(b, l, elem, 0));
        return r;
      });
  if (o.getReduction() == Reduction::none)
    return loss;
  SmallVector<int64_t> all = dimRange(0, rank - 1);
  if (o.getReduction() == Reduction::sum || !ignore)
    return reduce(builder, loc,
                  o.getReduction() == Reduction::sum ? ReduceKind::Sum
                                                     : ReduceKind::Mean,
                  loss, all, /*keepdims=*/false, o.getType());
  Value total =
      reduce(builder, loc, ReduceKind::Sum, loss, all, false, o.getType());
  Value weights =
      mapLike(builder, loc, labels, elem, {}, {},
              [&](OpBuilder &b, Location l, ValueRange a) {
                return convertScalar(b, l, counted(b, l, a[0]), elem);
              });
  Value count =
      reduce(builder, loc, ReduceKind::Sum, weights, all, false, o.getType());
  return mapLike(builder, loc, total, elem, count,
                 builder.getMultiDimIdentityMap(0),
                 [](OpBuilder &b, Location l, ValueRange a) {
                   return b.create<arith::DivFOp>(l, a[0], a[1]);
                 });
}

/// The index of the first (or last) extreme element along `axis`: one
/// reduction carrying the best value and its index. NaN beats every
/// number, as in NumPy.
static Value argReduce(OpBuilder &builder, Location loc, Value x, int64_t axis,
                       bool isMax, bool last, bool keepdims,
                       RankedTensorType type) {
  RankedTensorType xt = tensorType(x);
  Type elem = xt.getElementType(), indexElem = type.getElementType();
  int64_t rank = xt.getRank();
  SmallVector<bool> reduced = dimFlags(rank, {axis});
  Rows rows = rowsOf(builder, loc, x, reduced);
  Value values =
      filled(builder, loc, RankedTensorType::get(rows.shape, elem), rows.sizes,
             extremeConst(builder, loc, elem, /*max=*/!isMax));
  Value indices =
      filled(builder, loc, RankedTensorType::get(rows.shape, indexElem),
             rows.sizes, scalarConst(builder, loc, indexElem, 0));
  SmallVector<AffineMap> maps = {builder.getMultiDimIdentityMap(rank), rows.map,
                                 rows.map};
  SmallVector<utils::IteratorType> iterators;
  for (bool r : reduced)
    iterators.push_back(r ? utils::IteratorType::reduction
                          : utils::IteratorType::parallel);
  CompareDirection dir =
      isMax ? (last ? CompareDirection::ge : CompareDirection::gt)
            : (last ? CompareDirection::le : CompareDirection::lt);
  auto generic = builder.create<linalg::GenericOp>(
      loc, TypeRange{values.getType(), indices.getType()}, ValueRange{x},
      ValueRange{values, indices}, maps, iterators,
      [&](OpBuilder &b, Location l, ValueRange a) {
        Value take = compareScalar(b, l, dir, a[0], a[1]);
        if (isFloat(elem)) {
          auto isNan = [&](Value v) {
            return b.create<arith::CmpFOp>(l, arith::CmpFPredicate::UNO, v, v);
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
  return reshapeTo(builder, loc, r, type, [&](int64_t i) {
    return builder.create<tensor::DimOp>(loc, x, i).getResult();
  });
}

Value loom::graph_to_linalg::cumsumAlong(OpBuilder &builder, Location loc,
                                         Value x, RankedTensorType type,
                                         int64_t axis, bool exclusive,
                                         bool reverse) {
  MLIRContext *ctx = builder.getContext();
  Type elem = type.getElementType();
  int64_t rank = type.getRank();
  SmallVector<AffineExpr> in;
  for (int64_t d = 0; d < rank; ++d)
    in.push_back(getAffineDimExpr(d == axis ? rank : d, ctx));
  SmallVector<AffineMap> maps = {AffineMap::get(rank + 1, 0, in, ctx),
                                 projection(ctx, rank + 1, dimRange(0, rank))};
  SmallVector<utils::IteratorType> iterators(rank + 1,
                                             utils::IteratorType::parallel);
  iterators[rank] = utils::IteratorType::reduction;
  Value init = filled(builder, loc, type, dynamicDimsOf(builder, loc, x),
                      scalarConst(builder, loc, elem, 0));
  arith::CmpIPredicate p =
      reverse
          ? (exclusive ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::uge)
          : (exclusive ? arith::CmpIPredicate::ult : arith::CmpIPredicate::ule);
  return generic(builder, loc, init, x, maps, iterators,
                 [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                   Value taken = b.create<arith::CmpIOp>(
                       l, p, b.create<linalg::IndexOp>(l, rank),
                       b.create<linalg::IndexOp>(l, axis));
                   Value sum = addScalar(b, l, a[1], a[0]);
                   return b.create<arith::SelectOp>(l, taken, sum, a[1]);
                 });
}

/// y[i] = sum of x[j] over the j that i takes in (j <= i; j < i when
/// exclusive; mirrored when reverse): one generic with an extra reduction
/// dim j along the axis. Quadratic in the axis length; fine for the
/// sequence lengths cumsum sees (position ids, masks).
static Value lowerCumSum(OpBuilder &builder, CumSumOp o) {
  return cumsumAlong(builder, o.getLoc(), o.getX(), o.getType(), o.getAxis(),
                     o.getExclusive(), o.getReverse());
}

/// The top k along `axis`; `k` (an index) sizes a dynamic axis dim of
/// the results.
SmallVector<Value> loom::graph_to_linalg::topKWith(
    OpBuilder &builder, Location loc, Value x, RankedTensorType type,
    RankedTensorType indexType, int64_t axis, bool smallest, Value k) {
  MLIRContext *ctx = builder.getContext();
  RankedTensorType xt = tensorType(x);
  Type elem = xt.getElementType(), i64 = builder.getI64Type();
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
    Value lower = b.create<arith::CmpIOp>(l, arith::CmpIPredicate::slt, ia, ib);
    return b.create<arith::OrIOp>(l, wins,
                                  b.create<arith::AndIOp>(l, same, lower));
  };
  Value ranks = generic(
      builder, loc,
      filled(builder, loc, xt.clone(i64), dynamicDimsOf(builder, loc, x),
             scalarConst(builder, loc, i64, 0)),
      {x, x}, {outer, alongMap, outer}, iterators,
      [&](OpBuilder &b, Location l, ValueRange a) -> Value {
        Value earlier =
            before(b, l, a[1], asI64(b, l, rank), a[0], asI64(b, l, axis));
        return b.create<arith::AddIOp>(
            l, a[2], b.create<arith::ExtUIOp>(l, i64, earlier));
      });
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < rank; ++d)
    if (type.isDynamicDim(d))
      sizes.push_back(
          d == axis && k ? k : builder.create<tensor::DimOp>(loc, x, d));
  Value values =
      filled(builder, loc, type, sizes, scalarConst(builder, loc, elem, 0));
  Value indices =
      filled(builder, loc, indexType, sizes, scalarConst(builder, loc, i64, 0));
  auto pick = builder.create<linalg::GenericOp>(
      loc, TypeRange{type, indexType}, ValueRange{x, ranks},
      ValueRange{values, indices},
      ArrayRef<AffineMap>{alongMap, alongMap, outer, outer}, iterators,
      [&](OpBuilder &b, Location l, ValueRange a) {
        Value hit = b.create<arith::CmpIOp>(l, arith::CmpIPredicate::eq, a[1],
                                            asI64(b, l, axis));
        b.create<linalg::YieldOp>(
            l, ValueRange{
                   b.create<arith::SelectOp>(l, hit, a[0], a[2]),
                   b.create<arith::SelectOp>(l, hit, asI64(b, l, rank), a[3])});
      });
  return {pick.getResult(0), pick.getResult(1)};
}

/// ONNX TopK in two generics, quadratic in the axis length (k and the
/// axes TopK sees are small): each element's rank is the count of
/// elements that come before it (larger, or smaller with `smallest`;
/// equal ones with a lower index; NaN above every number), a
/// permutation of [0, n); output j along the axis takes the element of
/// rank j. The result is sorted, which `unsorted` allows.
static SmallVector<Value> lowerTopK(OpBuilder &builder, TopKOp o) {
  return topKWith(builder, o.getLoc(), o.getX(), o.getValues().getType(),
                  o.getIndices().getType(), o.getAxis(), o.getSmallest(),
                  Value());
}

/// reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod.
template <ReduceKind kind, typename OpT>
static Value lowerReduction(OpBuilder &builder, OpT o) {
  return reduce(builder, o.getLoc(), kind, o.getX(), o.getAxes(),
                o.getKeepdims(), o.getType());
}

/// The mean over the spatial dims [2, rank), kept as size-1 dims.
static Value lowerGlobalAvgPool(OpBuilder &builder, GlobalAvgPoolOp o) {
  int64_t rank = o.getType().getRank();
  return reduce(builder, o.getLoc(), ReduceKind::Mean, o.getX(),
                dimRange(2, rank), /*keepdims=*/true, o.getType());
}

/// softmax (`log` false) and log_softmax.
template <bool log, typename OpT>
static Value lowerSoftmax(OpBuilder &builder, OpT o) {
  return softmax(builder, o.getLoc(), o.getX(), o.getAxis(), log);
}

/// arg_max and arg_min.
template <typename OpT> static Value lowerArgReduce(OpBuilder &builder, OpT o) {
  return argReduce(builder, o.getLoc(), o.getX(), o.getAxis(),
                   std::is_same_v<OpT, ArgMaxOp>, o.getSelectLastIndex(),
                   o.getKeepdims(), o.getType());
}

void loom::populateGraphToLinalgReductionPatterns(RewritePatternSet &patterns) {
  patterns.add<
      LowerOpPattern<ReduceSumOp, lowerReduction<ReduceKind::Sum, ReduceSumOp>>,
      LowerOpPattern<ReduceMeanOp,
                     lowerReduction<ReduceKind::Mean, ReduceMeanOp>>,
      LowerOpPattern<ReduceMaxOp, lowerReduction<ReduceKind::Max, ReduceMaxOp>>,
      LowerOpPattern<ReduceMinOp, lowerReduction<ReduceKind::Min, ReduceMinOp>>,
      LowerOpPattern<ReduceProdOp,
                     lowerReduction<ReduceKind::Prod, ReduceProdOp>>,
      LowerOpPattern<GlobalAvgPoolOp, lowerGlobalAvgPool>,
      LowerOpPattern<SoftmaxOp, lowerSoftmax<false, SoftmaxOp>>,
      LowerOpPattern<LogSoftmaxOp, lowerSoftmax<true, LogSoftmaxOp>>,
      LowerOpPattern<ArgMaxOp, lowerArgReduce<ArgMaxOp>>,
      LowerOpPattern<ArgMinOp, lowerArgReduce<ArgMinOp>>,
      LowerOpPattern<LayerNormOp, lowerLayerNorm>,
      LowerOpPattern<BatchNormOp, lowerBatchNorm>,
      LowerOpPattern<MseLossOp, lowerMseLoss>,
      LowerOpPattern<CrossEntropyOp, lowerCrossEntropy>,
      LowerOpPattern<CumSumOp, lowerCumSum>, LowerOpPattern<TopKOp, lowerTopK>>(
      patterns.getContext());
}
