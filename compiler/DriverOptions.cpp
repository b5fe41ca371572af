//===- DriverOptions.cpp - loomc's commands and options, one table -------===//
//
// The table behind `loomc SUB --help`, loomc's parsing and the keyword
// arguments of `loom.compile` (python/): one entry per option.
//
//===----------------------------------------------------------------------===//

#include "compiler/Driver.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ErrorHandling.h"

using llvm::StringRef;

namespace loom::driver {
namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The setters' errors follow "--NAME ".
llvm::Error parseInt(StringRef value, int64_t &out) {
  if (value.trim().getAsInteger(10, out))
    return error("takes a whole number, not '" + value + "'");
  return llvm::Error::success();
}

llvm::Error parseUnsigned(StringRef value, unsigned &out) {
  if (value.trim().getAsInteger(10, out))
    return error("takes a whole number from 0, not '" + value + "'");
  return llvm::Error::success();
}

llvm::Error parseReal(StringRef value, double &out) {
  if (!llvm::to_float(value.trim(), out))
    return error("takes a number (3e-4, 0.1), not '" + value + "'");
  return llvm::Error::success();
}

llvm::Error parseFlag(StringRef value, bool &out) {
  std::string v = value.trim().lower();
  if (v.empty() || v == "true" || v == "1")
    out = true;
  else if (v == "false" || v == "0")
    out = false;
  else
    return error("is a flag: true or false, not '" + value + "'");
  return llvm::Error::success();
}

/// --fsdp: ZeRO-3 (listed by --help-hidden; --zero's help names it).
llvm::Error setFsdp(DriverOptions &o, StringRef value) {
  bool on = false;
  if (llvm::Error e = parseFlag(value, on))
    return e;
  if (on)
    o.train.zeroStage = 3;
  return llvm::Error::success();
}

} // namespace

// Setters: one field each, from text.
#define LOOM_TEXT(FIELD)                                                       \
  [](DriverOptions &o, StringRef v) -> llvm::Error {                           \
    o.FIELD = v.str();                                                         \
    return llvm::Error::success();                                             \
  }
#define LOOM_LIST(FIELD)                                                       \
  [](DriverOptions &o, StringRef v) -> llvm::Error {                           \
    o.FIELD.push_back(v.str());                                                \
    return llvm::Error::success();                                             \
  }
#define LOOM_INT(FIELD)                                                        \
  [](DriverOptions &o, StringRef v) -> llvm::Error {                           \
    return parseInt(v, o.FIELD);                                               \
  }
#define LOOM_REAL(FIELD)                                                       \
  [](DriverOptions &o, StringRef v) -> llvm::Error {                           \
    return parseReal(v, o.FIELD);                                              \
  }
#define LOOM_FLAG(FIELD)                                                       \
  [](DriverOptions &o, StringRef v) -> llvm::Error {                           \
    return parseFlag(v, o.FIELD);                                              \
  }

/// --pipeline-stages: the count, and that it was given (`loomc schedule`
/// takes 2 stages otherwise).
llvm::Error setPipelineStages(DriverOptions &o, StringRef value) {
  o.pipelineStagesGiven = true;
  return parseInt(value, o.train.pipeline.stages);
}

static constexpr unsigned kModel = Import | Compile | Train;
static constexpr unsigned kCodegen = Compile | Train;
static constexpr unsigned kPipeline = Train | Schedule;
/// Sequence and optional graph inputs: compile (and import) only.
static constexpr unsigned kStructure = Import | Compile;

