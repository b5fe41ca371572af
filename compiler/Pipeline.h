//===- Pipeline.h - a pipeline-parallel training artifact -------*- C++ -*-===//
//
// `loomc train --pipeline-stages S`: the loss function is cut into stages
// (--loom-pipeline-stages), each stage's forward, input-gradient and
// weight-gradient parts and each rank's optimizer step are built
// (--loom-pipeline-parts, then the data-parallel and optimizer passes the
// caller adds), each is compiled into its own artifact, and the artifact
// of the whole holds them with the schedule (message Pipeline of
// common/schema/loom_artifact.proto; docs/pipeline.md).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMPILER_PIPELINE_H
#define LOOM_COMPILER_PIPELINE_H

#include "compiler/Compile.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <functional>
#include <string>

namespace loom {

struct PipelineOptions {
  int64_t ranks = 2;         ///< S, along the mesh axis "pipe"
  int64_t virtualStages = 1; ///< v stages per rank
  int64_t microBatches = 4;  ///< m per optimizer step and replica
  int64_t dataRanks = 1;     ///< D data-parallel replicas
  std::string schedule = "1f1b";
  /// --stage-boundaries: op name texts where stages 1.. begin; empty:
  /// balanced by the cost model.
  std::string boundaries;
  std::string freeze;
  int64_t memoryBudget = 0; ///< saved activation bytes per rank; 0: none
  /// How the micro-batches' losses weigh: "cross_entropy" or "mse".
  std::string loss = "cross_entropy";
  int64_t ignoreIndex = -100;
  /// The outer artifact's Training: description, labels, horizon.
  std::string description, labels;
  int64_t totalSteps = 0;
  bool summary = false;
  /// --report: where to write the stages, the schedule's peaks and its
  /// bubbles as JSON; empty: nowhere.
  std::string report;
  /// Adds the passes that make rank `rank`'s optimizer step
  /// (`train_step`) from its gradient function: data parallel, optimizer.
  std::function<void(mlir::PassManager &pm, int64_t rank)> addUpdatePasses;
};

/// Compiles `module`'s loss function (the output of --loom-loss) into the
/// bytes of a pipeline artifact. `options` gives the code generation and
/// the outer Training's inference module and ONNX source.
mlir::LogicalResult compilePipeline(mlir::ModuleOp module,
                                    const PipelineOptions &pipeline,
                                    const CompileOptions &options,
                                    std::string &artifact);

} // namespace loom

#endif // LOOM_COMPILER_PIPELINE_H
