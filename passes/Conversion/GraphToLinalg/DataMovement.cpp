//===- DataMovement.cpp - data movement graph ops to linalg ---------------===//
//
// Constants, fills and iota; transpose as linalg.transpose; reshapes as
// tensor.reshape; concat and slice as tensor slices; gathers, reversed
// slices and the reflect / edge pads read with tensor.extract inside a
// generic; scatter_elements is an scf.for nest of tensor.insert on a copy
// of the data.
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace loom::graph;
using namespace loom::graph_to_linalg;

/// graph.constant: arith.constant of the same value; a large splat (the
/// zeros a gradient scatters into, say) a linalg.fill instead, so that its
/// buffer is planned and filled at run time rather than carried as bytes
/// in the code.
static Value lowerConstant(OpBuilder &builder, ConstantOp c) {
  constexpr int64_t kFillBytes = 64 << 10;
  auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
  auto type = cast<RankedTensorType>(c.getType());
  if (dense && dense.isSplat() && type.hasStaticShape() &&
      type.getElementType().isIntOrFloat() &&
      type.getNumElements() *
              std::max<int64_t>(1, type.getElementTypeBitWidth() / 8) >=
          kFillBytes) {
    Location loc = c.getLoc();
    Value value = builder.create<arith::ConstantOp>(
        loc, cast<TypedAttr>(dense.getSplatValue<Attribute>()));
    Value empty = builder.create<tensor::EmptyOp>(loc, type.getShape(),
                                                  type.getElementType());
    return builder.create<linalg::FillOp>(loc, value, empty).getResult(0);
  }
  return builder
      .create<arith::ConstantOp>(c.getLoc(), cast<TypedAttr>(c.getValue()))
      .getResult();
}

/// fill_like: linalg.fill of a tensor shaped like the reference.
static FailureOr<Value> lowerFillLike(OpBuilder &builder, FillLikeOp o) {
  Location loc = o.getLoc();
  auto type = cast<RankedTensorType>(o.getType());
  auto sizes = dynamicSizes(builder, loc, type, o.getRef());
  if (failed(sizes))
    return failure();
  Value value = builder.create<arith::ConstantOp>(loc, o.getValue());
  return builder
      .create<linalg::FillOp>(loc, value, emptyOf(builder, loc, type, *sizes))
      .getResult(0);
}

/// transpose: linalg.transpose.
static Value lowerTranspose(OpBuilder &builder, TransposeOp o) {
  Location loc = o.getLoc();
  auto type = cast<RankedTensorType>(o.getType());
  SmallVector<Value> sizes;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (type.isDynamicDim(i))
      sizes.push_back(dimOf(builder, loc, o.getX(), o.getPerm()[i]));
  return builder
      .create<linalg::TransposeOp>(
          loc, o.getX(), emptyOf(builder, loc, type, sizes), o.getPerm())
      .getResult()[0];
}

/// iota: a generic whose element is its index along the axis.
static FailureOr<Value> lowerIota(OpBuilder &builder, IotaOp o) {
  Location loc = o.getLoc();
  auto type = cast<RankedTensorType>(o.getType());
  Type elem = type.getElementType();
  SmallVector<AffineMap> maps = {
      builder.getMultiDimIdentityMap(type.getRank())};
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  int64_t axis = o.getAxis();
  auto generic = builder.create<linalg::GenericOp>(
      loc, TypeRange{type}, ValueRange{},
      ValueRange{emptyOf(builder, loc, type, {})}, maps, iterators,
      [&](OpBuilder &b, Location l, ValueRange) {
        Value i = b.create<linalg::IndexOp>(l, axis);
        Value v = b.create<arith::IndexCastOp>(l, b.getI64Type(), i);
        b.create<linalg::YieldOp>(l, convertScalar(b, l, v, elem));
      });
  return generic.getResult(0);
}

