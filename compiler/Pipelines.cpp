//===- Pipelines.cpp - Loom's named pass pipelines ------------------------===//

#include "compiler/Pipelines.h"

#include "compiler/Passes.h"
#include "loom/common/Schedule.h"
#include "passes/Autodiff/Passes.h"
#include "passes/Fusion/Passes.h"
#include "passes/MixedPrecision/Passes.h"
#include "passes/PassReport.h"
#include "passes/Quantization/Passes.h"
#include "passes/Recompute/Passes.h"
#include "passes/Sharding/Passes.h"
#include "passes/Training/Passes.h"

#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <algorithm>

using namespace mlir;

namespace loom {

//===----------------------------------------------------------------------===//
// Typed options
//===----------------------------------------------------------------------===//

static llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::StringRef toString(LossKind kind) {
  return kind == LossKind::Mse ? "mse" : "cross_entropy";
}

llvm::StringRef toString(OptimizerKind kind) {
  switch (kind) {
  case OptimizerKind::Sgd:
    return "sgd";
  case OptimizerKind::Adam:
    return "adam";
  case OptimizerKind::AdamW:
    return "adamw";
  }
  llvm_unreachable("optimizer");
}

llvm::StringRef toString(LrSchedule schedule) {
  return schedule == LrSchedule::Cosine ? "cosine" : "constant";
}

llvm::StringRef toString(Precision precision) {
  switch (precision) {
  case Precision::F32:
    return "f32";
  case Precision::BF16:
    return "bf16";
  case Precision::F16:
    return "f16";
  }
  llvm_unreachable("precision");
}

llvm::StringRef toString(PrecisionPolicy policy) {
  switch (policy) {
  case PrecisionPolicy::Conservative:
    return "conservative";
  case PrecisionPolicy::Default:
    return "default";
  case PrecisionPolicy::Aggressive:
    return "aggressive";
  }
  llvm_unreachable("policy");
}

llvm::StringRef toString(RecomputeMode mode) {
  switch (mode) {
  case RecomputeMode::Unset:
    return "";
  case RecomputeMode::None:
    return "none";
  case RecomputeMode::All:
    return "all";
  case RecomputeMode::Sqrt:
    return "sqrt";
  case RecomputeMode::Optimal:
    return "optimal";
  }
  llvm_unreachable("recompute mode");
}

// The messages are those the passes give for a bad option, so that loomc
// and loom-opt say the same.
llvm::Expected<LossKind> parseLossKind(llvm::StringRef text) {
  if (text == "cross_entropy")
    return LossKind::CrossEntropy;
  if (text == "mse")
    return LossKind::Mse;
  return fail("loom-loss: unknown loss '" + text + "' (cross_entropy, mse)");
}

llvm::Expected<OptimizerKind> parseOptimizerKind(llvm::StringRef text) {
  auto kind = llvm::StringSwitch<std::optional<OptimizerKind>>(text)
                  .Case("sgd", OptimizerKind::Sgd)
                  .Case("adam", OptimizerKind::Adam)
                  .Case("adamw", OptimizerKind::AdamW)
                  .Default(std::nullopt);
  if (!kind)
    return fail("loom-optimizer: unknown optimizer '" + text +
                "' (sgd, adam, adamw)");
  return *kind;
}

llvm::Expected<LrSchedule> parseLrSchedule(llvm::StringRef text) {
  if (text == "constant")
    return LrSchedule::Constant;
  if (text == "cosine")
    return LrSchedule::Cosine;
  return fail("--lr-schedule takes constant or cosine, not '" + text + "'");
}

llvm::Expected<Precision> parsePrecision(llvm::StringRef text) {
  auto p = llvm::StringSwitch<std::optional<Precision>>(text)
               .Case("f32", Precision::F32)
               .Case("bf16", Precision::BF16)
               .Case("f16", Precision::F16)
               .Default(std::nullopt);
  if (!p)
    return fail("--precision takes f32, bf16 or f16, not '" + text + "'");
  return *p;
}

llvm::Expected<PrecisionPolicy> parsePrecisionPolicy(llvm::StringRef text) {
  auto p = llvm::StringSwitch<std::optional<PrecisionPolicy>>(text)
               .Case("conservative", PrecisionPolicy::Conservative)
               .Case("default", PrecisionPolicy::Default)
               .Case("aggressive", PrecisionPolicy::Aggressive)
               .Default(std::nullopt);
  if (!p)
    return fail("loom-mixed-precision: unknown policy '" + text +
                "' (conservative, default, aggressive)");
  return *p;
}

llvm::Expected<RecomputeMode> parseRecomputeMode(llvm::StringRef text) {
  auto m = llvm::StringSwitch<std::optional<RecomputeMode>>(text)
               .Case("", RecomputeMode::Unset)
               .Case("none", RecomputeMode::None)
               .Case("all", RecomputeMode::All)
               .Case("sqrt", RecomputeMode::Sqrt)
               .Case("optimal", RecomputeMode::Optimal)
               .Default(std::nullopt);
  if (!m)
    return fail("loom-recompute: strategy must be none, all, sqrt or "
                "optimal, not '" +
                text + "'");
  return *m;
}

llvm::Error parseBetas(llvm::StringRef text, double &beta1, double &beta2) {
  auto [b1, b2] = text.split(',');
  if (b1.getAsDouble(beta1) || b2.getAsDouble(beta2))
    return fail("--betas takes B1,B2, not '" + text + "'");
  return llvm::Error::success();
}

int64_t parseByteSize(llvm::StringRef text) {
  llvm::StringRef s = text.trim();
  size_t digits = s.find_first_not_of("0123456789.eE+-");
  llvm::StringRef number = s.substr(0, digits), unit = s.substr(number.size());
  // "1e9" has no unit; "2e" would not parse as a number.
  double value = 0;
  if (number.empty() || number.getAsDouble(value) || value < 0)
    return -1;
  unit = unit.trim();
  if (unit.ends_with_insensitive("b") && !unit.equals_insensitive("b"))
    unit = unit.drop_back();
  else if (unit.equals_insensitive("b"))
    unit = "";
  double scale = llvm::StringSwitch<double>(unit.lower())
                     .Case("", 1)
                     .Case("k", 1e3)
                     .Case("m", 1e6)
                     .Case("g", 1e9)
                     .Case("t", 1e12)
                     .Case("ki", 1024.0)
                     .Case("mi", 1024.0 * 1024)
                     .Case("gi", 1024.0 * 1024 * 1024)
                     .Case("ti", 1024.0 * 1024 * 1024 * 1024)
                     .Default(-1);
  if (scale < 0)
    return -1;
  return static_cast<int64_t>(value * scale);
}

RecomputeMode TrainingOptions::recomputeStrategy() const {
  if (!runsRecompute())
    return RecomputeMode::None;
  if (recompute != RecomputeMode::Unset)
    return recompute;
  return memoryBudget > 0 ? RecomputeMode::Optimal : RecomputeMode::None;
}

std::string TrainingOptions::description() const {
  return toString(loss).str() + " loss" +
         (logits.empty() ? "" : " on " + logits);
}

llvm::Expected<int64_t> TrainingOptions::microBatchSize(int64_t batch) const {
  int64_t pieces =
      dataParallel *
      (pipeline.enabled() ? std::max<int64_t>(1, pipeline.microBatches) : 1);
  if (pieces <= 1 || batch % pieces == 0)
    return batch / std::max<int64_t>(1, pieces);
  return fail("--batch " + llvm::Twine(batch) +
              " (the global batch) does not split over --data-parallel " +
              llvm::Twine(dataParallel) + " ranks" +
              (pipeline.enabled() ? " and --micro-batches " +
                                        llvm::Twine(pipeline.microBatches)
                                  : llvm::Twine()));
}

llvm::Expected<std::string>
takeDeprecatedSchedule(llvm::ArrayRef<std::string> names,
                       TrainingOptionsText &text,
                       PipelineParallelOptions &pipeline) {
  std::string lr, pipe;
  for (const std::string &name : names) {
    bool isLr = name == "constant" || name == "cosine";
    bool isPipe = llvm::is_contained(loom::pipeline::scheduleNames(), name);
    std::string &slot = isLr ? lr : pipe;
    if ((!isLr && !isPipe) || (isPipe && !slot.empty()) ||
        (isLr && !slot.empty() && slot != "constant" && slot != name))
      return fail("--schedule takes one of constant, cosine (the learning "
                  "rate) and one of gpipe, 1f1b, interleaved, zb-h1 (the "
                  "pipeline), not '" +
                  llvm::join(names, ",") + "'");
    slot = name;
  }
  if (text.lrSchedule.empty())
    text.lrSchedule = lr;
  if (pipeline.schedule.empty())
    pipeline.schedule = pipe;
  return "warning: --schedule is deprecated: use" +
         (pipe.empty() ? "" : " --pipeline-schedule " + pipe) +
         (lr.empty() ? "" : " --lr-schedule " + lr);
}

llvm::Error parseTrainingOptions(const TrainingOptionsText &text,
                                 TrainingOptions &o) {
  auto set = [](auto &slot, auto parsed) -> llvm::Error {
    if (!parsed)
      return parsed.takeError();
    slot = *parsed;
    return llvm::Error::success();
  };
  if (llvm::Error e = set(o.loss, parseLossKind(text.loss)))
    return e;
  if (llvm::Error e = set(o.optimizer, parseOptimizerKind(text.optimizer)))
    return e;
  if (llvm::Error e = set(o.precision, parsePrecision(text.precision)))
    return e;
  if (llvm::Error e = set(o.recompute, parseRecomputeMode(text.recompute)))
    return e;
  if (!text.lrSchedule.empty())
    if (llvm::Error e = set(o.lrSchedule, parseLrSchedule(text.lrSchedule)))
      return e;
  // The policy matters (and is checked) with mixed precision only.
  if (o.precision != Precision::F32)
    if (llvm::Error e =
            set(o.precisionPolicy, parsePrecisionPolicy(text.precisionPolicy)))
      return e;
  if (llvm::Error e = parseBetas(text.betas, o.beta1, o.beta2))
    return e;
  if (!text.memoryBudget.empty() &&
      (o.memoryBudget = parseByteSize(text.memoryBudget)) <= 0)
    return fail(o.pipeline.enabled()
                    ? "--memory-budget takes a size, not '" +
                          text.memoryBudget + "'"
                    : "--memory-budget takes a size (4096, 64KiB, 512MiB, "
                      "2GiB, 1e9), not '" +
                          text.memoryBudget + "'");
  // Buckets are the data-parallel pass's, which a pipeline does not run.
  if (!o.pipeline.enabled() && o.dataParallel > 1 && !text.bucketSize.empty() &&
      (o.bucketBytes = parseByteSize(text.bucketSize)) <= 0)
    return fail("--bucket-size takes a size (4096, 64KiB, 25MiB), not '" +
                text.bucketSize + "'");
  return o.verify();
}

llvm::Error TrainingOptions::verify() const {
  if (qat.empty() && (qatLearnedScales || !qatExclude.empty()))
    return fail("--qat-learned-scales and --qat-exclude go with --qat "
                "DATA.npz");
  if (!qat.empty() && pipeline.enabled())
    return fail("--qat does not go with --pipeline-stages yet");
  const std::string &schedule = pipeline.schedule;
  if (!schedule.empty()) {
    const auto &names = loom::pipeline::scheduleNames();
    if (std::find(names.begin(), names.end(), schedule) == names.end())
      return fail("--pipeline-schedule takes gpipe, 1f1b, interleaved or "
                  "zb-h1, not '" +
                  schedule + "'");
    if (!pipeline.enabled())
      return fail("--pipeline-schedule " + schedule +
                  " needs --pipeline-stages S");
  }
  if ((sequenceParallel || vocabParallel) && tensorParallel < 2)
    return fail(std::string(sequenceParallel ? "--sequence-parallel"
                                             : "--vocab-parallel") +
                " splits over the tensor-parallel ranks: it needs "
                "--tensor-parallel M >= 2");
  if (pipeline.enabled()) {
    auto reject = [](const llvm::Twine &what, const llvm::Twine &why = "") {
      return fail(what + " with --pipeline-stages is not supported yet" + why);
    };
    // Tensor parallel inside each stage: the mesh [data, tensor, pipe].
    if (tensorParallel < 1)
      return fail("--tensor-parallel takes M >= 1");
    if (tensorParallel > 1 && (sequenceParallel || vocabParallel))
      return reject(std::string(sequenceParallel ? "--sequence-parallel"
                                                 : "--vocab-parallel") +
                        " with --tensor-parallel",
                    ": plain tensor parallelism runs inside the stages");
    if (tensorParallel > 1 && zeroStage > 0)
      return fail("--zero with --tensor-parallel is not supported yet: ZeRO "
                  "shards whole parameters over the data axis, tensor "
                  "parallelism splits them first");
    // ZeRO-1/2: each rank's update shards its stages' optimizer state
    // (and gradients) over the stage's data replicas.
    if (zeroStage > 2)
      return reject("--zero " + llvm::Twine(zeroStage),
                    ": each stage's parts read whole parameters; use --zero "
                    "1 or 2 (optimizer state and gradients sharded over the "
                    "data replicas), or more stages to divide the "
                    "parameters");
    if (zeroStage > 0 && dataParallel < 2)
      return fail("--zero " + llvm::Twine(zeroStage) +
                  " with --pipeline-stages shards over each stage's data "
                  "replicas: it needs --data-parallel N >= 2");
    if (gradientsOnly)
      return reject("--gradients");
    // Recomputation runs inside each stage (--loom-pipeline-parts).
    if (recompute == RecomputeMode::Optimal)
      return reject("--recompute optimal",
                    ": its budget is one step's planned peak; a pipeline "
                    "budgets each rank's saved activations "
                    "(--memory-budget): use --recompute all or sqrt, which "
                    "run inside each stage");
    if (accumulate > 1)
      return fail(
          "--accumulate " + llvm::Twine(accumulate) +
          " with --pipeline-stages: the pipeline accumulates over its "
          "micro-batches; for the same optimizer step use --micro-batches " +
          llvm::Twine(accumulate *
                      std::max<int64_t>(1, pipeline.microBatches)) +
          " (--accumulate x --micro-batches) and a --batch " +
          llvm::Twine(accumulate) +
          " times larger, each call feeding the step's whole batch");
    return llvm::Error::success();
  }
  if (tensorParallel < 1)
    return fail("--tensor-parallel takes M >= 1");
  if (vocabParallel && dataParallel > 1)
    return fail("--vocab-parallel with --data-parallel is not supported yet: "
                "the data-parallel step weighs each rank's loss by its "
                "counted labels through graph.cross_entropy, which the "
                "vocab-parallel loss replaces");
  if (vocabParallel && loss != LossKind::CrossEntropy)
    return fail("--vocab-parallel splits a cross-entropy's logits over the "
                "vocab: it needs --loss cross_entropy");
  if (tensorParallel > 1) {
    if (gradientsOnly)
      return fail("--tensor-parallel compiles a training step, not "
                  "--gradients");
    if (zeroStage > 0)
      return fail("--zero with --tensor-parallel is not supported yet: ZeRO "
                  "shards whole parameters over the data axis, tensor "
                  "parallelism splits them first");
  }
  if (dataParallel < 1 || zeroStage < 0 || zeroStage > 3 ||
      (zeroStage > 0 && dataParallel < 2))
    return fail("--data-parallel takes N >= 1 and --zero 0, 1, 2 or 3 "
                "(--fsdp) with "
                "--data-parallel N >= 2");
  if (dataParallel > 1 && gradientsOnly)
    return fail("--data-parallel compiles a training step, not --gradients");
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Pipelines
//===----------------------------------------------------------------------===//

/// The optimizer pass's options for the step of `funcName` (empty: the
/// gradient function the autodiff pass made).
static OptimizerPassOptions optimizerOptions(const TrainingOptions &o) {
  OptimizerPassOptions opt;
  opt.optimizer = toString(o.optimizer).str();
  opt.lr = o.lr;
  opt.momentum = o.momentum;
  opt.nesterov = o.nesterov;
  opt.beta1 = o.beta1;
  opt.beta2 = o.beta2;
  opt.eps = o.eps;
  opt.weightDecay = o.weightDecay;
  opt.clipNorm = o.clipNorm;
  opt.schedule = toString(o.lrSchedule).str();
  opt.warmup = o.warmup;
  opt.totalSteps = o.totalSteps;
  opt.accumulate = o.accumulate;
  opt.labels = o.labels;
  opt.lossScaleInit = o.lossScaleInit;
  opt.lossScaleInterval = o.lossScaleInterval;
  // The CUDA emitter reads every gradient once for the global norm.
  opt.fusedNorm = o.target == "cuda";
  opt.description = o.description();
  return opt;
}

/// The tensor-parallel pass's options (sequence and vocab parallelism are
/// refused with the pipeline by TrainingOptions::verify).
static TensorParallelPassOptions
tensorParallelOptions(const TrainingOptions &o) {
  TensorParallelPassOptions tp;
  tp.ranks = o.tensorParallel;
  tp.dataRanks = o.dataParallel;
  tp.freeze = o.freeze;
  tp.summary = o.report;
  tp.sequenceParallel = o.sequenceParallel;
  tp.vocabParallel = o.vocabParallel;
  return tp;
}

void buildTrainingPassPipeline(OpPassManager &pm, const TrainingOptions &o,
                               report::Sink *sink) {
  // The summaries go with the report; its JSON goes to the sink.
  report::Sink *reports = o.report ? sink : nullptr;
  // Quantization-aware training: the marked products read fake int8
  // operands before the loss reads them and autodiff differentiates them.
  if (!o.qat.empty()) {
    FakeQuantPassOptions fakeQuant;
    fakeQuant.learnedScales = o.qatLearnedScales;
    pm.addPass(createFakeQuantPass(fakeQuant));
  }
  LossPassOptions loss;
  loss.loss = toString(o.loss).str();
  loss.logits = o.logits;
  loss.labels = o.labels;
  loss.ignoreIndex = o.ignoreIndex;
  loss.labelSmoothing = o.labelSmoothing;
  // A pipeline's micro-batch may have every label ignored.
  loss.emptyMeanZero = o.pipeline.enabled();
  pm.addPass(createLossPass(loss));
  // Before mixed precision and autodiff: the fused forward has a fused
  // gradient, and the pattern is matched on the graph as imported.
  if (o.target == "cuda" && o.fuseAttentionMinScores >= 0 &&
      !o.pipeline.enabled()) {
    FuseAttentionPassOptions attention;
    attention.summary = o.report;
    attention.minScores = o.fuseAttentionMinScores;
    pm.addPass(createFuseAttentionPass(attention, reports));
  }
  if (o.pipeline.enabled()) {
    // On the loss function, before it is cut: the stages send bf16 (f16)
    // activations, the parameters stay f32 masters. f16's loss scaling is
    // --loom-pipeline-parts' (compiler/PipelineParallel.cpp).
    // Tensor parallel inside the stages: the loss function split before
    // it is cut, so each stage's parts hold the split ops and their
    // all-reduces over `tensor` (docs/pipeline.md).
    if (o.tensorParallel > 1)
      pm.addPass(createTensorParallelPass(tensorParallelOptions(o), reports));
    if (o.precision != Precision::F32) {
      MixedPrecisionPassOptions mixed;
      mixed.dtype = toString(o.precision).str();
      mixed.policy = toString(o.precisionPolicy).str();
      pm.addPass(createMixedPrecisionPass(mixed));
    }
    return;
  }
  // Tensor parallel: the forward split before autodiff derives the
  // backward from it.
  if (o.tensorParallel > 1)
    pm.addPass(createTensorParallelPass(tensorParallelOptions(o), reports));
  if (o.precision != Precision::F32) {
    MixedPrecisionPassOptions mixed;
    mixed.dtype = toString(o.precision).str();
    mixed.policy = toString(o.precisionPolicy).str();
    mixed.summary = o.report;
    pm.addPass(createMixedPrecisionPass(mixed, reports));
  }
  AutodiffPassOptions autodiff;
  autodiff.freeze = o.freeze;
  // f16's narrow range needs loss scaling (bf16 has f32's).
  autodiff.lossScale = o.precision == Precision::F16 && !o.gradientsOnly;
  pm.addPass(createAutodiffPass(autodiff));
  // Data parallel: the gradient function's gradients reduced over the
  // ranks.
  if (o.dataParallel > 1) {
    DataParallelPassOptions dp;
    dp.ranks = o.dataParallel;
    dp.zero = o.zeroStage;
    dp.bucketBytes = o.bucketBytes;
    // The report's per-rank memory under FSDP: the optimizer's slots.
    dp.optimizerSlots =
        (o.accumulate > 1) +
        (o.optimizer == OptimizerKind::Sgd ? (o.momentum != 0 ? 1 : 0) : 2);
    dp.summary = o.report;
    pm.addPass(createDataParallelPass(dp, reports));
  }
  if (!o.gradientsOnly)
    pm.addPass(createOptimizerPass(optimizerOptions(o)));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  std::string entry = o.entryFunction();
  if (o.precision != Precision::F32) {
    // After CSE, which would merge the backward's casts back.
    SaveNarrowPassOptions narrow;
    narrow.funcName = entry;
    pm.addPass(createSaveNarrowPass(narrow));
  }
  if (o.runsRecompute()) {
    RecomputePassOptions rc;
    rc.funcName = entry;
    rc.budget = o.memoryBudget;
    rc.strategy = toString(o.recomputeStrategy()).str();
    rc.summary = o.report;
    if (o.target == "cpu")
      rc.targetPasses = codegen::kCpuGraphPasses;
    // The driver reads the planned peak from the sink even without a
    // report.
    pm.addPass(createRecomputePass(rc, sink));
  }
  // Every rank of every group issues the same collectives, in order.
  if (o.dataParallel > 1 || o.tensorParallel > 1) {
    VerifyCollectivesPassOptions verify;
    verify.funcName = entry;
    pm.addPass(createVerifyCollectivesPass(verify));
  }
  // Only the training step (or the gradient function) is compiled.
  TrainingEntryPassOptions keep;
  keep.funcName = entry;
  keep.bakeParams = o.gradientsOnly;
  pm.addPass(createTrainingEntryPass(keep));
}

void buildPipelineUpdatePassPipeline(OpPassManager &pm,
                                     const TrainingOptions &o, int64_t rank) {
  // By name: a rank whose stages train nothing has a gradient function
  // without gradients, and still joins the norm's all-reduce.
  std::string name = "pipeline_update_" + std::to_string(rank);
  if (o.dataParallel > 1) {
    DataParallelPassOptions dp;
    dp.funcName = name;
    dp.ranks = o.dataParallel;
    // ZeRO-1/2 over the stage's replicas.
    dp.zero = o.zeroStage;
    pm.addPass(createDataParallelPass(dp));
  }
  OptimizerPassOptions opt = optimizerOptions(o);
  opt.labels = "";
  if (o.pipeline.stages > 1)
    opt.normAxis = "pipe";
  opt.funcName = name;
  pm.addPass(createOptimizerPass(opt));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void buildInferencePipeline(OpPassManager &pm, const CompileOptions &options) {
  if (options.target == "cuda") {
    codegen::buildCudaRegionPipeline(pm, options.cuda);
    return;
  }
  codegen::buildCpuLoweringPipeline(pm, options.cpu);
}

//===----------------------------------------------------------------------===//
// Registration for loom-opt
//===----------------------------------------------------------------------===//

namespace {

/// --loom-training-pipeline's options: loomc train's flags, by the same
/// names where they have one.
struct TrainingPipelineOptions
    : public PassPipelineOptions<TrainingPipelineOptions> {
  Option<std::string> loss{*this, "loss",
                           llvm::cl::desc("cross_entropy or mse"),
                           llvm::cl::init("cross_entropy")};
  Option<std::string> logits{*this, "logits",
                             llvm::cl::desc("the output the loss reads")};
  Option<std::string> labels{*this, "labels",
                             llvm::cl::desc("the labels input's name"),
                             llvm::cl::init("labels")};
  Option<int64_t> ignoreIndex{*this, "ignore-index",
                              llvm::cl::desc("cross_entropy: ignored label"),
                              llvm::cl::init(-100)};
  Option<double> labelSmoothing{*this, "label-smoothing",
                                llvm::cl::desc("cross_entropy smoothing"),
                                llvm::cl::init(0.0)};
  Option<std::string> optimizer{*this, "optimizer",
                                llvm::cl::desc("sgd, adam or adamw"),
                                llvm::cl::init("adamw")};
  Option<double> lr{*this, "lr", llvm::cl::desc("learning rate"),
                    llvm::cl::init(1e-3)};
  Option<double> momentum{*this, "momentum", llvm::cl::desc("sgd momentum"),
                          llvm::cl::init(0.0)};
  Option<bool> nesterov{*this, "nesterov", llvm::cl::desc("sgd Nesterov"),
                        llvm::cl::init(false)};
  Option<std::string> betas{*this, "betas", llvm::cl::desc("adam(w) B1,B2"),
                            llvm::cl::init("0.9,0.999")};
  Option<double> eps{*this, "eps", llvm::cl::desc("adam(w) epsilon"),
                     llvm::cl::init(1e-8)};
  Option<double> weightDecay{*this, "weight-decay",
                             llvm::cl::desc("-1: the optimizer's default"),
                             llvm::cl::init(-1.0)};
  Option<double> clipNorm{*this, "clip-norm",
                          llvm::cl::desc("global gradient norm clip (0: off)"),
                          llvm::cl::init(0.0)};
  Option<std::string> lrSchedule{*this, "lr-schedule",
                                 llvm::cl::desc("constant or cosine"),
                                 llvm::cl::init("constant")};
  Option<int64_t> warmup{*this, "warmup", llvm::cl::desc("warmup steps"),
                         llvm::cl::init(0)};
  Option<int64_t> totalSteps{*this, "total-steps",
                             llvm::cl::desc("the schedule's horizon"),
                             llvm::cl::init(0)};
  Option<int64_t> accumulate{*this, "accumulate",
                             llvm::cl::desc("micro-batches per step"),
                             llvm::cl::init(1)};
  Option<std::string> freeze{*this, "freeze",
                             llvm::cl::desc("regex of fixed parameters")};
  Option<bool> gradients{*this, "gradients",
                         llvm::cl::desc("the gradient function instead"),
                         llvm::cl::init(false)};
  Option<std::string> precision{*this, "precision",
                                llvm::cl::desc("f32, bf16 or f16"),
                                llvm::cl::init("f32")};
  Option<std::string> precisionPolicy{
      *this, "precision-policy",
      llvm::cl::desc("conservative, default or aggressive"),
      llvm::cl::init("default")};
  Option<double> lossScaleInit{*this, "loss-scale-init",
                               llvm::cl::desc("f16's first loss scale"),
                               llvm::cl::init(65536.0)};
  Option<int64_t> lossScaleInterval{
      *this, "loss-scale-interval",
      llvm::cl::desc("f16: good steps before the scale doubles"),
      llvm::cl::init(2000)};
  Option<int64_t> dataParallel{*this, "data-parallel",
                               llvm::cl::desc("data-parallel ranks"),
                               llvm::cl::init(1)};
  Option<int64_t> tensorParallel{*this, "tensor-parallel",
                                 llvm::cl::desc("tensor-parallel ranks"),
                                 llvm::cl::init(1)};
  Option<int64_t> zero{*this, "zero", llvm::cl::desc("ZeRO stage 0, 1, 2"),
                       llvm::cl::init(0)};
  Option<bool> sequenceParallel{
      *this, "sequence-parallel",
      llvm::cl::desc("tensor parallel: activations split along the sequence"),
      llvm::cl::init(false)};
  Option<bool> vocabParallel{
      *this, "vocab-parallel",
      llvm::cl::desc(
          "tensor parallel: embedding and loss split over the vocab"),
      llvm::cl::init(false)};
  Option<std::string> bucketSize{*this, "bucket-size",
                                 llvm::cl::desc("gradient bytes per bucket")};
  Option<int64_t> pipelineStages{*this, "pipeline-stages",
                                 llvm::cl::desc("pipeline ranks (0: none)"),
                                 llvm::cl::init(0)};
  Option<std::string> memoryBudget{*this, "memory-budget",
                                   llvm::cl::desc("planned peak bytes")};
  Option<std::string> recompute{*this, "recompute",
                                llvm::cl::desc("none, all, sqrt or optimal")};
  Option<std::string> target{*this, "target", llvm::cl::desc("cpu or cuda"),
                             llvm::cl::init("cpu")};
  Option<bool> report{*this, "report",
                      llvm::cl::desc("print the passes' decisions"),
                      llvm::cl::init(false)};

  /// The typed options, or the message of the first bad value.
  llvm::Expected<TrainingOptions> toTyped() const {
    TrainingOptions o;
    o.logits = logits;
    o.labels = labels;
    o.ignoreIndex = ignoreIndex;
    o.labelSmoothing = labelSmoothing;
    o.lr = lr;
    o.momentum = momentum;
    o.nesterov = nesterov;
    o.eps = eps;
    o.weightDecay = weightDecay;
    o.clipNorm = clipNorm;
    o.warmup = warmup;
    o.totalSteps = totalSteps;
    o.accumulate = accumulate;
    o.freeze = freeze;
    o.gradientsOnly = gradients;
    o.lossScaleInit = lossScaleInit;
    o.lossScaleInterval = lossScaleInterval;
    o.dataParallel = dataParallel;
    o.tensorParallel = tensorParallel;
    o.sequenceParallel = sequenceParallel;
    o.vocabParallel = vocabParallel;
    o.zeroStage = zero;
    o.pipeline.stages = pipelineStages;
    o.target = target;
    o.report = report;
    TrainingOptionsText text;
    text.loss = loss;
    text.optimizer = optimizer;
    text.betas = betas;
    text.lrSchedule = lrSchedule;
    text.precision = precision;
    text.precisionPolicy = precisionPolicy;
    text.recompute = recompute;
    text.memoryBudget = memoryBudget;
    text.bucketSize = bucketSize;
    if (llvm::Error e = parseTrainingOptions(text, o))
      return std::move(e);
    return o;
  }
};

/// --loom-pipeline-update-pipeline's options: the rank and the training
/// options the optimizer step takes.
struct PipelineUpdateOptions
    : public PassPipelineOptions<PipelineUpdateOptions> {
  Option<int64_t> rank{*this, "rank", llvm::cl::desc("the pipeline rank"),
                       llvm::cl::init(0)};
  Option<int64_t> stages{*this, "pipeline-stages",
                         llvm::cl::desc("pipeline ranks"), llvm::cl::init(2)};
  Option<int64_t> dataParallel{*this, "data-parallel",
                               llvm::cl::desc("data-parallel replicas"),
                               llvm::cl::init(1)};
  Option<std::string> loss{*this, "loss",
                           llvm::cl::desc("cross_entropy or mse"),
                           llvm::cl::init("cross_entropy")};
  Option<std::string> logits{*this, "logits",
                             llvm::cl::desc("the output the loss reads")};
  Option<std::string> optimizer{*this, "optimizer",
                                llvm::cl::desc("sgd, adam or adamw"),
                                llvm::cl::init("adamw")};
  Option<double> lr{*this, "lr", llvm::cl::desc("learning rate"),
                    llvm::cl::init(1e-3)};
  Option<std::string> lrSchedule{*this, "lr-schedule",
                                 llvm::cl::desc("constant or cosine"),
                                 llvm::cl::init("constant")};
};

/// --loom-inference-pipeline's options.
struct InferencePipelineOptions
    : public PassPipelineOptions<InferencePipelineOptions> {
  Option<std::string> target{*this, "target", llvm::cl::desc("cpu or cuda"),
                             llvm::cl::init("cpu")};
};

/// Sets `slot` from `parsed`, or reports its error.
template <typename T>
LogicalResult parseInto(T &slot, llvm::Expected<T> parsed,
                        function_ref<LogicalResult(const Twine &)> error) {
  if (!parsed)
    return error(llvm::toString(parsed.takeError()));
  slot = *parsed;
  return success();
}

/// Registers `builder` under `arg` with options `Options`: like
/// PassPipelineRegistration<Options>, but a bad option value is an error
/// of the pipeline text, not a crash.
template <typename Options>
void registerPipeline(
    StringRef arg, StringRef description,
    std::function<LogicalResult(OpPassManager &, const Options &,
                                function_ref<LogicalResult(const Twine &)>)>
        builder) {
  registerPassPipeline(
      arg, description,
      [builder](OpPassManager &pm, StringRef text,
                function_ref<LogicalResult(const Twine &)> errorHandler) {
        Options options;
        if (failed(options.parseFromString(text)))
          return failure();
        return builder(pm, options, errorHandler);
      },
      [](function_ref<void(const detail::PassOptions &)> optHandler) {
        optHandler(Options());
      });
}

} // namespace

void registerLoomPipelines() {
  registerCompilerPasses();
  registerPipeline<TrainingPipelineOptions>(
      "loom-training-pipeline",
      "a model function to its training step: what loomc train runs "
      "(docs/training.md)",
      [](OpPassManager &pm, const TrainingPipelineOptions &text,
         function_ref<LogicalResult(const Twine &)> error) {
        llvm::Expected<TrainingOptions> options = text.toTyped();
        if (!options)
          return error(llvm::toString(options.takeError()));
        buildTrainingPassPipeline(pm, *options);
        return success();
      });
  registerPipeline<PipelineUpdateOptions>(
      "loom-pipeline-update-pipeline",
      "one pipeline rank's optimizer step from its gradient function "
      "pipeline_update_<rank> (docs/pipeline.md)",
      [](OpPassManager &pm, const PipelineUpdateOptions &text,
         function_ref<LogicalResult(const Twine &)> error) {
        TrainingOptions o;
        if (failed(parseInto(o.loss, parseLossKind(text.loss), error)) ||
            failed(parseInto(o.optimizer, parseOptimizerKind(text.optimizer),
                             error)) ||
            failed(parseInto(o.lrSchedule, parseLrSchedule(text.lrSchedule),
                             error)))
          return failure();
        o.logits = text.logits;
        o.lr = text.lr;
        o.pipeline.stages = text.stages;
        o.dataParallel = text.dataParallel;
        buildPipelineUpdatePassPipeline(pm, o, text.rank);
        return success();
      });
  registerPipeline<InferencePipelineOptions>(
      "loom-inference-pipeline",
      "graph IR to the target's code: what loomc compile runs before "
      "emitting it",
      [](OpPassManager &pm, const InferencePipelineOptions &text,
         function_ref<LogicalResult(const Twine &)> error) {
        if (text.target != "cpu" && text.target != "cuda")
          return error("target takes cpu or cuda, not '" + text.target + "'");
        CompileOptions options;
        options.target = text.target;
        buildInferencePipeline(pm, options);
        return success();
      });
}

} // namespace loom
