//===- Pipelines.h - Loom's named pass pipelines ----------------*- C++ -*-===//
//
// The pass pipelines that loomc runs, as public functions with typed
// options, each also registered by name so that loom-opt (and lit) runs
// exactly what loomc runs:
//
//   --loom-training-pipeline='loss=cross_entropy logits=logits ...'
//       loss, mixed precision, tensor parallel, autodiff, data parallel,
//       optimizer, recomputation: a model function to the training step
//       (`loomc train`; docs/training.md)
//   --loom-pipeline-update-pipeline='rank=R ...'
//       one pipeline rank's optimizer step from its gradient function
//       (`loomc train --pipeline-stages`; docs/pipeline.md)
//   --loom-inference-pipeline='target=cpu'
//       graph IR to the target's code (`loomc compile`)
//
// TrainingOptions::verify() holds the refusals of option combinations;
// the parse* functions turn flag text into the typed options with the
// messages loomc has always printed.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMPILER_PIPELINES_H
#define LOOM_COMPILER_PIPELINES_H

#include "compiler/Compile.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace loom {

namespace report {
class Sink;
} // namespace report

enum class LossKind { CrossEntropy, Mse };
enum class OptimizerKind { Sgd, Adam, AdamW };
enum class LrSchedule { Constant, Cosine };
/// f32, or mixed precision with 16-bit matmuls and convolutions.
enum class Precision { F32, BF16, F16 };
/// Which ops follow the 16-bit ones (--loom-mixed-precision policy).
enum class PrecisionPolicy { Conservative, Default, Aggressive };
/// Which forward values the backward recomputes; Unset: Optimal with a
/// memory budget, else None (and the pass runs only when something asks
/// for it).
enum class RecomputeMode { Unset, None, All, Sqrt, Optimal };

/// The flag spelling of each ("cross_entropy", "adamw", "bf16", ...).
llvm::StringRef toString(LossKind kind);
llvm::StringRef toString(OptimizerKind kind);
llvm::StringRef toString(LrSchedule schedule);
llvm::StringRef toString(Precision precision);
llvm::StringRef toString(PrecisionPolicy policy);
llvm::StringRef toString(RecomputeMode mode);

/// Flag text to the typed option; the error names the accepted values.
llvm::Expected<LossKind> parseLossKind(llvm::StringRef text);
llvm::Expected<OptimizerKind> parseOptimizerKind(llvm::StringRef text);
llvm::Expected<LrSchedule> parseLrSchedule(llvm::StringRef text);
llvm::Expected<Precision> parsePrecision(llvm::StringRef text);
llvm::Expected<PrecisionPolicy> parsePrecisionPolicy(llvm::StringRef text);
llvm::Expected<RecomputeMode> parseRecomputeMode(llvm::StringRef text);
/// "B1,B2" (adam(w)'s betas).
llvm::Error parseBetas(llvm::StringRef text, double &beta1, double &beta2);

/// Bytes from "123", "1e9", "64KB", "512MiB", "2GiB" (K/M/G: powers of
/// 1000; Ki/Mi/Gi: of 1024; a trailing B optional); -1 when malformed.
int64_t parseByteSize(llvm::StringRef text);

/// Pipeline parallelism (docs/pipeline.md): the loss function cut into
/// stages over `stages` ranks, `microBatches` per optimizer step.
struct PipelineParallelOptions {
  int64_t stages = 0; ///< S ranks along the mesh axis "pipe"; 0: none
  int64_t microBatches = 4;
  /// Chunks per rank; 0: 2 for the interleaved schedule, else 1.
  int64_t virtualStages = 0;
  /// gpipe, 1f1b, interleaved or zb-h1; empty: 1f1b.
  std::string schedule;
  /// Op name texts where stages 1.. begin; empty: balanced by the cost
  /// model.
  std::string boundaries;

  bool enabled() const { return stages > 0; }
  std::string scheduleOrDefault() const {
    return schedule.empty() ? "1f1b" : schedule;
  }
  int64_t virtualStagesOrDefault() const {
    return virtualStages > 0                      ? virtualStages
           : scheduleOrDefault() == "interleaved" ? 2
                                                  : 1;
  }
};

/// What `loomc train` compiles: the loss, the optimizer and its schedule,
/// precision, parallelism and memory (docs/training.md).
struct TrainingOptions {
  // The loss (--loom-loss).
  LossKind loss = LossKind::CrossEntropy;
  std::string logits;            ///< the output the loss reads
  std::string labels = "labels"; ///< the labels input's name
  int64_t ignoreIndex = -100;
  double labelSmoothing = 0.0;

  // The optimizer step (--loom-optimizer).
  OptimizerKind optimizer = OptimizerKind::AdamW;
  double lr = 1e-3;
  double momentum = 0.0;
  bool nesterov = false;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weightDecay = -1.0; ///< -1: the optimizer's default
  double clipNorm = 0.0;     ///< 0: no clipping
  LrSchedule lrSchedule = LrSchedule::Constant;
  int64_t warmup = 0;
  int64_t totalSteps = 0;
  int64_t accumulate = 1;
  double lossScaleInit = 65536.0;
  int64_t lossScaleInterval = 2000;
  /// Parameters whose name matches this regex stay fixed.
  std::string freeze;
  /// The gradient function (`forward_grad`) instead of the training step.
  bool gradientsOnly = false;

