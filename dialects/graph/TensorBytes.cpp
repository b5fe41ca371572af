//===- TensorBytes.cpp - the bytes of a constant tensor -------------------===//

#include "dialects/graph/TensorBytes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

using namespace mlir;

namespace loom::graph {

static void appendElementBytes(std::string &out, const APInt &bits,
                               unsigned width) {
  unsigned bytes = width == 1 ? 1 : width / 8;
  uint64_t v = bits.getZExtValue();
  for (unsigned i = 0; i < bytes; ++i)
    out.push_back((char)((v >> (8 * i)) & 0xff));
}

FailureOr<std::string> tensorBytes(ElementsAttr value) {
  if (auto res = dyn_cast<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = res.getRawHandle().getBlob();
    if (!blob)
      return failure();
    ArrayRef<char> data = blob->getData();
    return std::string(data.data(), data.size());
  }
  auto dense = dyn_cast<DenseElementsAttr>(value);
  if (!dense)
    return failure();
  Type elem = dense.getElementType();
  unsigned width = elem.getIntOrFloatBitWidth();
  std::string raw;
  raw.reserve(dense.getNumElements() * std::max(1u, width / 8));
  if (isa<FloatType>(elem)) {
    for (const APFloat &f : dense.getValues<APFloat>())
      appendElementBytes(raw, f.bitcastToAPInt(), width);
  } else {
    for (const APInt &i : dense.getValues<APInt>())
      appendElementBytes(raw, i, width);
  }
  return raw;
}

} // namespace loom::graph