/// Reshape, squeeze, unsqueeze and flatten: tensor.reshape, with each
/// dynamic result dim computed from the operand's dims.
static FailureOr<Value> reshape(OpBuilder &builder, Operation *op, Value x) {
  Location loc = op->getLoc();
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  RankedTensorType xt = tensorType(x);
  auto numel = [&]() {
    Value n = builder.create<arith::ConstantIndexOp>(loc, 1);
    for (int64_t i = 0; i < xt.getRank(); ++i)
      n = builder.create<arith::MulIOp>(loc, n, dimOf(builder, loc, x, i));
    return n;
  };
  // Squeeze and unsqueeze only drop or add size-1 dims: the dynamic dims
  // of the result are those of the operand, in order, less the squeezed
  // ones (a dynamic dim squeezed is 1 at run time).
  SmallVector<int64_t> operandDynamic;
  ArrayRef<int64_t> squeezed;
  if (auto sq = dyn_cast<SqueezeOp>(op))
    squeezed = sq.getAxes();
  for (int64_t i = 0; i < xt.getRank(); ++i)
    if (xt.isDynamicDim(i) && !llvm::is_contained(squeezed, i))
      operandDynamic.push_back(i);
  int64_t nextDynamic = 0;
  bool ok = true;
  Value result = reshapeTo(builder, loc, x, type, [&](int64_t i) -> Value {
    if (isa<SqueezeOp, UnsqueezeOp>(op)) {
      if (nextDynamic >= (int64_t)operandDynamic.size()) {
        ok = false;
        return builder.create<arith::ConstantIndexOp>(loc, 1);
      }
      return builder.create<tensor::DimOp>(loc, x,
                                           operandDynamic[nextDynamic++]);
    }
    if (auto f = dyn_cast<FlattenOp>(op)) {
      int64_t axis = f.getAxis();
      Value n = builder.create<arith::ConstantIndexOp>(loc, 1);
      for (int64_t j = i == 0 ? 0 : axis; j < (i == 0 ? axis : xt.getRank());
           ++j)
        n = builder.create<arith::MulIOp>(loc, n, dimOf(builder, loc, x, j));
      return n;
    }
    ArrayRef<int64_t> spec = cast<ReshapeOp>(op).getShape();
    if (spec[i] == 0)
      return dimOf(builder, loc, x, i);
    // -1: the element count over the product of the other dims.
    Value others = builder.create<arith::ConstantIndexOp>(loc, 1);
    for (int64_t j = 0; j < (int64_t)spec.size(); ++j) {
      if (j == i)
        continue;
      Value dj = spec[j] == 0
                     ? dimOf(builder, loc, x, j)
                     : builder.create<arith::ConstantIndexOp>(loc, spec[j])
                           .getResult();
      others = builder.create<arith::MulIOp>(loc, others, dj);
    }
    return builder.create<arith::DivUIOp>(loc, numel(), others);
  });
  if (!ok)
    return failure();
  return result;
}

/// tensor.insert_slice of each input at its running offset along the
/// axis.
static Value lowerConcat(OpBuilder &builder, ConcatOp o) {
  Location loc = o.getLoc();
  RankedTensorType type = o.getType();
  int64_t axis = o.getAxis();
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (!type.isDynamicDim(d))
      continue;
    if (d != axis) {
      // Dynamic in the result: dynamic in every input.
      sizes.push_back(builder.create<tensor::DimOp>(loc, o.getInputs()[0], d));
      continue;
    }
    Value total = indexConst(builder, loc, 0);
    for (Value in : o.getInputs())
      total =
          builder.create<arith::AddIOp>(loc, total, dimOf(builder, loc, in, d));
    sizes.push_back(total);
  }
  Value result = emptyOf(builder, loc, type, sizes);
  OpFoldResult offset = builder.getIndexAttr(0);
  int64_t staticOffset = 0;
  for (Value in : o.getInputs()) {
    SmallVector<OpFoldResult> offsets(type.getRank(), builder.getIndexAttr(0));
    offsets[axis] = offset;
    SmallVector<OpFoldResult> inSizes = tensor::getMixedSizes(builder, loc, in);
    SmallVector<OpFoldResult> strides(type.getRank(), builder.getIndexAttr(1));
    result = builder.create<tensor::InsertSliceOp>(loc, in, result, offsets,
                                                   inSizes, strides);
    // The next offset: a constant while every size so far is static.
    int64_t n = tensorType(in).getDimSize(axis);
    if (isa<Attribute>(offset) && !ShapedType::isDynamic(n)) {
      staticOffset += n;
      offset = builder.getIndexAttr(staticOffset);
    } else {
      offset = builder
                   .create<arith::AddIOp>(loc, indexValue(builder, loc, offset),
                                          dimOf(builder, loc, in, axis))
                   .getResult();
    }
  }
  return result;
}

