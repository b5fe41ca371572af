//===- Contractions.cpp - matmul, convolution and pooling -----------------===//
//
// NumPy matmul is one contraction generic (batch dims broadcast, 1-D
// operands as a row or column vector); convolution uses upstream's named
// NCHW conv ops (a 3-D one as 2-D convs, or a generic when grouped); max and
// average pooling are one window generic over the padded input.
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace loom::graph;
using namespace loom::graph_to_linalg;

/// NumPy matmul as one contraction: [batch..., m, k] x [batch..., k, n],
/// batch dims broadcast, 1-D operands as a row / column vector. An integer
/// matmul (graph.matmul_integer) reads its 8-bit operands and scalar zero
/// points as they are and widens and shifts them in the body:
/// `acc + (ext(a) - ext(za)) * (ext(b) - ext(zb))`, the form
/// --loom-cpu-library-calls hands to the integer GEMM.
template <typename OpT>
static FailureOr<Value> lowerProduct(OpBuilder &builder, OpT o) {
  constexpr bool integer = std::is_same_v<OpT, MatmulIntegerOp>;
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
                                 AffineMap::get(loops, 0, re, ctx)};
  SmallVector<Value> inputs = {lhs, rhs};
  if constexpr (integer) {
    // The scalar zero points.
    maps.append(2, AffineMap::get(loops, 0, {}, ctx));
    inputs.append({o.getLhsZero(), o.getRhsZero()});
  }
  maps.push_back(AffineMap::get(loops, 0, oe, ctx));
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
          size = builder.create<tensor::DimOp>(loc, v, j);
          break;
        }
      }
    } else if (i == m) {
      int64_t j = lt.getRank() - (o.getTransposeLhs() ? 1 : 2);
      size = dimOf(builder, loc, lhs, j);
    } else {
      int64_t j = rt.getRank() - (o.getTransposeRhs() ? 2 : 1);
      size = dimOf(builder, loc, rhs, j);
    }
    if (!size)
      return failure();
    sizes.push_back(size);
  }
  Type elem = type.getElementType();
  Value zero = scalarConst(builder, loc, elem, 0);
  Value init =
      builder
          .create<linalg::FillOp>(loc, zero, emptyOf(builder, loc, type, sizes))
          .getResult(0);
  bool fp = isFloat(elem);
  auto generic = builder.create<linalg::GenericOp>(
      loc, TypeRange{type}, inputs, ValueRange{init}, maps, iterators,
      [&](OpBuilder &b, Location l, ValueRange a) {
        Value x = a[0], y = a[1], acc = a.back();
        if constexpr (integer) {
          // The difference of an operand and its zero point, in i32.
          auto shifted = [&](Value v, Value zero, Value operand) {
            bool u = tensorType(operand).getElementType().isUnsignedInteger();
            auto ext = [&](Value e) -> Value {
              if (u)
                return b.create<arith::ExtUIOp>(l, elem, e);
              return b.create<arith::ExtSIOp>(l, elem, e);
            };
            Value wide = ext(v), wideZero = ext(zero);
            return b.create<arith::SubIOp>(l, wide, wideZero).getResult();
          };
          x = shifted(x, a[2], lhs);
          y = shifted(y, a[3], rhs);
        }
        Value p = fp ? (Value)b.create<arith::MulFOp>(l, x, y)
                     : b.create<arith::MulIOp>(l, x, y);
        Value s = fp ? (Value)b.create<arith::AddFOp>(l, acc, p)
                     : b.create<arith::AddIOp>(l, acc, p);
        b.create<linalg::YieldOp>(l, s);
      });
  return generic.getResult(0);
}

