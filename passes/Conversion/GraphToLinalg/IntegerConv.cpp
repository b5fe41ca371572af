//===- IntegerConv.cpp - graph.conv_integer to linalg ---------------------===//
//
// An integer convolution is one contraction generic over the grouped
// layout: the input padded with its zero point and split into
// [N, G, C/G, spatial...], the filter [G, O/G, C/G, kernel...], the i32
// accumulator [N, G, O/G, out...]; loops n, g, o, out..., then the
// reductions c, kernel...; the body `acc + (ext(x) - ext(zx)) *
// (ext(w) - ext(zw))` (extui for ui8), the zero points scalar inputs, as
// graph.matmul_integer's. A 1-D convolution is a 2-D one over a unit
// height. --loom-cpu-library-calls hands the 2-D form to the runtime's
// int8 convolution (loom_cpu_conv2d_i8); a 3-D one runs as these loops.
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace loom::graph;
using namespace loom::graph_to_linalg;

namespace {

FailureOr<Value> lowerConvInteger(OpBuilder &builder, ConvIntegerOp o) {
  Location loc = o.getLoc();
  MLIRContext *ctx = builder.getContext();
  Value input = o.getInput(), filter = o.getFilter();
  RankedTensorType type = o.getType();
  Type acc = type.getElementType();
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
  int64_t spatial = tensorType(input).getRank() - 2, rank = spatial + 2;
  int64_t groups = o.getGroups();
  RankedTensorType wt = tensorType(filter);
  int64_t c = tensorType(input).getDimSize(1);
  if (!wt.hasStaticShape() || ShapedType::isDynamic(c))
    return failure();
  int64_t outC = wt.getDimSize(0);
  // The input padded with its zero point (0 once shifted, as ONNX pads).
  if (llvm::any_of(padding, [](int64_t p) { return p != 0; })) {
    SmallVector<OpFoldResult> low(2, builder.getIndexAttr(0)), high = low;
    SmallVector<int64_t> shape(tensorType(input).getShape());
    for (int64_t i = 0; i < spatial; ++i) {
      low.push_back(builder.getIndexAttr(padding[i]));
      high.push_back(builder.getIndexAttr(padding[spatial + i]));
      if (!ShapedType::isDynamic(shape[2 + i]))
        shape[2 + i] += padding[i] + padding[spatial + i];
    }
    Value zero = builder.create<tensor::ExtractOp>(loc, o.getInputZero());
    input = builder.create<tensor::PadOp>(loc, tensorType(input).clone(shape),
                                          input, low, high, zero);
  }
  // [N, C, ...] -> [N, G, C/G, ...]; [O, C/G, ...] -> [G, O/G, C/G, ...].
  auto split = [&](Value v, int64_t at, int64_t whole) {
    RankedTensorType t = tensorType(v);
    SmallVector<int64_t> shape(t.getShape());
    shape[at] = groups;
    shape.insert(shape.begin() + at + 1, whole / groups);
    SmallVector<ReassociationIndices> re;
    for (int64_t d = 0; d < t.getRank(); ++d)
      re.push_back(d < at    ? ReassociationIndices{d}
                   : d == at ? ReassociationIndices{d, d + 1}
                             : ReassociationIndices{d + 1});
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(builder, loc, v);
    sizes[at] = builder.getIndexAttr(groups);
    sizes.insert(sizes.begin() + at + 1, builder.getIndexAttr(whole / groups));
    return std::make_pair(
        builder.create<tensor::ExpandShapeOp>(loc, t.clone(shape), v, re, sizes)
            .getResult(),
        re);
  };
  Value in = split(input, 1, c).first, w = split(filter, 0, outC).first;
  // The accumulator [N, G, O/G, out...], zero.
  SmallVector<int64_t> outShape(type.getShape());
  if (oneD)
    outShape.insert(outShape.begin() + 2, 1);
  auto flatType = type.clone(outShape);
  SmallVector<int64_t> groupedShape(outShape);
  groupedShape[1] = groups;
  groupedShape.insert(groupedShape.begin() + 2, outC / groups);
  auto groupedType = type.clone(groupedShape);
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < rank; ++d) {
    if (!flatType.isDynamicDim(d))
      continue;
    if (d == 0) {
      sizes.push_back(builder.create<tensor::DimOp>(loc, input, 0));
      continue;
    }
    // Over the padded input, so without pads here.
    sizes.push_back(windowOutputSize(
        builder, loc, dimOf(builder, loc, input, d),
        indexConst(builder, loc, wt.getDimSize(d)), strides[d - 2], 0, 0,
        dilations[d - 2], /*ceilMode=*/false));
  }
  Value init = filled(builder, loc, groupedType, sizes,
                      scalarConst(builder, loc, acc, 0));
  // Loops: n, g, o, out... (parallel), c, kernel... (reduction).
  int64_t loops = 3 + 2 * spatial + 1, cDim = 3 + spatial;
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineExpr> inExprs = {d(0), d(1), d(cDim)};
  for (int64_t i = 0; i < spatial; ++i)
    inExprs.push_back(d(3 + i) * strides[i] + d(cDim + 1 + i) * dilations[i]);
  SmallVector<int64_t> wDims = {1, 2, cDim};
  for (int64_t i = 0; i < spatial; ++i)
    wDims.push_back(cDim + 1 + i);
  SmallVector<AffineMap> maps = {
      AffineMap::get(loops, 0, inExprs, ctx), projection(ctx, loops, wDims),
      AffineMap::get(loops, 0, {}, ctx), AffineMap::get(loops, 0, {}, ctx),
      projection(ctx, loops, dimRange(0, cDim))};
  SmallVector<utils::IteratorType> iterators(cDim,
                                             utils::IteratorType::parallel);
  iterators.append(spatial + 1, utils::IteratorType::reduction);
  bool xUnsigned = tensorType(input).getElementType().isUnsignedInteger(),
       wUnsigned = wt.getElementType().isUnsignedInteger();
  Value r = generic(
      builder, loc, init,
      ValueRange{in, w, o.getInputZero(), o.getFilterZero()}, maps, iterators,
      [&](OpBuilder &b, Location l, ValueRange a) -> Value {
        auto shifted = [&](Value v, Value zero, bool isUnsigned) -> Value {
          auto ext = [&](Value e) -> Value {
            if (isUnsigned)
              return b.create<arith::ExtUIOp>(l, acc, e);
            return b.create<arith::ExtSIOp>(l, acc, e);
          };
          return b.create<arith::SubIOp>(l, ext(v), ext(zero));
        };
        Value p = b.create<arith::MulIOp>(l, shifted(a[0], a[2], xUnsigned),
                                          shifted(a[1], a[3], wUnsigned));
        return b.create<arith::AddIOp>(l, a[4], p);
      });
  // [N, G, O/G, out...] -> [N, O, out...] (-> [N, O, W] in 1-D).
  SmallVector<ReassociationIndices> merge = {{0}, {1, 2}};
  for (int64_t i = 0; i < spatial; ++i)
    merge.push_back({3 + i});
  Value result =
      builder.create<tensor::CollapseShapeOp>(loc, flatType, r, merge);
  if (oneD)
    result = builder.create<tensor::CollapseShapeOp>(loc, type, result, unitH);
  return result;
}

} // namespace

void loom::populateGraphToLinalgIntegerConvPatterns(
    RewritePatternSet &patterns) {
  patterns.add<LowerOpPattern<ConvIntegerOp, lowerConvInteger>>(
      patterns.getContext());
}