/// One tensor.extract_slice with positive strides; a dim with a negative
/// step takes the same elements from its lowest one up and is then
/// reversed. Starts and ends of dynamic dims are normalized and clamped
/// at run time as in the op's description.
static Value lowerSlice(OpBuilder &builder, SliceOp o) {
  Location loc = o.getLoc();
  Value x = o.getX();
  RankedTensorType xt = tensorType(x), type = o.getType();
  int64_t rank = xt.getRank();
  SmallVector<OpFoldResult> offsets, sizes, strides;
  SmallVector<bool> reversed;
  auto c = [&](int64_t v) { return indexConst(builder, loc, v); };
  auto select = [&](arith::CmpIPredicate p, Value a, Value b, Value t,
                    Value f) -> Value {
    return builder.create<arith::SelectOp>(
        loc, builder.create<arith::CmpIOp>(loc, p, a, b), t, f);
  };
  auto clamp = [&](Value v, Value lo, Value hi) -> Value {
    return builder.create<arith::MinSIOp>(
        loc, builder.create<arith::MaxSIOp>(loc, v, lo), hi);
  };
  for (int64_t d = 0; d < rank; ++d) {
    int64_t start = o.getStarts()[d], end = o.getEnds()[d],
            step = o.getSteps()[d], k = std::abs(step);
    reversed.push_back(step < 0);
    strides.push_back(builder.getIndexAttr(k));
    if (!xt.isDynamicDim(d)) {
      // The static case, as sliceLength in GraphOps.cpp.
      int64_t n = xt.getDimSize(d), len = type.getDimSize(d);
      int64_t s = start < 0 ? start + n : start;
      s = step > 0 ? std::clamp<int64_t>(s, 0, n)
                   : std::clamp<int64_t>(s, 0, std::max<int64_t>(n - 1, 0));
      int64_t first = step > 0 || len == 0 ? s : s - (len - 1) * k;
      offsets.push_back(builder.getIndexAttr(len == 0 ? 0 : first));
      sizes.push_back(builder.getIndexAttr(len));
      continue;
    }
    Value n = builder.create<tensor::DimOp>(loc, x, d);
    Value zero = c(0), one = c(1);
    auto normalized = [&](int64_t v) {
      return v < 0 ? (Value)builder.create<arith::AddIOp>(loc, c(v), n) : c(v);
    };
    // The elements taken from `from` toward `to` (excluded):
    // (|to - from| - 1) / k + 1 when from is before to, else 0.
    auto count = [&](Value lo, Value hi) -> Value {
      Value span = builder.create<arith::SubIOp>(loc, hi, lo);
      Value len = builder.create<arith::AddIOp>(
          loc,
          builder.create<arith::DivSIOp>(
              loc, builder.create<arith::SubIOp>(loc, span, one), c(k)),
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
      Value last = builder.create<arith::SubIOp>(loc, n, one);
      s = clamp(s, zero, last);
      e = clamp(e, c(-1), last);
      len = count(e, s);
      // The lowest element taken: s - (len - 1) * k, 0 when none is.
      first = builder.create<arith::SubIOp>(
          loc, s,
          builder.create<arith::MulIOp>(
              loc, builder.create<arith::SubIOp>(loc, len, one), c(k)));
      first = builder.create<arith::MaxSIOp>(loc, first, zero);
    }
    offsets.push_back(first);
    sizes.push_back(len);
  }
  Value r = builder.create<tensor::ExtractSliceOp>(loc, type, x, offsets, sizes,
                                                   strides);
  if (!llvm::is_contained(reversed, true))
    return r;
  SmallVector<Value> dims;
  for (int64_t d = 0; d < rank; ++d)
    dims.push_back(dimOf(builder, loc, r, d));
  return tabulate(
      builder, loc, type, dynamicDimsOf(builder, loc, r),
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
static Value gather(OpBuilder &builder, Operation *op, Value data,
                    Value indices, int64_t axis, RankedTensorType type) {
  Location loc = op->getLoc();
  int64_t ri = tensorType(indices).getRank();
  int64_t rank = type.getRank();
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < rank; ++d) {
    if (!type.isDynamicDim(d))
      continue;
    if (d < axis)
      sizes.push_back(builder.create<tensor::DimOp>(loc, data, d));
    else if (d < axis + ri)
      sizes.push_back(builder.create<tensor::DimOp>(loc, indices, d - axis));
    else
      sizes.push_back(builder.create<tensor::DimOp>(loc, data, d - ri + 1));
  }
  Value n = dimOf(builder, loc, data, axis);
  checkIndices(builder, op, indices, n);
  Value init = emptyOf(builder, loc, type, sizes);
  SmallVector<AffineMap> maps = {
      projection(builder.getContext(), rank, dimRange(axis, axis + ri)),
      builder.getMultiDimIdentityMap(rank)};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  return generic(builder, loc, init, indices, maps, iterators,
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
static Value lowerGatherElements(OpBuilder &builder, GatherElementsOp o) {
  Location loc = o.getLoc();
  Value data = o.getData();
  int64_t axis = o.getAxis();
  Value n = dimOf(builder, loc, data, axis);
  checkIndices(builder, o, o.getIndices(), n);
  return mapLike(builder, loc, o.getIndices(), o.getType().getElementType(), {},
                 {}, [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                   SmallVector<Value> at =
                       loopIndices(b, l, o.getType().getRank());
                   at[axis] = normalizeIndex(b, l, a[0], n);
                   return b.create<tensor::ExtractOp>(l, data, at);
                 });
}

/// constant: tensor.pad. reflect and edge: a generic that reads each
/// element from the input at the mirrored or clamped position.
static Value lowerPad(OpBuilder &builder, PadOp o) {
  Location loc = o.getLoc();
  Value x = o.getX();
  RankedTensorType type = o.getType();
  Type elem = type.getElementType();
  int64_t rank = type.getRank();
  ArrayRef<int64_t> pads = o.getPads();
  if (o.getMode() == PadMode::constant) {
    SmallVector<OpFoldResult> low, high;
    for (int64_t d = 0; d < rank; ++d) {
      low.push_back(builder.getIndexAttr(pads[d]));
      high.push_back(builder.getIndexAttr(pads[rank + d]));
    }
    double v = o.getValue().convertToDouble();
    Value value = elem.isInteger(1) ? scalarConst(builder, loc, elem, v != 0)
                                    : scalarConst(builder, loc, elem, v);
    return builder.create<tensor::PadOp>(loc, type, x, low, high, value);
  }
  SmallVector<Value> sizes, dims;
  for (int64_t d = 0; d < rank; ++d) {
    dims.push_back(dimOf(builder, loc, x, d));
    if (type.isDynamicDim(d))
      sizes.push_back(builder.create<arith::AddIOp>(
          loc, dims[d], indexConst(builder, loc, pads[d] + pads[rank + d])));
  }
  bool reflect = o.getMode() == PadMode::reflect;
  return tabulate(
      builder, loc, type, sizes,
      [&](OpBuilder &b, Location l, ValueRange i) -> Value {
        SmallVector<Value> at;
        for (int64_t d = 0; d < rank; ++d) {
          Value zero = indexConst(b, l, 0);
          Value last = b.create<arith::SubIOp>(l, dims[d], indexConst(b, l, 1));
          Value p = b.create<arith::SubIOp>(l, i[d], indexConst(b, l, pads[d]));
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
static Value lowerTrilu(OpBuilder &builder, TriluOp o) {
  Location loc = o.getLoc();
  Value x = o.getX();
  int64_t rank = o.getType().getRank();
  Type elem = o.getType().getElementType();
  return mapLike(builder, loc, x, elem, {}, {},
                 [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                   Value diff = b.create<arith::SubIOp>(
                       l, b.create<linalg::IndexOp>(l, rank - 1),
                       b.create<linalg::IndexOp>(l, rank - 2));
                   Value keep = b.create<arith::CmpIOp>(
                       l,
                       o.getUpper() ? arith::CmpIPredicate::sge
                                    : arith::CmpIPredicate::sle,
                       diff, indexConst(b, l, o.getK()));
                   return b.create<arith::SelectOp>(l, keep, a[0],
                                                    scalarConst(b, l, elem, 0));
                 });
}

/// ONNX ScatterElements: a copy of data (linalg.copy, so that the
/// writes never land in data's buffer), then an scf.for nest over the
/// updates that inserts each one (combined with the element there by the
/// reduction) at its position with the axis coordinate from indices,
/// negative ones counted from the end. Updates apply in row-major order,
/// so with `none` the last of duplicate indices wins. On i1, add is or
/// and mul is and.
static Value lowerScatterElements(OpBuilder &builder, ScatterElementsOp o) {
  Location loc = o.getLoc();
  Value data = o.getData(), indices = o.getIndices(), updates = o.getUpdates();
  RankedTensorType type = o.getType();
  int64_t rank = type.getRank(), axis = o.getAxis();
  bool i1 = type.getElementType().isInteger(1);
  Value copy =
      builder
          .create<linalg::CopyOp>(
              loc, data,
              emptyOf(builder, loc, type, dynamicDimsOf(builder, loc, data)))
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
  Value n = dimOf(builder, loc, data, axis);
  checkIndices(builder, o, indices, n);
  SmallVector<Value> lbs(rank, indexConst(builder, loc, 0)),
      steps(rank, indexConst(builder, loc, 1)), ubs;
  for (int64_t d = 0; d < rank; ++d)
    ubs.push_back(dimOf(builder, loc, indices, d));
  scf::LoopNest nest = scf::buildLoopNest(
      builder, loc, lbs, ubs, steps, copy,
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

/// reshape, squeeze, unsqueeze and flatten.
template <typename OpT>
static FailureOr<Value> lowerReshapeLike(OpBuilder &builder, OpT o) {
  return reshape(builder, o, o.getX());
}

/// gather: the elements of data at the indices along the axis.
static Value lowerGather(OpBuilder &builder, GatherOp o) {
  return gather(builder, o, o.getData(), o.getIndices(), o.getAxis(),
                o.getType());
}

/// An embedding lookup: a gather of table rows.
static Value lowerEmbedding(OpBuilder &builder, EmbeddingOp o) {
  return gather(builder, o, o.getTable(), o.getIds(), 0, o.getType());
}

void loom::populateGraphToLinalgDataMovementPatterns(
    RewritePatternSet &patterns) {
  patterns
      .add<LowerOpPattern<ConstantOp, lowerConstant>,
           LowerOpPattern<FillLikeOp, lowerFillLike>,
           LowerOpPattern<IotaOp, lowerIota>,
           LowerOpPattern<TransposeOp, lowerTranspose>,
           LowerOpPattern<ReshapeOp, lowerReshapeLike<ReshapeOp>>,
           LowerOpPattern<SqueezeOp, lowerReshapeLike<SqueezeOp>>,
           LowerOpPattern<UnsqueezeOp, lowerReshapeLike<UnsqueezeOp>>,
           LowerOpPattern<FlattenOp, lowerReshapeLike<FlattenOp>>,
           LowerOpPattern<ConcatOp, lowerConcat>,
           LowerOpPattern<SliceOp, lowerSlice>,
           LowerOpPattern<GatherOp, lowerGather>,
           LowerOpPattern<EmbeddingOp, lowerEmbedding>,
           LowerOpPattern<GatherElementsOp, lowerGatherElements>,
           LowerOpPattern<PadOp, lowerPad>, LowerOpPattern<TriluOp, lowerTrilu>,
           LowerOpPattern<ScatterElementsOp, lowerScatterElements>>(
          patterns.getContext());
}