/// A grouped 3-D convolution as one generic, upstream having no grouped 3-D
/// named op: in [N, G, C/G, D, H, W] (padded), filter [G, O/G, C/G, kd, kh,
/// kw], accumulated into [N, G, O/G, Do, Ho, Wo]; loops n, g, o, do, ho,
/// wo, then the reductions c, kd, kh, kw.
static Value conv3d(OpBuilder &builder, Location loc, Value in, Value filter,
                    Value acc, ArrayRef<int64_t> strides,
                    ArrayRef<int64_t> dilations) {
  MLIRContext *ctx = builder.getContext();
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineExpr> inExprs = {d(0), d(1), d(6)};
  for (int64_t i = 0; i < 3; ++i)
    inExprs.push_back(d(3 + i) * strides[i] + d(7 + i) * dilations[i]);
  SmallVector<AffineMap> maps = {AffineMap::get(10, 0, inExprs, ctx),
                                 projection(ctx, 10, {1, 2, 6, 7, 8, 9}),
                                 projection(ctx, 10, dimRange(0, 6))};
  SmallVector<utils::IteratorType> iterators(6, utils::IteratorType::parallel);
  iterators.append(4, utils::IteratorType::reduction);
  return generic(builder, loc, acc, ValueRange{in, filter}, maps, iterators,
                 [](OpBuilder &b, Location l, ValueRange a) -> Value {
                   Value p = b.create<arith::MulFOp>(l, a[0], a[1]);
                   return b.create<arith::AddFOp>(l, a[2], p);
                 });
}

/// `v` with its dims permuted (linalg.transpose).
static Value permuted(OpBuilder &builder, Location loc, Value v,
                      ArrayRef<int64_t> perm) {
  RankedTensorType t = tensorType(v);
  SmallVector<int64_t> shape;
  SmallVector<Value> sizes;
  for (int64_t p : perm) {
    shape.push_back(t.getDimSize(p));
    if (t.isDynamicDim(p))
      sizes.push_back(dimOf(builder, loc, v, p));
  }
  return builder
      .create<linalg::TransposeOp>(
          loc, v, emptyOf(builder, loc, t.clone(shape), sizes), perm)
      .getResult()[0];
}

/// An ungrouped 3-D convolution as one 2-D convolution per kernel depth
/// offset kd, accumulated, so that the CPU code calls its 2-D convolution
/// kernel (oneDNN) instead of running a loop nest: the padded input's
/// depths od * stride + kd * dilation moved next to the batch
/// ([N * Do, C, H, W]), convolved with the filter's [O, C, kh, kw] at kd
/// into the accumulator [N * Do, O, Ho, Wo] (`acc`, [N, O, Do, Ho, Wo],
/// transposed in and out).
static Value conv3dBy2d(OpBuilder &builder, Location loc, Value in,
                        Value filter, Value acc, ArrayRef<int64_t> strides,
                        ArrayRef<int64_t> dilations) {
  SmallVector<OpFoldResult> accSizes = tensor::getMixedSizes(builder, loc, acc);
  SmallVector<OpFoldResult> inSizes = tensor::getMixedSizes(builder, loc, in);
  SmallVector<OpFoldResult> wSizes =
      tensor::getMixedSizes(builder, loc, filter);
  SmallVector<ReassociationIndices> batchDepth = {{0, 1}, {2}, {3}, {4}};
  // [N, O, Do, Ho, Wo] -> [N * Do, O, Ho, Wo].
  Value out = builder.create<tensor::CollapseShapeOp>(
      loc, permuted(builder, loc, acc, {0, 2, 1, 3, 4}), batchDepth);
  SmallVector<int64_t> strides2 = {strides[1], strides[2]},
                       dilations2 = {dilations[1], dilations[2]};
  SmallVector<NamedAttribute> attrs = {
      builder.getNamedAttr("strides", builder.getI64TensorAttr(strides2)),
      builder.getNamedAttr("dilations", builder.getI64TensorAttr(dilations2))};
  auto index = [&](int64_t v) { return builder.getIndexAttr(v); };
  int64_t depth = tensorType(filter).getDimSize(2);
  for (int64_t kd = 0; kd < depth; ++kd) {
    SmallVector<OpFoldResult> offsets = {
        index(0), index(0), index(kd * dilations[0]), index(0), index(0)};
    SmallVector<OpFoldResult> sizes = {inSizes[0], inSizes[1], accSizes[2],
                                       inSizes[3], inSizes[4]};
    SmallVector<OpFoldResult> steps = {index(1), index(1), index(strides[0]),
                                       index(1), index(1)};
    Value x =
        builder.create<tensor::ExtractSliceOp>(loc, in, offsets, sizes, steps);
    x = builder.create<tensor::CollapseShapeOp>(
        loc, permuted(builder, loc, x, {0, 2, 1, 3, 4}), batchDepth);
    SmallVector<OpFoldResult> wOffsets = {index(0), index(0), index(kd),
                                          index(0), index(0)};
    SmallVector<OpFoldResult> wSlice = {wSizes[0], wSizes[1], index(1),
                                        wSizes[3], wSizes[4]};
    SmallVector<OpFoldResult> ones(5, index(1));
    Value w = builder.create<tensor::ExtractSliceOp>(loc, filter, wOffsets,
                                                     wSlice, ones);
    w = builder.create<tensor::CollapseShapeOp>(
        loc, w, SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}, {4}});
    out = builder
              .create<linalg::Conv2DNchwFchwOp>(loc, TypeRange{out.getType()},
                                                ValueRange{x, w},
                                                ValueRange{out}, attrs)
              .getResult(0);
  }
  // [N * Do, O, Ho, Wo] -> [N, Do, O, Ho, Wo] -> [N, O, Do, Ho, Wo].
  RankedTensorType accType = tensorType(acc);
  SmallVector<int64_t> split = {accType.getDimSize(0), accType.getDimSize(2),
                                accType.getDimSize(1), accType.getDimSize(3),
                                accType.getDimSize(4)};
  Value expanded = builder.create<tensor::ExpandShapeOp>(
      loc, accType.clone(split), out, batchDepth,
      SmallVector<OpFoldResult>{accSizes[0], accSizes[2], accSizes[1],
                                accSizes[3], accSizes[4]});
  return permuted(builder, loc, expanded, {0, 2, 1, 3, 4});
}

