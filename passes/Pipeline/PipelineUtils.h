//===- PipelineUtils.h - helpers of the pipeline passes ---------*- C++ -*-===//

#ifndef LOOM_PASSES_PIPELINE_PIPELINEUTILS_H
#define LOOM_PASSES_PIPELINE_PIPELINEUTILS_H

#include "mlir/IR/Location.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseSet.h"

#include <string>

namespace loom::pipeline {

/// The attributes `--loom-pipeline-stages` puts on stage functions.
inline constexpr llvm::StringLiteral kStageAttr = "loom.pipeline.stage";
inline constexpr llvm::StringLiteral kFlopsAttr = "loom.pipeline.flops";
inline constexpr llvm::StringLiteral kDescriptionAttr =
    "loom.pipeline.description";
/// The parameters a stage owns (names) and the bytes it sends per
/// micro-batch.
inline constexpr llvm::StringLiteral kParamsAttr = "loom.pipeline.params";
inline constexpr llvm::StringLiteral kSentBytesAttr =
    "loom.pipeline.sent_bytes";
inline constexpr llvm::StringLiteral kInAttr = "loom.pipeline.in";
inline constexpr llvm::StringLiteral kOutAttr = "loom.pipeline.out";
/// On the parts `--loom-pipeline-parts` makes: "F", "I", "W" or "update",
/// and the bytes a forward keeps per micro-batch until its backward.
inline constexpr llvm::StringLiteral kPartAttr = "loom.pipeline.part";
inline constexpr llvm::StringLiteral kSavedBytesAttr =
    "loom.pipeline.saved_bytes";
/// On the all-reduce of the loss scale over the pipe axis in an update's
/// gradient function (f16): the ranks without the scale's state report it
/// as their step's "loss_scale".
inline constexpr llvm::StringLiteral kLossScaleSumAttr =
    "loom.pipeline.loss_scale_sum";

/// The cost model: an op's FLOPs (2 M N K for a matmul, else its largest
/// operand or result's elements) and the bytes of its operands and
/// results.
double opFlops(mlir::Operation *op);
double opBytes(mlir::Operation *op);
/// A static tensor's bytes; 0 otherwise.
int64_t valueBytes(mlir::Value v);

/// The first name in a location (an ONNX node's); "" without one.
std::string locationName(mlir::Location loc);

/// Whether `op` may be copied wherever it is needed: free of side effects
/// and regions, and all its operands in `copyable` (constants, parameters
/// and what only they make).
bool isCopyable(mlir::Operation *op,
                const llvm::DenseSet<mlir::Value> &copyable);

} // namespace loom::pipeline

#endif // LOOM_PASSES_PIPELINE_PIPELINEUTILS_H
