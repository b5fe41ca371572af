//===- TensorBytes.h - the bytes of a constant tensor -----------*- C++ -*-===//

#ifndef LOOM_DIALECTS_GRAPH_TENSORBYTES_H
#define LOOM_DIALECTS_GRAPH_TENSORBYTES_H

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <string>

namespace loom::graph {

/// The dense row-major little-endian bytes of `value` (a DenseElementsAttr,
/// splats expanded, or a loaded dense_resource), one byte per i1 element.
/// Fails for a dense_resource whose blob is not loaded.
mlir::FailureOr<std::string> tensorBytes(mlir::ElementsAttr value);

/// A constant of `type` holding `bytes` (little-endian elements, as
/// tensorBytes gives them; not i1): over 1 KiB a resource blob named after
/// `name` (made an identifier) that takes the bytes over, printed once in
/// the IR's resource section; smaller, dense elements. Null when the bytes
/// do not fit the type.
mlir::ElementsAttr elementsFromBytes(mlir::ShapedType type, std::string bytes,
                                     llvm::StringRef name);

/// `value` as dense elements (a resource blob's bytes copied, for code
/// that reads elements one by one: resources give no element access); null
/// for other attributes or i1 resources.
mlir::DenseElementsAttr denseElements(mlir::ElementsAttr value);

} // namespace loom::graph

#endif // LOOM_DIALECTS_GRAPH_TENSORBYTES_H
