//===- TensorBytes.cpp - the bytes of a constant tensor -------------------===//

#include "dialects/graph/TensorBytes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/StringExtras.h"

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

/// Dense elements of `type` over `raw`; null when the bytes do not fit.
static DenseElementsAttr denseFromBytes(ShapedType type, ArrayRef<char> raw) {
  bool detectedSplat = false;
  if (!DenseElementsAttr::isValidRawBuffer(type, raw, detectedSplat))
    return nullptr;
  return DenseElementsAttr::getFromRawBuffer(type, raw);
}

ElementsAttr elementsFromBytes(ShapedType type, std::string bytes,
                               StringRef name) {
  if (bytes.size() > 1024) {
    // Resource keys are identifiers in the IR text: keep [A-Za-z0-9_].
    std::string key = name.empty() ? "tensor" : name.str();
    for (char &ch : key)
      if (!llvm::isAlnum(ch) && ch != '_')
        ch = '_';
    if (llvm::isDigit(key.front()))
      key.insert(key.begin(), '_');
    // The blob takes the bytes over (no second copy of a large weight):
    // operator new's memory is aligned for any scalar.
    auto *owned = new std::string(std::move(bytes));
    AsmResourceBlob blob(
        ArrayRef<char>(owned->data(), owned->size()), alignof(int64_t),
        [owned](void *, size_t, size_t) { delete owned; },
        /*dataIsMutable=*/false);
    return DenseResourceElementsAttr::get(type, key, std::move(blob));
  }
  return denseFromBytes(type, ArrayRef<char>(bytes.data(), bytes.size()));
}

DenseElementsAttr denseElements(ElementsAttr value) {
  if (auto dense = dyn_cast<DenseElementsAttr>(value))
    return dense;
  auto type = cast<ShapedType>(value.getType());
  FailureOr<std::string> bytes = tensorBytes(value);
  if (failed(bytes) || type.getElementType().isInteger(1))
    return nullptr;
  return denseFromBytes(type, ArrayRef<char>(bytes->data(), bytes->size()));
}

} // namespace loom::graph
