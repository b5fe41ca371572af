//===- Qat.h - loomc train --qat: marks, ranges, the QDQ export -*- C++ -*-===//
//
// Quantization-aware training (docs/quantization.md). `loomc train --qat
// DATA.npz` observes the activation ranges of the products that `loomc
// quantize --mode static` quantizes (on DATA, in loom-run, as calibration
// does), marks those products in the imported graph for
// --loom-fake-quant, and records in the kept source model what `loomc
// export` needs to write the trained model as the same QDQ form.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMPILER_QAT_H
#define LOOM_COMPILER_QAT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/Error.h"

#include <map>
#include <string>

namespace onnx {
class ModelProto;
} // namespace onnx

namespace loom::qat {

/// The metadata_props key of the record in the kept source model.
constexpr const char *kMetadataKey = "loom.qat";

struct QatOptions {
  /// The calibration .npz (one array per graph input).
  std::string data;
  /// Nodes whose name matches stay f32 (loomc quantize's --exclude).
  std::string exclude;
  /// Learned activation scales (--loom-fake-quant learned-scales).
  bool learnedScales = false;
  /// The loom-run that runs calibration, and the model's folder.
  std::string loomRun, modelDir = ".";
};

/// Calibrates the ONNX model at `modelPath` on `options.data`, marks each
/// quantized product in `module` (imported from it) with `loom.qat =
/// {activation, min, max}`, and adds the record to `sourceOnnx` (the kept
/// source model's bytes). Errors name the node or file.
llvm::Error prepare(mlir::MLIRContext &ctx, llvm::StringRef modelPath,
                    const QatOptions &options, mlir::ModuleOp module,
                    std::string &sourceOnnx);

} // namespace loom::qat

#endif // LOOM_COMPILER_QAT_H