static const OptionInfo kOptions[] = {
    // Input.
    {"bind", "<NAME=FILE>", "freeze ONNX graph input NAME to a .npy/.pb tensor",
     "Input", kModel, false, true, LOOM_LIST(binds)},
    {"batch", "<int>", "the size of a dynamic dim 0 (train: the global batch)",
     "Input", kCodegen, false, false, LOOM_INT(batch)},
    {"dim", "<NAME=SIZE>", "a size for the ONNX model's dynamic dim NAME",
     "Input", kCodegen, false, true, LOOM_LIST(dims)},
    {"seq-len", "<NAME=N>",
     "sequence graph input NAME has N elements (inputs NAME.0 ... NAME.N-1)",
     "Input", kStructure, false, true, LOOM_LIST(seqLens)},
    {"absent", "<NAME>", "optional graph input NAME is empty (no input)",
     "Input", kStructure, false, true, LOOM_LIST(absent)},
    {"input-shape", "<NAME=2x3>",
     "the shape of graph input NAME (or sequence element NAME.K), where the "
     "model leaves it undeclared or dynamic",
     "Input", kStructure, false, true, LOOM_LIST(inputShapes)},
    {"max-nodes", "<int>", "refuse an ONNX model of more nodes (1000000)",
     "Input", kModel, true, false, LOOM_INT(maxNodes)},
    {"max-tensor-bytes", "<size>", "refuse a larger ONNX tensor (8GiB)",
     "Input", kModel, true, false, LOOM_TEXT(maxTensorBytes)},

    // Output.
    {"o", "<file>", "the output file", "Output", kModel | Export | Quantize,
     false, false, LOOM_TEXT(output)},
    {"emit", "<kind>",
     "what -o gets: artifact, cuda (the source), mlir (train: the IR)",
     "Output", kCodegen, false, false, LOOM_TEXT(emit)},
    {"print-summary", nullptr, "print op counts and parameters to stderr",
     "Output", Import | Train, false, false, LOOM_FLAG(printSummary)},
    {"print-memory-plan", nullptr, "print the planned peak bytes", "Output",
     kCodegen, false, false, LOOM_FLAG(printMemoryPlan)},
    {"print-ir", nullptr, "print the training step's graph IR", "Output", Train,
     true, false, LOOM_FLAG(printIR)},
    {"report", "<file>",
     "train: the passes' decisions and memory plan; quantize: each layer's "
     "scales and error (JSON)",
     "Output", Train | Quantize, false, false, LOOM_TEXT(report)},
    {"no-initial-values", nullptr,
     "leave the weights out (loom-run --init or --resume gives them)", "Output",
     Train, false, false, LOOM_FLAG(noInitialValues)},

    // Export.
    {"func", "<name>", "the function of a graph-IR module", "Export",
     Export | Compile, false, false, LOOM_TEXT(codegen.funcName)},
    {"checkpoint", "<file>", "the trained parameters (TRAIN.loom's run)",
     "Export", Export, false, false, LOOM_TEXT(checkpoint)},
    {"external-data", "<auto|always|never>",
     "initializers of 1 KiB or more in PATH.data beside the model: past 2 "
     "GiB (auto), always, or never (a model over 2 GiB fails)",
     "Export", Export | Quantize, false, false, LOOM_TEXT(externalData)},

    // Code generation.
    {"target", "<cpu|cuda>", "the code's target (cpu)", "Code generation",
     kCodegen, false, false, LOOM_TEXT(codegen.target)},
    {"fusion-report", "<file>", "the fusion decisions as JSON",
     "Code generation", kCodegen, false, false,
     LOOM_TEXT(codegen.cpu.fusionReport)},
    {"cpu", "<name>", "an LLVM CPU name (x86-64-v3) or host (default)",
     "Code generation", kCodegen, true, false, LOOM_TEXT(codegen.cpu.cpu)},
    {"opt-level", "<0-3>", "LLVM's -O", "Code generation", kCodegen, true,
     false,
     [](DriverOptions &o, StringRef v) -> llvm::Error {
       return parseUnsigned(v, o.codegen.cpu.optLevel);
     }},
    {"print-fusion", nullptr, "print the fusion decisions", "Code generation",
     kCodegen, true, false, LOOM_FLAG(codegen.cpu.printFusion)},
    {"timing", nullptr, "print every pass's time", "Code generation", kCodegen,
     true, false, LOOM_FLAG(codegen.cpu.timing)},
    {"jobs", "<n>", "threads for LLVM (default: one per core)",
     "Code generation", kCodegen, false, false,
     [](DriverOptions &o, StringRef v) -> llvm::Error {
       return parseUnsigned(v, o.codegen.cpu.threads);
     }},
    {"dump-llvm", "<file>", "write the LLVM IR before LLVM optimizes it",
     "Code generation", kCodegen, true, false, LOOM_TEXT(codegen.cpu.dumpLlvm)},

    // CUDA.
    {"arch", "<sm_80,...>", "also compile NVRTC binaries for these archs",
     "CUDA", kCodegen, false, false, LOOM_TEXT(archs)},
    {"allow-tf32", nullptr, "f32 matmuls may round inputs to TF32", "CUDA",
     kCodegen, false, false, LOOM_FLAG(allowTf32)},
    {"fused-attention", "<auto|on|off>",
     "softmax attention as one kernel (auto: from 256M scores)", "CUDA",
     kCodegen, false, false, LOOM_TEXT(fusedAttention)},

    // The compile cache (compiler/CompileCache.h).
    {"cache-dir", "<dir>",
     "the compile cache (LOOM_CACHE_DIR, else ~/.cache/loom/compile; "
     "LOOM_CACHE_MAX_SIZE caps it, 20GiB)",
     "Compile cache", kCodegen, true, false, LOOM_TEXT(cacheDir)},
    {"no-cache", nullptr,
     "compile even if the cache has the output (also LOOM_CACHE=0); "
     "--print-*, --report, --fusion-report, --timing, --dump-llvm and "
     "LLVM's options never use it",
     "Compile cache", kCodegen, true, false, LOOM_FLAG(noCache)},

    // Loss.
    {"loss", "<kind>", "cross_entropy (default) or mse", "Loss", Train, false,
     false, LOOM_TEXT(trainText.loss)},
    {"logits", "<output>", "the output the loss reads", "Loss", Train, false,
     false, LOOM_TEXT(train.logits)},
    {"labels", "<name>", "the labels input's name (labels)", "Loss", Train,
     false, false, LOOM_TEXT(train.labels)},
    {"ignore-index", "<int>", "the label of no class (-100)", "Loss", Train,
     false, false, LOOM_INT(train.ignoreIndex)},
    {"label-smoothing", "<float>", "cross_entropy's smoothing", "Loss", Train,
     false, false, LOOM_REAL(train.labelSmoothing)},
    {"gradients", nullptr, "compile the gradient function, not the step",
     "Loss", Train, false, false, LOOM_FLAG(train.gradientsOnly)},

    // Optimizer.
    {"optimizer", "<kind>", "sgd, adam or adamw (default)", "Optimizer", Train,
     false, false, LOOM_TEXT(trainText.optimizer)},
    {"lr", "<float>", "the learning rate (1e-3)", "Optimizer", Train, false,
     false, LOOM_REAL(train.lr)},
    {"momentum", "<float>", "sgd's momentum", "Optimizer", Train, false, false,
     LOOM_REAL(train.momentum)},
    {"nesterov", nullptr, "sgd: Nesterov momentum", "Optimizer", Train, true,
     false, LOOM_FLAG(train.nesterov)},
    {"betas", "<B1,B2>", "adam(w)'s betas (0.9,0.999)", "Optimizer", Train,
     false, false, LOOM_TEXT(trainText.betas)},
    {"eps", "<float>", "adam(w)'s epsilon (1e-8)", "Optimizer", Train, true,
     false, LOOM_REAL(train.eps)},
    {"weight-decay", "<float>", "weight decay (adamw: 0.01, else 0)",
     "Optimizer", Train, false, false, LOOM_REAL(train.weightDecay)},
    {"lr-schedule", "<kind>", "constant (default) or cosine", "Optimizer",
     Train, false, false, LOOM_TEXT(trainText.lrSchedule)},
    {"warmup", "<int>", "linear warmup steps", "Optimizer", Train, false, false,
     LOOM_INT(train.warmup)},
    {"total-steps", "<int>", "the schedule's horizon (loom-run's --steps)",
     "Optimizer", Train, false, false, LOOM_INT(train.totalSteps)},
    {"clip-norm", "<float>", "clip the global gradient norm", "Optimizer",
     Train, false, false, LOOM_REAL(train.clipNorm)},
    {"accumulate", "<int>", "micro-batches per optimizer step", "Optimizer",
     Train, false, false, LOOM_INT(train.accumulate)},
    {"freeze", "<regex>", "parameters whose names match stay fixed",
     "Optimizer", Train, false, false, LOOM_TEXT(train.freeze)},
    {"qat", "<data.npz>",
     "quantization-aware training: fake int8 products, ranges observed on "
     "this data",
     "Optimizer", Train, false, false, LOOM_TEXT(train.qat)},
    {"qat-learned-scales", nullptr,
     "--qat: train the activations' scales and zero points (LSQ)", "Optimizer",
     Train, true, false, LOOM_FLAG(train.qatLearnedScales)},
    {"qat-exclude", "<regex>", "--qat: nodes that stay f32", "Optimizer", Train,
     true, false, LOOM_TEXT(train.qatExclude)},

    // Precision and memory.
    {"precision", "<f32|bf16|f16>", "matmuls in 16 bits, f32 master weights",
     "Precision and memory", Train, false, false,
     LOOM_TEXT(trainText.precision)},
    {"precision-policy", "<kind>",
     "ops after 16-bit ones: conservative, default, aggressive",
     "Precision and memory", Train, true, false,
     LOOM_TEXT(trainText.precisionPolicy)},
    {"loss-scale-init", "<float>", "f16: the first loss scale",
     "Precision and memory", Train, true, false,
     LOOM_REAL(train.lossScaleInit)},
    {"loss-scale-interval", "<int>", "f16: good steps before the scale doubles",
     "Precision and memory", Train, true, false,
     LOOM_INT(train.lossScaleInterval)},
    {"memory-budget", "<size>", "the step's planned peak limit (2GiB)",
     "Precision and memory", Train, false, false,
     LOOM_TEXT(trainText.memoryBudget)},
    {"recompute", "<kind>", "none, all, sqrt or optimal (with a budget)",
     "Precision and memory", Train, false, false,
     LOOM_TEXT(trainText.recompute)},

    // Parallelism.
    {"data-parallel", "<int>", "data-parallel ranks", "Parallelism", Train,
     false, false, LOOM_INT(train.dataParallel)},
    {"tensor-parallel", "<int>", "tensor-parallel ranks", "Parallelism", Train,
     false, false, LOOM_INT(train.tensorParallel)},
    {"sequence-parallel", nullptr,
     "tensor parallel: layer norms and residuals split along the sequence",
     "Parallelism", Train, false, false, LOOM_FLAG(train.sequenceParallel)},
    {"vocab-parallel", nullptr,
     "tensor parallel: embedding, LM head and cross-entropy split over the "
     "vocab",
     "Parallelism", Train, false, false, LOOM_FLAG(train.vocabParallel)},
    {"zero", "<0|1|2|3>",
     "ZeRO: optimizer state (1), gradients (2), parameters (3, --fsdp)",
     "Parallelism", Train, false, false, LOOM_INT(train.zeroStage)},
    {"bucket-size", "<size>", "gradient bytes per data-parallel bucket",
     "Parallelism", Train, true, false, LOOM_TEXT(trainText.bucketSize)},
    {"pipeline-stages", "<int>", "pipeline ranks (schedule: 2)", "Parallelism",
     kPipeline, false, false, setPipelineStages},
    {"micro-batches", "<int>", "micro-batches per step", "Parallelism",
     kPipeline, false, false, LOOM_INT(train.pipeline.microBatches)},
    {"pipeline-schedule", "<kind>", "gpipe, 1f1b (default), interleaved, zb-h1",
     "Parallelism", kPipeline, false, false,
     LOOM_TEXT(train.pipeline.schedule)},
    {"virtual-stages", "<int>", "interleaved: chunks per rank", "Parallelism",
     kPipeline, true, false, LOOM_INT(train.pipeline.virtualStages)},
    {"stage-boundaries", "<names>",
     "op name texts where stages 1.. begin (/h.2/,/h.4/)", "Parallelism", Train,
     false, false, LOOM_TEXT(train.pipeline.boundaries)},
    {"schedule", "<names>",
     "deprecated: --lr-schedule and --pipeline-schedule in one list",
     "Parallelism", kPipeline, true, true,
     [](DriverOptions &o, StringRef v) -> llvm::Error {
       llvm::SmallVector<StringRef> names;
       v.split(names, ',', -1, false);
       for (StringRef n : names)
         o.deprecatedSchedule.push_back(n.str());
       return llvm::Error::success();
     }},

    // loomc quantize.
    {"mode", "<dynamic|static>",
     "dynamic: int8 weights, activations quantized at run time; static: "
     "activations too, with ranges from --calibration (QDQ)",
     "Quantize", Quantize, false, false, LOOM_TEXT(quantizeMode)},
    {"calibration", "<data.npz>",
     "static: an array per graph input, the samples along its first dim",
     "Quantize", Quantize, false, false, LOOM_TEXT(calibration)},
    {"method", "<minmax|percentile|entropy>",
     "static: an activation's range, its extremes (minmax), a percentile or "
     "the least KL divergence (entropy)",
     "Quantize", Quantize, false, false, LOOM_TEXT(calibrationMethod)},
    {"percentile", "<float>",
     "percentile: the share of values kept, in percent (99.999)", "Quantize",
     Quantize, false, false, LOOM_REAL(percentile)},
    {"per-channel", nullptr, "one weight scale per output column", "Quantize",
     Quantize, false, false, LOOM_FLAG(perChannel)},
    {"exclude", "<regex>", "MatMul/Gemm nodes whose names match stay f32",
     "Quantize", Quantize, false, false, LOOM_TEXT(exclude)},

    // loomc schedule.
    {"costs", "<F,I,W[,T]>", "also simulate with these costs", "Schedule",
     Schedule, false, false, LOOM_TEXT(costs)},
    {"print", nullptr, "draw each rank's timeline", "Schedule", Schedule, false,
     false, LOOM_FLAG(printTimeline)},

    // --zero 3's other name (with the Parallelism options in --help-hidden).
    {"fsdp", nullptr, "fully sharded data parallel: --zero 3", "Parallelism",
     Train, true, false, setFsdp},
};

