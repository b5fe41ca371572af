//===- ExportTrained.h - a trained model back to ONNX -----------*- C++ -*-===//
//
// `loomc export TRAIN.loom [--checkpoint CK.loomckpt] -o OUT.onnx`: the
// inference model a training artifact was compiled from, with the trained
// parameters (the checkpoint's, else the initial ones): the ONNX source
// with its initializers replaced, or the graph-IR model exported with its
// parameters as initializers.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMPILER_EXPORTTRAINED_H
#define LOOM_COMPILER_EXPORTTRAINED_H

#include "frontends/onnx/OnnxExporter.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace loom {

/// Writes at `outputPath` the checked ONNX model of the training artifact
/// at `artifactPath` with the parameters of the checkpoint at
/// `checkpointPath` (empty: the initial ones), which must hold exactly the
/// artifact's parameters; past 2 GiB (or as `external` says) its
/// initializers go to external data beside it (onnx_export::writeModel).
/// `funcName` picks the function of a graph-IR model. Errors are
/// diagnostics.
mlir::LogicalResult exportTrainedModel(
    mlir::MLIRContext &ctx, llvm::StringRef artifactPath,
    llvm::StringRef checkpointPath, llvm::StringRef funcName,
    llvm::StringRef outputPath,
    onnx_export::ExternalData external = onnx_export::ExternalData::Auto);

} // namespace loom

#endif // LOOM_COMPILER_EXPORTTRAINED_H
