//===- Dequantized.cpp - reading dequantized 8-bit operands ---------------===//

#include "passes/Quantization/Dequantized.h"

#include "dialects/graph/TensorBytes.h"

using namespace mlir;
using namespace loom::graph;

namespace loom::quantization {

Value asScalar(OpBuilder &b, Value v) {
  RankedTensorType t = tensorOf(v);
  if (t.getRank() == 0)
    return v;
  Location loc = v.getLoc();
  if (t.hasStaticShape() && t.getNumElements() == 1)
    return b.create<ReshapeOp>(loc, v, ArrayRef<int64_t>{});
  // A splat constant, perhaps reshaped (per-axis parameters are reshaped
  // to broadcast along their axis).
  Value source = v;
  while (auto reshape = source.getDefiningOp<ReshapeOp>())
    source = reshape.getX();
  auto constant = source.getDefiningOp<ConstantOp>();
  if (!constant)
    return Value();
  // Its bytes (an inline or a dense_resource one), all alike.
  FailureOr<std::string> bytes = tensorBytes(constant.getValue());
  if (failed(bytes) || bytes->empty() ||
      bytes->find_first_not_of((*bytes)[0]) != std::string::npos)
    return Value();
  auto scalar = RankedTensorType::get({}, t.getElementType());
  return b.create<ConstantOp>(
      loc, DenseElementsAttr::get(scalar,
                                  APInt(8, static_cast<uint8_t>((*bytes)[0]))));
}

int64_t varyingDim(RankedTensorType s, int64_t rank) {
  int64_t dim = -1;
  for (auto [i, d] : llvm::enumerate(s.getShape())) {
    if (d == 1)
      continue;
    if (dim != -1)
      return -2;
    dim = rank - s.getRank() + static_cast<int64_t>(i);
  }
  return dim;
}

DequantizeOp dequantizedBytes(Value v) {
  auto dq = v.getDefiningOp<DequantizeOp>();
  if (!dq || !tensorOf(dq.getResult()).getElementType().isF32() ||
      !tensorOf(dq.getX()).getElementType().isInteger(8) ||
      tensorOf(dq.getX()).getShape() != tensorOf(dq.getResult()).getShape())
    return {};
  return dq;
}

} // namespace loom::quantization