#undef LOOM_TEXT
#undef LOOM_LIST
#undef LOOM_INT
#undef LOOM_REAL
#undef LOOM_FLAG

static const CommandInfo kCommands[] = {
    {Import, "import", "an ONNX model (.onnx, .onnxtext) to graph IR",
     "<model.onnx> [-o model.mlir]",
     "loomc import model.onnx -o model.mlir --print-summary"},
    {Export, "export",
     "graph IR, or a trained artifact with its checkpoint, to ONNX",
     "<model.mlir | train.loom> -o <model.onnx>",
     "loomc export model.mlir -o model.onnx\n"
     "loomc export train.loom --checkpoint run.loomckpt -o trained.onnx"},
    {Compile, "compile",
     "a model (ONNX or graph IR) to a .loom artifact for loom-run",
     "<model> -o <model.loom>",
     "loomc compile model.onnx -o model.loom --print-memory-plan\n"
     "loomc compile model.onnx --target cuda --arch sm_90 -o model.loom"},
    {Train, "train",
     "a model's training step (loss, autodiff, optimizer) to a .loom",
     "<model> -o <train.loom>",
     "loomc train model.onnx --logits logits --batch 8 --lr 3e-4 -o "
     "train.loom\n"
     "loomc train model.onnx --logits logits --batch 8 --precision bf16 "
     "--data-parallel 2 -o train.loom"},
    {Quantize, "quantize",
     "an f32 ONNX model's MatMul/Gemm to int8, dynamic or static (ONNX out)",
     "<model.onnx> -o <model.int8.onnx>",
     "loomc quantize model.onnx -o model.int8.onnx --per-channel --report "
     "q.json\n"
     "loomc quantize model.onnx -o model.int8.onnx --mode static "
     "--calibration data.npz --per-channel"},
    {Schedule, "schedule", "make, verify and draw a pipeline schedule", "",
     "loomc schedule --pipeline-schedule zb-h1 --pipeline-stages 4 "
     "--micro-batches 8 --print"},
};

