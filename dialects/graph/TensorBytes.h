//===- TensorBytes.h - the bytes of a constant tensor -----------*- C++ -*-===//

#ifndef LOOM_DIALECTS_GRAPH_TENSORBYTES_H
#define LOOM_DIALECTS_GRAPH_TENSORBYTES_H

#include "mlir/IR/BuiltinAttributeInterfaces.h"

#include <string>

namespace loom::graph {

/// The dense row-major little-endian bytes of `value` (a DenseElementsAttr,
/// splats expanded, or a loaded dense_resource), one byte per i1 element.
/// Fails for a dense_resource whose blob is not loaded.
mlir::FailureOr<std::string> tensorBytes(mlir::ElementsAttr value);

} // namespace loom::graph

#endif // LOOM_DIALECTS_GRAPH_TENSORBYTES_H