/// Convolution on NCHW with upstream's named ops: a 1-D conv is a 2-D one
/// over a unit height; groups split the channels into a G dim for
/// linalg.conv_2d_ngchw_gfchw. An ungrouped 3-D conv is 2-D convs
/// (conv3dBy2d); a grouped one is split into groups the same way and
/// computed by conv3d's generic. Pads are a zero tensor.pad; the bias, when
/// there is one, is broadcast into the accumulator.
static FailureOr<Value> lowerConv(OpBuilder &builder, ConvOp o) {
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
      auto [t, sizes] = withUnitDim(builder, loc, *v, 2);
      *v = builder.create<tensor::ExpandShapeOp>(loc, t, *v, unitH, sizes);
    }
  }
  // Spatial dims from here on: 2, or 3 for a 3-D conv.
  int64_t spatial = tensorType(input).getRank() - 2, rank = spatial + 2;
  if (llvm::any_of(padding, [](int64_t p) { return p != 0; })) {
    SmallVector<OpFoldResult> low(2, builder.getIndexAttr(0)), high = low;
    SmallVector<int64_t> shape(tensorType(input).getShape());
    for (int64_t i = 0; i < spatial; ++i) {
      low.push_back(builder.getIndexAttr(padding[i]));
      high.push_back(builder.getIndexAttr(padding[spatial + i]));
      if (!ShapedType::isDynamic(shape[2 + i]))
        shape[2 + i] += padding[i] + padding[spatial + i];
    }
    input = builder.create<tensor::PadOp>(loc, tensorType(input).clone(shape),
                                          input, low, high,
                                          scalarConst(builder, loc, elem, 0));
  }
  // The 2-D result [N, O, Ho, Wo] (or 3-D [N, O, Do, Ho, Wo]).
  SmallVector<int64_t> shape(type.getShape());
  if (oneD)
    shape.insert(shape.begin() + 2, 1);
  auto outType = type.clone(shape);
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < rank; ++d) {
    if (!outType.isDynamicDim(d))
      continue;
    if (d < 2) {
      // N from the input, O from the filter.
      sizes.push_back(
          builder.create<tensor::DimOp>(loc, d == 0 ? input : filter, 0));
      continue;
    }
    // Over the padded input, so without pads here.
    sizes.push_back(
        windowOutputSize(builder, loc, dimOf(builder, loc, input, d),
                         dimOf(builder, loc, filter, d), strides[d - 2], 0, 0,
                         dilations[d - 2], /*ceilMode=*/false));
  }
  Value init;
  if (Value bias = o.getBias())
    init = generic(
        builder, loc, emptyOf(builder, loc, outType, sizes), bias,
        {projection(builder.getContext(), rank, {1}),
         builder.getMultiDimIdentityMap(rank)},
        SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
        [](OpBuilder &, Location, ValueRange a) { return a[0]; });
  else
    init = filled(builder, loc, outType, sizes,
                  scalarConst(builder, loc, elem, 0));
  SmallVector<NamedAttribute> attrs = {
      builder.getNamedAttr("strides", builder.getI64TensorAttr(strides)),
      builder.getNamedAttr("dilations", builder.getI64TensorAttr(dilations))};
  Value result;
  int64_t groups = o.getGroups();
  if (groups == 1 && spatial == 2) {
    result = builder
                 .create<linalg::Conv2DNchwFchwOp>(loc, TypeRange{outType},
                                                   ValueRange{input, filter},
                                                   ValueRange{init}, attrs)
                 .getResult(0);
  } else if (groups == 1) {
    result = conv3dBy2d(builder, loc, input, filter, init, strides, dilations);
  } else {
    // [N, C, H, W] -> [N, G, C/G, H, W]; [O, C/G, kh, kw] ->
    // [G, O/G, C/G, kh, kw]; the accumulator [N, G, O/G, Ho, Wo] (and the
    // same with a D dim in 3-D).
    auto split = [&](Value v, int64_t at) {
      SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(builder, loc, v);
      SmallVector<int64_t> shape(tensorType(v).getShape());
      int64_t whole = shape[at];
      shape[at] = groups;
      shape.insert(shape.begin() + at + 1,
                   ShapedType::isDynamic(whole) ? whole : whole / groups);
      OpFoldResult part =
          ShapedType::isDynamic(whole)
              ? OpFoldResult(builder
                                 .create<arith::DivUIOp>(
                                     loc, cast<Value>(sizes[at]),
                                     indexConst(builder, loc, groups))
                                 .getResult())
              : builder.getIndexAttr(whole / groups);
      sizes[at] = builder.getIndexAttr(groups);
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
          builder
              .create<tensor::ExpandShapeOp>(loc, tensorType(v).clone(shape), v,
                                             re, sizes)
              .getResult(),
          re);
    };
    Value in = split(input, 1).first, w = split(filter, 0).first;
    auto [acc, re] = split(init, 1);
    Value r = spatial == 3
                  ? conv3d(builder, loc, in, w, acc, strides, dilations)
                  : builder
                        .create<linalg::Conv2DNgchwGfchwOp>(
                            loc, TypeRange{acc.getType()}, ValueRange{in, w},
                            ValueRange{acc}, attrs)
                        .getResult(0);
    result = builder.create<tensor::CollapseShapeOp>(loc, outType, r, re);
  }
  if (oneD)
    result = builder.create<tensor::CollapseShapeOp>(loc, type, result, unitH);
  return result;
}