llvm::ArrayRef<CommandInfo> commands() { return kCommands; }

const CommandInfo &commandInfo(Command command) {
  for (const CommandInfo &c : kCommands)
    if (c.command == command)
      return c;
  llvm_unreachable("every command has an entry");
}

const CommandInfo *findCommand(StringRef name) {
  for (const CommandInfo &c : kCommands)
    if (name == c.name)
      return &c;
  return nullptr;
}

std::string commandNames(unsigned commands) {
  llvm::SmallVector<StringRef> names;
  for (const CommandInfo &c : kCommands)
    if (commands & c.command)
      names.push_back(c.name);
  std::string text;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i)
      text += i + 1 == names.size() ? " and " : ", ";
    text += names[i].str();
  }
  return text;
}

llvm::ArrayRef<OptionInfo> options() { return kOptions; }

const OptionInfo *findOption(StringRef name) {
  for (const OptionInfo &o : kOptions)
    if (name == o.name)
      return &o;
  return nullptr;
}

llvm::Error setOption(DriverOptions &options, Command command, StringRef name,
                      StringRef value) {
  const CommandInfo *info = &commandInfo(command);
  std::string spelled = (name.size() == 1 ? "-" : "--") + name.str();
  const OptionInfo *option = findOption(name);
  if (!option)
    return error("loomc " + llvm::Twine(info->name) + " has no option " +
                 spelled + " (loomc " + info->name + " --help lists them)");
  if (!(option->commands & command))
    return error(spelled + " goes with loomc " +
                 commandNames(option->commands) + ", not loomc " + info->name);
  if (llvm::Error e = option->set(options, value))
    return error(spelled + " " + llvm::toString(std::move(e)));
  options.given.emplace_back(option->name, value.str());
  return llvm::Error::success();
}

} // namespace loom::driver