  Precision precision = Precision::F32;
  PrecisionPolicy precisionPolicy = PrecisionPolicy::Default;

  /// Quantization-aware training (docs/quantization.md): the products the
  /// driver marked with `loom.qat` get fake int8 operands
  /// (--loom-fake-quant); `qat` is the calibration data (--qat DATA.npz),
  /// empty: none.
  std::string qat;
  bool qatLearnedScales = false;
  std::string qatExclude; ///< nodes kept f32, as loomc quantize's --exclude

  // Parallelism.
  int64_t dataParallel = 1;
  int64_t tensorParallel = 1;
  /// Tensor parallel: the activations between the row- and the next
  /// column-parallel matmul split along the sequence (--sequence-parallel).
  bool sequenceParallel = false;
  /// Tensor parallel: the token embedding, the LM head and the
  /// cross-entropy split over the vocab (--vocab-parallel).
  bool vocabParallel = false;
  int64_t zeroStage = 0;
  int64_t bucketBytes = 0; ///< 0: chosen from the model
  PipelineParallelOptions pipeline;

  // Memory.
  int64_t memoryBudget = 0; ///< planned peak bytes; 0: none
  RecomputeMode recompute = RecomputeMode::Unset;

  /// "cpu" or "cuda": the recompute pass plans with the target's passes.
  std::string target = "cpu";
  /// CUDA: softmax attention becomes graph.attention before autodiff
  /// (--loom-fuse-attention) when it has at least this many scores; -1:
  /// never (loomc --fused-attention=auto|on|off).
  int64_t fuseAttentionMinScores = codegen::kFuseAttentionAuto;
  /// The passes explain their decisions (a summary on stderr, the JSON in
  /// the report sink): loomc train --report.
  bool report = false;
  /// --print-summary: the pipeline stages say what each holds.
  bool printSummary = false;

  /// The function the pipeline leaves for the artifact: "train_step", or
  /// "forward_grad" with gradientsOnly.
  std::string entryFunction() const {
    return gradientsOnly ? "forward_grad" : "train_step";
  }
  /// The recompute strategy that runs; None when the pass does not run.
  RecomputeMode recomputeStrategy() const;
  /// Whether --loom-recompute runs (a budget, a strategy or a report).
  bool runsRecompute() const {
    return memoryBudget > 0 || recompute != RecomputeMode::Unset || report;
  }
  /// The line recorded in the artifact: "cross_entropy loss on logits".
  std::string description() const;
  /// One rank's micro-batch of a global batch of `batch` samples: split
  /// over the data-parallel ranks and the pipeline's micro-batches.
  llvm::Expected<int64_t> microBatchSize(int64_t batch) const;

  /// Refuses combinations that cannot be compiled, with the message
  /// loomc prints after "error: ".
  llvm::Error verify() const;
};

/// Training options as text (loomc train's flags, the training pipeline's
/// options), which parseTrainingOptions checks and types.
struct TrainingOptionsText {
  std::string loss = "cross_entropy";
  std::string optimizer = "adamw";
  std::string betas = "0.9,0.999";
  std::string lrSchedule; ///< empty: constant
  std::string precision = "f32";
  std::string precisionPolicy = "default";
  std::string recompute;    ///< empty: RecomputeMode::Unset
  std::string memoryBudget; ///< a size ("512MiB"); empty: none
  std::string bucketSize;   ///< a size; empty: chosen from the model
};

/// The deprecated `--schedule NAME[,NAME]`, which named the learning
/// rate's schedule (constant, cosine) and the pipeline's in one list: each
/// into `text.lrSchedule` or `pipeline.schedule` unless those are given.
/// Returns the warning that names the new spellings.
llvm::Expected<std::string>
takeDeprecatedSchedule(llvm::ArrayRef<std::string> names,
                       TrainingOptionsText &text,
                       PipelineParallelOptions &pipeline);

/// Sets the typed fields of `options` from `text`, then verifies
/// `options`; the error has loomc's message.
llvm::Error parseTrainingOptions(const TrainingOptionsText &text,
                                 TrainingOptions &options);

/// Adds the passes that turn a model function (outputs, graph.param
/// arguments) into the training step, or with gradientsOnly into the
/// gradient function, and leave only that function in the module. With
/// `options.pipeline` only the loss and (bf16) the mixed precision run:
/// compilePipelineParallel (compiler/PipelineParallel.h) cuts the stages.
/// With `sink` the passes' reports go there (options.report).
void buildTrainingPassPipeline(mlir::OpPassManager &pm,
                               const TrainingOptions &options,
                               report::Sink *sink = nullptr);

/// Adds the passes that make pipeline rank `rank`'s optimizer step
/// (`train_step`) from its gradient function `pipeline_update_<rank>`:
/// the data-parallel reduction and the optimizer, then canonicalization.
void buildPipelineUpdatePassPipeline(mlir::OpPassManager &pm,
                                     const TrainingOptions &options,
                                     int64_t rank);

/// Adds the passes from graph IR to the target's code: the CPU lowering
/// to the LLVM dialect, or the CUDA target's kernel regions (what
/// compileToArtifact runs before emitting code).
void buildInferencePipeline(mlir::OpPassManager &pm,
                            const CompileOptions &options);

/// Registers the pipelines above by name for loom-opt
/// (compiler/InitAll.cpp calls it).
void registerLoomPipelines();

} // namespace loom

#endif // LOOM_COMPILER_PIPELINES_H
