//===- IntegerConv.cpp - dequantized convolutions as integer ones ---------===//
//
// `--loom-integer-conv` (Passes.td): conv(dequantize(x), dequantize(w)) of
// 8-bit tensors becomes graph.conv_integer, widened to f32 and scaled once:
// sum sx (x - zx) sw[o] (w - zw) = sx sw[o] sum (x - zx)(w - zw), the bias
// added after. The padding of the float convolution is 0.0, which is the
// dequantized zero point, so it pads the integers with zx as
// conv_integer does.
//
//===----------------------------------------------------------------------===//

#include "passes/Quantization/Passes.h"

#include "passes/Quantization/Dequantized.h"

using namespace mlir;
using namespace loom::graph;
using namespace loom::quantization;

namespace loom {
#define GEN_PASS_DEF_INTEGERCONVPASS
#include "passes/Quantization/Passes.h.inc"
} // namespace loom

namespace {

/// Rewrites `conv` when it fits (see Passes.td); true when it did.
bool rewrite(ConvOp conv) {
  DequantizeOp x = dequantizedBytes(conv.getInput()),
               w = dequantizedBytes(conv.getFilter());
  if (!x || !w)
    return false;
  // x's scale per tensor; w's per tensor or per output channel (dim 0).
  RankedTensorType wt = tensorOf(w.getX());
  int64_t xVaries =
      varyingDim(tensorOf(x.getScale()), tensorOf(x.getX()).getRank());
  int64_t wVaries = varyingDim(tensorOf(w.getScale()), wt.getRank());
  if (xVaries != -1 || (wVaries != -1 && wVaries != 0))
    return false;
  RankedTensorType st = tensorOf(w.getScale());
  if (wVaries == 0 && !st.hasStaticShape())
    return false;

  OpBuilder b(conv);
  Location loc = conv.getLoc();
  Value zx = asScalar(b, x.getZeroPoint()), zw = asScalar(b, w.getZeroPoint());
  if (!zx || !zw)
    return false;
  auto reshaped = [&](Value v, ArrayRef<int64_t> shape) -> Value {
    if (tensorOf(v).getShape() == shape)
      return v;
    return b.create<ReshapeOp>(loc, v, shape);
  };
  // Per-channel values as [O, 1...] against the result [N, O, spatial...].
  int64_t rank = tensorOf(conv.getResult()).getRank();
  auto perChannel = [&](Value v, int64_t n) {
    SmallVector<int64_t> shape(rank - 1, 1);
    shape[0] = n;
    return reshaped(v, shape);
  };
  Value sx = reshaped(x.getScale(), {});
  Value sw = wVaries == 0 ? perChannel(w.getScale(), st.getNumElements())
                          : reshaped(w.getScale(), {});
  auto product = b.create<ConvIntegerOp>(
      loc, x.getX(), w.getX(), zx, zw, conv.getStridesAttr(),
      conv.getPaddingAttr(), conv.getDilationsAttr(), conv.getGroupsAttr());
  Value widened =
      b.create<CastOp>(loc, product.getResult(), b.getF32Type()).getResult();
  Value y = b.create<MulOp>(loc, widened, b.create<MulOp>(loc, sx, sw));
  if (Value bias = conv.getBias())
    y = b.create<AddOp>(loc, y, perChannel(bias, tensorOf(bias).getDimSize(0)));
  conv.getResult().replaceAllUsesWith(y);
  conv.erase();
  // The dequantized copies go when nothing else reads them.
  if (x->use_empty())
    x.erase();
  if (w != x && w->use_empty())
    w.erase();
  return true;
}

struct IntegerConvPass : loom::impl::IntegerConvPassBase<IntegerConvPass> {
  void runOnOperation() override {
    SmallVector<ConvOp> convs;
    getOperation().walk([&](ConvOp conv) { convs.push_back(conv); });
    for (ConvOp conv : convs)
      rewrite(conv);
  }
};

} // namespace
