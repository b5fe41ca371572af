//===- GraphCost.cpp - CostOpInterface's estimates of the graph ops -------===//
//
// One rule per op class, read from the class traits (GraphOps.h) and the
// static shapes, so a new op with the right trait gets a sensible estimate
// without a line here; contractions count their multiply-adds.
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/GraphOps.h"

using namespace mlir;

namespace loom::graph::detail {

namespace {

int64_t numElements(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  return tensor && tensor.hasStaticShape() ? tensor.getNumElements() : 0;
}

int64_t tensorBytes(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  Type e = tensor.getElementType();
  int64_t bits = e.isIntOrFloat() ? e.getIntOrFloatBitWidth() : 8;
  return tensor.getNumElements() * std::max<int64_t>(1, bits / 8);
}

bool isView(Operation *op) {
  return isa<ReshapeOp, SqueezeOp, UnsqueezeOp, FlattenOp>(op);
}

} // namespace

int64_t estimateFlops(Operation *op) {
  if (op->getNumResults() == 0)
    return 0;
  int64_t out = numElements(op->getResult(0).getType());
  int64_t in =
      op->getNumOperands() ? numElements(op->getOperand(0).getType()) : out;
  if (auto mm = dyn_cast<MatmulOp>(op)) {
    auto lhs = cast<RankedTensorType>(mm.getLhs().getType());
    int64_t k = lhs.getRank() == 1     ? lhs.getDimSize(0)
                : mm.getTransposeLhs() ? lhs.getDimSize(lhs.getRank() - 2)
                                       : lhs.getDimSize(lhs.getRank() - 1);
    return ShapedType::isDynamic(k) ? 0 : 2 * out * k;
  }
  if (isa<ConvOp, ConvIntegerOp>(op)) {
    auto w = cast<RankedTensorType>(op->getOperand(1).getType());
    if (!w.hasStaticShape())
      return 0;
    return 2 * out *
           (w.getNumElements() / std::max<int64_t>(1, w.getDimSize(0)));
  }
  if (isa<SoftmaxOp, LogSoftmaxOp, CrossEntropyOp>(op))
    return 5 * in;
  if (op->hasTrait<GraphTrait::Normalization>())
    return 8 * in;
  if (op->hasTrait<GraphTrait::Reduction>() ||
      isa<MseLossOp, GlobalAvgPoolOp, CumSumOp, MaxPoolOp, AvgPoolOp>(op))
    return in;
  if (op->hasTrait<OpTrait::Elementwise>() ||
      op->hasTrait<GraphTrait::BroadcastingElementwise>())
    return out;
  return 0;
}

int64_t estimateBytes(Operation *op) {
  if (isView(op))
    return 0;
  int64_t bytes = 0;
  for (Type t : op->getOperandTypes())
    bytes += tensorBytes(t);
  for (Type t : op->getResultTypes())
    bytes += tensorBytes(t);
  return bytes;
}

} // namespace loom::graph::detail