/// Max and average pooling over 1-3 spatial dims, one generic: the
/// input padded (with the lowest value for max, 0 for average, and at
/// the end as far as ceil_mode's last window reaches), read at
/// o * stride + k * dilation for a window operand's k. The average
/// divides by the window's count of real elements, or with
/// count_include_pad of elements inside the padded input (never those
/// past it, as in PyTorch).
static Value pool(OpBuilder &builder, Location loc, Value x,
                  ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                  ArrayRef<int64_t> padding, ArrayRef<int64_t> dilations,
                  bool ceilMode, bool max, bool countIncludePad,
                  RankedTensorType type) {
  MLIRContext *ctx = builder.getContext();
  RankedTensorType xt = tensorType(x);
  Type elem = xt.getElementType();
  int64_t spatial = kernel.size(), rank = xt.getRank();
  SmallVector<Value> inSizes, outSizes, outDims;
  for (int64_t d = 0; d < rank; ++d)
    inSizes.push_back(dimOf(builder, loc, x, d));
  for (int64_t d = 0; d < rank; ++d) {
    Value size = d < 2
                     ? inSizes[d]
                     : windowOutputSize(builder, loc, inSizes[d],
                                        indexConst(builder, loc, kernel[d - 2]),
                                        strides[d - 2], padding[d - 2],
                                        padding[spatial + d - 2],
                                        dilations[d - 2], ceilMode);
    if (!type.isDynamicDim(d))
      size = indexConst(builder, loc, type.getDimSize(d));
    outDims.push_back(size);
    if (type.isDynamicDim(d))
      outSizes.push_back(size);
  }
  // Pads: the given ones, and at the end what the last window needs.
  SmallVector<OpFoldResult> low(2, builder.getIndexAttr(0)), high = low;
  SmallVector<int64_t> paddedShape(xt.getShape());
  for (int64_t i = 0; i < spatial; ++i) {
    low.push_back(builder.getIndexAttr(padding[i]));
    int64_t d = i + 2, reach = (kernel[i] - 1) * dilations[i] + 1;
    int64_t in = xt.getDimSize(d), out = type.getDimSize(d);
    if (!ShapedType::isDynamic(in) && !ShapedType::isDynamic(out)) {
      int64_t need = (out - 1) * strides[i] + reach;
      int64_t end = std::max(need - in - padding[i], padding[spatial + i]);
      high.push_back(builder.getIndexAttr(end));
      paddedShape[d] = in + padding[i] + end;
      continue;
    }
    auto c = [&](int64_t v) { return indexConst(builder, loc, v); };
    Value need = builder.create<arith::AddIOp>(
        loc,
        builder.create<arith::MulIOp>(
            loc, builder.create<arith::SubIOp>(loc, outDims[d], c(1)),
            c(strides[i])),
        c(reach));
    Value end = builder.create<arith::SubIOp>(
        loc, need,
        builder.create<arith::AddIOp>(loc, inSizes[d], c(padding[i])));
    high.push_back(
        builder.create<arith::MaxSIOp>(loc, end, c(padding[spatial + i]))
            .getResult());
    paddedShape[d] = ShapedType::kDynamic;
  }
  Value padValue = max ? extremeConst(builder, loc, elem, /*max=*/false)
                       : scalarConst(builder, loc, elem, 0);
  Value padded = builder.create<tensor::PadOp>(loc, xt.clone(paddedShape), x,
                                               low, high, padValue);
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
  Value window = builder.create<tensor::EmptyOp>(loc, kernel, elem);
  Value init = filled(builder, loc, type, outSizes, padValue);
  Value r = generic(builder, loc, init, {padded, window}, maps, iterators,
                    [&](OpBuilder &b, Location l, ValueRange a) {
                      return max ? maxScalar(b, l, a[2], a[0])
                                 : addScalar(b, l, a[2], a[0]);
                    });
  if (max)
    return r;
  return mapLike(
      builder, loc, r, elem, {}, {},
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
            b, l, b.create<arith::IndexCastOp>(l, b.getI64Type(), count), elem);
        return b.create<arith::DivFOp>(l, a[0], countF);
      });
}

