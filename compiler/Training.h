//===- Training.h - a training step to a .loom artifact ---------*- C++ -*-===//
//
// The library behind `loomc train` (docs/training.md): the training pass
// pipeline on a model (compiler/Pipelines.h), then the training step's
// artifact, or the pipeline-parallel artifact, and the report of the
// passes' decisions with the compiled memory plan.
//
//   report::Sink sink;
//   if (failed(runTrainingPipeline(module, training, sink)) ||
//       failed(compileTraining(module, training, options, sink, bytes,
//                              &compiled)))
//     return failure();
//   llvm::Error budget = finishTrainingReport(training, sink, compiled);
//   // write the artifact, sink.all() as the report, then check `budget`
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMPILER_TRAINING_H
#define LOOM_COMPILER_TRAINING_H

#include "compiler/Compile.h"
#include "compiler/Pipelines.h"
#include "frontends/onnx/OnnxImporter.h"
#include "passes/PassReport.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>

namespace loom {

/// Keeps what `loomc export` needs of the model before it is trained: for
/// an `.onnx` model the `source` the importer kept (its parameters' data is
/// dropped when the artifact is made, the other initializers' data put
/// back), else the module as MLIR bytecode.
mlir::LogicalResult keepInferenceModel(mlir::ModuleOp module,
                                       onnx_import::KeptSource *source,
                                       CompileOptions &options);

/// Runs buildTrainingPassPipeline on `module`: afterwards it holds the
/// training step (or the gradient function), or with `training.pipeline`
/// the loss function for compileTraining to cut. `timing` prints each
/// pass's time. Errors are diagnostics.
mlir::LogicalResult runTrainingPipeline(mlir::ModuleOp module,
                                        const TrainingOptions &training,
                                        report::Sink &sink,
                                        bool timing = false);

/// Compiles what runTrainingPipeline left into the bytes of an artifact:
/// the training step's, or the pipeline-parallel one. `options` gives the
/// code generation and, for `loomc export`, the inference module and ONNX
/// source (dropped for the gradient function).
mlir::LogicalResult compileTraining(mlir::ModuleOp module,
                                    const TrainingOptions &training,
                                    CompileOptions options, report::Sink &sink,
                                    std::string &artifact,
                                    CompileReport *compiled = nullptr);

/// After a compile with --loom-recompute: the compiled memory plan's peak
/// goes into the report ("memory_plan", and "codegen_planned_peak" beside
/// the pass's planned peak; with `training.report` a line on stderr too).
/// An error when the compiled step exceeds the memory budget.
llvm::Error finishTrainingReport(const TrainingOptions &training,
                                 report::Sink &sink,
                                 const CompileReport &compiled);

} // namespace loom

#endif // LOOM_COMPILER_TRAINING_H
