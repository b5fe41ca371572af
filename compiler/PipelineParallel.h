//===- PipelineParallel.h - a pipeline-parallel training artifact -*- C++
//-*-===//
//
// `loomc train --pipeline-stages S`: the loss function (the output of
// --loom-training-pipeline with pipeline-stages) is cut into stages
// (--loom-pipeline-stages), each stage's forward, input-gradient and
// weight-gradient parts and each rank's optimizer step are built
// (--loom-pipeline-parts, then --loom-pipeline-update-pipeline), each is
// compiled into its own artifact, and the artifact of the whole holds them
// with the schedule (message Pipeline of common/schema/loom_artifact.proto;
// docs/pipeline.md). `loomc schedule` simulates a schedule alone.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMPILER_PIPELINEPARALLEL_H
#define LOOM_COMPILER_PIPELINEPARALLEL_H

#include "compiler/Compile.h"
#include "compiler/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>

namespace loom {

/// Compiles `module`'s loss function into the bytes of a pipeline
/// artifact, with `training.pipeline`'s stages, micro-batches and schedule
/// and `training`'s optimizer for each rank's step. `options` gives the
/// code generation and the outer Training's inference module and ONNX
/// source. With `training.report` the stages, the schedule's peaks and its
/// bubbles go to `sink` as the section "pipeline".
mlir::LogicalResult compilePipelineParallel(mlir::ModuleOp module,
                                            const TrainingOptions &training,
                                            const CompileOptions &options,
                                            report::Sink *sink,
                                            std::string &artifact);

/// A schedule's costs for `simulatePipelineSchedule`: F, I, W and a
/// transfer (measured ones, e.g. from bench/pipeline).
struct ScheduleCosts {
  double forward = 1, backwardInput = 1, backwardWeight = 1, transfer = 0;
};

/// "F,I,W[,T]" (non-negative numbers) as costs; none for "".
llvm::Expected<std::optional<ScheduleCosts>>
parseScheduleCosts(llvm::StringRef text);

/// `loomc schedule`: makes the pipeline schedule `name` for `ranks` and
/// `microBatches` (`virtualStages` 0: the schedule's default), verifies it,
/// simulates it with unit costs (F = I = W = 1) and with `costs` when
/// given, and describes what it found: the bubble against the analytic
/// one, each rank's peak of micro-batches holding activations, and with
/// `timeline` each rank's timeline as text.
llvm::Expected<std::string>
simulatePipelineSchedule(const std::string &name, int64_t ranks,
                         int64_t microBatches, int64_t virtualStages,
                         const ScheduleCosts *costs, bool timeline);

} // namespace loom

#endif // LOOM_COMPILER_PIPELINEPARALLEL_H
