//===- OnnxImporter.h - ONNX ModelProto -> graph IR -------------*- C++ -*-===//
//
// Imports an ONNX model into a module holding one `func.func` of graph ops.
// Ops are looked up in a table keyed by (domain, op type, since-opset).
// Every node whose op is not in the table is reported (all of them, one
// diagnostic each) before anything is built; then nodes are built in order
// through the GraphBuilder, so a shape error names the node that caused it.
// Diagnostics go to the context's diagnostic engine.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_FRONTENDS_ONNX_ONNXIMPORTER_H
#define LOOM_FRONTENDS_ONNX_ONNXIMPORTER_H

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace onnx {
class ModelProto;
} // namespace onnx

namespace loom::onnx_import {

/// The source model as a training compile keeps it for `loomc export`
/// (CompileOptions::sourceOnnx): importFile moves the data of each large
/// initializer out of its own copy of the model into the IR (not copied:
/// the compiler holds each weight once) and records where it went.
struct KeptSource {
  /// The serialized ModelProto, without the data of the initializers in
  /// `data`.
  std::string model;
  /// By initializer name: the attribute (a dense_resource blob) now
  /// holding its bytes.
  std::map<std::string, mlir::ElementsAttr> data;
};

struct ImportOptions {
  /// Name of the imported function.
  std::string funcName = "forward";
  /// Folder that external-data paths are relative to (the model's folder).
  std::string modelDir = ".";
  /// Graph inputs frozen to a value (`loomc --bind NAME=FILE`): each is
  /// imported as an initializer and is no longer an input. Values are
  /// serialized onnx TensorProtos.
  std::map<std::string, std::string> bindings;
  /// For training (`loomc train`): every float initializer of rank >= 1
  /// becomes a `graph.param` argument named as the initializer, its value
  /// kept as the argument's `graph.initial_value`. Rank-0 initializers
  /// (scalars folded by exporters) stay constants.
  bool initializersAsParams = false;
  /// Sizes for dynamic input dims: by `dim_param` name, and `batch` for any
  /// other dynamic dim 0 (0: keep dynamic). Training needs static shapes.
  std::map<std::string, int64_t> dimSizes;
  int64_t batch = 0;
  /// Sequence and optional graph inputs, fixed per compile as shapes are
  /// (docs/architecture.md, "Sequence and optional graph inputs"): a
  /// sequence input NAME of N elements (`loomc --seq-len NAME=N`) becomes
  /// the tensor inputs NAME.0 ... NAME.N-1; an optional input is present
  /// (a tensor input NAME, or a sequence's NAME.K) unless listed absent
  /// (`--absent NAME`: no input at all).
  std::map<std::string, int64_t> sequenceLengths;
  std::set<std::string> absentInputs;
  /// Shapes of graph inputs (and of sequence elements NAME.K, or NAME for
  /// all of a sequence's elements) the model leaves undeclared or dynamic
  /// (`--input-shape NAME=2x3`); they must agree with declared dims.
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// Limits on what a model may make the importer build or read, checked
  /// before anything is allocated (`loomc --max-nodes`,
  /// `--max-tensor-bytes`; docs/hardening.md): nodes in the graph, and
  /// bytes of one tensor (an initializer, a Constant, external data).
  int64_t maxNodes = 1000000;
  uint64_t maxTensorBytes = uint64_t(8) << 30;
  /// When set, the `location` of each external-data file the import read
  /// (relative to modelDir) is appended to it, once: what the imported
  /// module depends on besides the model's own bytes (loomc's compile
  /// cache, compiler/CompileCache.h).
  std::vector<std::string> *externalFilesRead = nullptr;
  /// importFile: when set, the source model is kept here (KeptSource).
  KeptSource *keepSource = nullptr;
};

/// Imports `model`. On failure every problem found has been emitted as a
/// diagnostic on `ctx`.
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
importModel(mlir::MLIRContext &ctx, const onnx::ModelProto &model,
            const ImportOptions &options);

/// Reads an ONNX file: binary protobuf (`.onnx`), or the ONNX text syntax
/// (`.onnxtext`, as printed by onnx.printer). Malformed or truncated files
/// fail with a diagnostic naming the file.
mlir::LogicalResult readModelFile(mlir::MLIRContext &ctx, llvm::StringRef path,
                                  onnx::ModelProto &model);

/// readModelFile + importModel, with external data relative to `path`.
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
importFile(mlir::MLIRContext &ctx, llvm::StringRef path,
           ImportOptions options = {});

} // namespace loom::onnx_import

#endif // LOOM_FRONTENDS_ONNX_ONNXIMPORTER_H
