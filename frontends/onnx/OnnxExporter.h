//===- OnnxExporter.h - graph IR to ONNX ------------------------*- C++ -*-===//
//
// Writes a graph-IR function as an ONNX ModelProto at opset 17: function
// arguments become graph inputs (`graph.param` arguments too, as ONNX
// allows weights to be inputs), constants become initializers, results the
// graph outputs, and each graph op one ONNX node or a few. Errors name the
// op and its location.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_FRONTENDS_ONNX_ONNXEXPORTER_H
#define LOOM_FRONTENDS_ONNX_ONNXEXPORTER_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace onnx {
class ModelProto;
} // namespace onnx

namespace loom::onnx_export {

/// The ONNX opset the exporter writes.
constexpr int64_t kExportOpset = 17;

struct ExportOptions {
  /// The function to export; empty takes the module's only function.
  std::string funcName;
  /// The ONNX graph name.
  std::string graphName = "loom";
};

/// Exports one function of `module`; emits a diagnostic and fails on an op
/// that has no ONNX form at the exported opset.
mlir::LogicalResult exportModel(mlir::ModuleOp module, onnx::ModelProto &model,
                                const ExportOptions &options = {});

/// Runs onnx::checker::check_model (with shape inference); the message of
/// the first problem, or empty.
std::string checkModel(const onnx::ModelProto &model);

/// Exports and writes a binary .onnx file (checked first).
mlir::LogicalResult exportFile(mlir::ModuleOp module, llvm::StringRef path,
                               const ExportOptions &options = {});

} // namespace loom::onnx_export

#endif // LOOM_FRONTENDS_ONNX_ONNXEXPORTER_H