/// max_pool: the window maximum, pads at the lowest value.
static Value lowerMaxPool(OpBuilder &builder, MaxPoolOp o) {
  return pool(builder, o.getLoc(), o.getX(), o.getKernel(), o.getStrides(),
              o.getPadding(), o.getDilations(), o.getCeilMode(),
              /*max=*/true, /*countIncludePad=*/false, o.getType());
}

/// avg_pool: the window sum over the count of its elements (no dilation).
static Value lowerAvgPool(OpBuilder &builder, AvgPoolOp o) {
  SmallVector<int64_t> dilations(o.getKernel().size(), 1);
  return pool(builder, o.getLoc(), o.getX(), o.getKernel(), o.getStrides(),
              o.getPadding(), dilations, o.getCeilMode(),
              /*max=*/false, o.getCountIncludePad(), o.getType());
}

void loom::populateGraphToLinalgContractionPatterns(
    RewritePatternSet &patterns) {
  patterns.add<LowerOpPattern<MatmulOp, lowerProduct<MatmulOp>>,
               LowerOpPattern<MatmulIntegerOp, lowerProduct<MatmulIntegerOp>>,
               LowerOpPattern<ConvOp, lowerConv>,
               LowerOpPattern<MaxPoolOp, lowerMaxPool>,
               LowerOpPattern<AvgPoolOp, lowerAvgPool>>(patterns.getContext());
}
