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

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace onnx {
class ModelProto;
} // namespace onnx

namespace loom::onnx_export {

/// The ONNX opset the exporter writes.
constexpr int64_t kExportOpset = 17;

/// Where writeModel puts the data of initializers of at least 1 KiB
/// (`loomc export --external-data`): in the model unless it would pass
/// protobuf's 2 GiB cap (Auto), always in `PATH.data` beside it (Always),
/// or never (Never: a model over 2 GiB is refused).
enum class ExternalData { Auto, Always, Never };

struct ExportOptions {
  /// The function to export; empty takes the module's only function.
  std::string funcName;
  /// The ONNX graph name.
  std::string graphName = "loom";
  /// `graph.param` arguments with a `graph.initial_value` become
  /// initializers named as the parameter (trained weights), not inputs.
  bool paramsAsInitializers = false;
  ExternalData externalData = ExternalData::Auto;
};

/// A tensor's value as an ONNX initializer holds it.
struct InitializerValue {
  int32_t dataType = 0; ///< onnx.TensorProto.DataType
  std::vector<int64_t> dims;
  std::string rawData; ///< little endian, row-major
};

/// Parses the serialized ModelProto `onnxBytes` into `out` with the
/// initializers named in `values` replaced (same dtype and shape, else an
/// error; the values' data is moved, not copied) and checks it. Returns
/// the problem, or "".
std::string replaceInitializers(const std::string &onnxBytes,
                                std::map<std::string, InitializerValue> &values,
                                onnx::ModelProto &out);

/// Writes `model` at `path` atomically (a temporary file, fsynced, renamed).
/// A model whose message would pass protobuf's 2 GiB cap (or any model,
/// with ExternalData::Always) keeps the data of its initializers of at
/// least 1 KiB as ONNX external data (as torch.onnx does): one file,
/// `PATH.data` beside it (written first), each tensor at a 4096-byte
/// aligned offset, named by its `location`, `offset` and `length`; `model`
/// is left pointing at it. Returns the problem, or "".
std::string writeModel(onnx::ModelProto &model, const std::string &path,
                       ExternalData external = ExternalData::Auto);

/// Rewrites the serialized ModelProto `onnxBytes`, a training artifact's
/// source model kept for export: the data of the initializers named in
/// `names` is dropped (name, dtype and dims kept; the trained values
/// replace exactly these, replaceInitializers, so storing their data twice
/// would only double the artifact), and any other initializer whose data
/// the importer moved out (ImportOptions::keepSource) gets it back from
/// `dataOf(name)`. Names the model lacks are ignored. Returns the problem,
/// or "".
std::string dropInitializerData(
    const std::string &onnxBytes, const std::set<std::string> &names,
    const std::function<std::optional<std::string_view>(const std::string &)>
        &dataOf,
    std::string &out);

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
