//===- loomc.cpp - the Loom compiler driver -------------------------------===//
//
//   loomc import MODEL.onnx|.onnxtext [-o OUT.mlir] [--print-summary]
//         [--bind NAME=FILE.npy|.pb ...] [--max-nodes N] [--max-tensor-bytes S]
//   loomc export MODEL.mlir -o OUT.onnx [--func NAME]
//   loomc export TRAIN.loom [--checkpoint CK.loomckpt] -o OUT.onnx
//   loomc compile MODEL.onnx|.onnxtext|.mlir -o OUT.loom [--target cpu|cuda]
//   loomc train MODEL.onnx|.mlir -o TRAIN.loom [--loss ...] [--optimizer ...]
//         [--lr-schedule constant|cosine] [--pipeline-stages S
//          --pipeline-schedule gpipe|1f1b|interleaved|zb-h1] [--emit mlir] ...
//   loomc schedule --pipeline-stages S --micro-batches M
//         [--pipeline-schedule NAME] [--costs F,I,W[,T]] [--print]
//
// A thin driver: flags to the typed options of the library (compiler/
// Compile.h, Pipelines.h, Training.h, PipelineParallel.h, ExportTrained.h,
// frontends/onnx), files in and out. Errors go to stderr as one
// "error: ..." line each and the exit code is 1. docs/training.md and
// docs/pipeline.md describe the training flags; `loomc --help` lists all.
//
//===----------------------------------------------------------------------===//

#include "compiler/Compile.h"
#include "compiler/ExportTrained.h"
#include "compiler/InitAll.h"
#include "compiler/PipelineParallel.h"
#include "compiler/Pipelines.h"
#include "compiler/Training.h"
#include "frontends/onnx/OnnxExporter.h"
#include "frontends/onnx/OnnxImporter.h"
#include "runtime/src/pipeline/Schedule.h"
#include "tools/loom-run/TensorFiles.h"
#include "tools/loomc/CudaTarget.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

namespace cl = llvm::cl;
using namespace mlir;
using llvm::StringRef;

// ---- every command ----
static cl::opt<std::string> command(
    cl::Positional, cl::Required,
    cl::desc("<command: import | export | compile | train | schedule>"));
static cl::opt<std::string> inputPath(cl::Positional, cl::Optional,
                                      cl::desc("<model>"));
static cl::opt<std::string> outputPath("o", cl::desc("output file"),
                                       cl::value_desc("file"), cl::init("-"));
static cl::opt<std::string> funcName("func",
                                     cl::desc("export: the function to export"),
                                     cl::value_desc("name"), cl::init(""));
static cl::opt<std::string>
    target("target", cl::desc("compile/train: the target (cpu or cuda)"),
           cl::value_desc("target"), cl::init("cpu"));
static cl::opt<std::string> emitKind(
    "emit",
    cl::desc("compile/train: what -o gets: artifact (default), cuda (the "
             "CUDA C++ source of every kernel) or, for train, mlir (the IR "
             "after --loom-training-pipeline, not compiled)"),
    cl::value_desc("artifact|cuda|mlir"), cl::init("artifact"));
static cl::opt<std::string> cudaArchs(
    "arch",
    cl::desc("compile/train --target cuda: also compile the source with "
             "NVRTC for these archs (sm_80,sm_90) into the artifact"),
    cl::value_desc("sm_XX,..."), cl::init(""));
static cl::opt<std::string>
    cpuName("cpu",
            cl::desc("compile: the CPU to generate code for, an LLVM CPU name "
                     "(x86-64-v3, skylake-avx512) or host"),
            cl::value_desc("name"), cl::init("host"));
static cl::list<std::string>
    binds("bind",
          cl::desc("import/compile: freeze ONNX graph input NAME to the "
                   "tensor in FILE (.npy or .pb); repeatable"),
          cl::value_desc("NAME=FILE"));
static cl::opt<int64_t>
    maxNodes("max-nodes",
             cl::desc("import/compile/train: refuse an ONNX model with more "
                      "nodes (default 1000000; docs/hardening.md)"),
             cl::value_desc("N"), cl::init(1000000));
static cl::opt<std::string> maxTensorBytes(
    "max-tensor-bytes",
    cl::desc("import/compile/train: refuse an ONNX tensor (initializer, "
             "Constant, external data) larger than SIZE (default 8GiB)"),
    cl::value_desc("SIZE"), cl::init("8GiB"));
static cl::opt<bool> printMemoryPlan(
    "print-memory-plan",
    cl::desc("compile: print the planned peak bytes and the largest buffers"));
static cl::opt<std::string>
    fusionReport("fusion-report",
                 cl::desc("compile: write the kernel regions and every fusion "
                          "decision, with its reason, as JSON to FILE"),
                 cl::value_desc("FILE"));
static cl::opt<bool> printFusion(
    "print-fusion",
    cl::desc("compile: print the kernel regions and fusion decisions"));
static cl::opt<unsigned>
    optLevel("opt-level",
             cl::desc("compile/train: LLVM optimization level (0-3)"),
             cl::init(3));
static cl::opt<bool>
    timing("timing", cl::desc("compile/train: print the time of every compiler "
                              "pass and of LLVM's phases"));
static cl::opt<bool> printSummary(
    "print-summary",
    cl::desc("print op counts, parameter count and bytes to stderr"));
static cl::opt<std::string> checkpointPath(
    "checkpoint",
    cl::desc("export: the checkpoint whose parameters a training artifact's "
             "model gets"),
    cl::value_desc("CK.loomckpt"), cl::init(""));

// ---- train: flags straight into the typed options where they are
// numbers or text; enums and sizes are parsed in parseTrainFlags ----
static loom::TrainingOptions train;
static cl::OptionCategory trainCat("loomc train");
#define LOOM_CONCAT2(A, B) A##B
#define LOOM_CONCAT(A, B) LOOM_CONCAT2(A, B)
#define LOOM_TRAIN_OPT(T, NAME, FIELD, DESC)                                   \
  static cl::opt<T, true> LOOM_CONCAT(trainFlag, __LINE__)(                    \
      NAME, cl::desc(DESC), cl::location(train.FIELD), cl::cat(trainCat))
LOOM_TRAIN_OPT(std::string, "logits", logits,
               "train: the model output the loss reads");
LOOM_TRAIN_OPT(std::string, "labels", labels,
               "train: the name of the labels input");
LOOM_TRAIN_OPT(int64_t, "ignore-index", ignoreIndex,
               "train: cross_entropy label that does not count");
LOOM_TRAIN_OPT(double, "label-smoothing", labelSmoothing,
               "train: cross_entropy label smoothing");
LOOM_TRAIN_OPT(double, "lr", lr, "train: learning rate");
LOOM_TRAIN_OPT(double, "momentum", momentum, "train: sgd momentum");
LOOM_TRAIN_OPT(bool, "nesterov", nesterov, "train: Nesterov momentum");
LOOM_TRAIN_OPT(double, "eps", eps, "train: adam(w) epsilon");
LOOM_TRAIN_OPT(
    double, "weight-decay", weightDecay,
    "train: weight decay (default: PyTorch's for the optimizer, 0.01 for "
    "adamw, else 0)");
LOOM_TRAIN_OPT(int64_t, "warmup", warmup, "train: linear warmup steps");
LOOM_TRAIN_OPT(int64_t, "total-steps", totalSteps,
               "train: the schedule's horizon (default: loom-run's --steps)");
LOOM_TRAIN_OPT(double, "clip-norm", clipNorm,
               "train: clip the global gradient norm (0: off)");
LOOM_TRAIN_OPT(int64_t, "accumulate", accumulate,
               "train: micro-batches per optimizer step");
LOOM_TRAIN_OPT(std::string, "freeze", freeze,
               "train: parameters whose name matches this regex stay fixed");
LOOM_TRAIN_OPT(
    bool, "gradients", gradientsOnly,
    "train: compile the gradient function instead of the training step: "
    "outputs the loss and <param>.grad for one batch");
LOOM_TRAIN_OPT(double, "loss-scale-init", lossScaleInit,
               "train: f16's first loss scale (default 65536)");
LOOM_TRAIN_OPT(
    int64_t, "loss-scale-interval", lossScaleInterval,
    "train: f16: good steps before the loss scale doubles (default 2000)");
LOOM_TRAIN_OPT(
    int64_t, "data-parallel", dataParallel,
    "train: data-parallel ranks; each computes 1/N of the global batch "
    "(--batch) and the gradients are averaged over them (run "
    "under loom-launch --nproc N)");
LOOM_TRAIN_OPT(
    int64_t, "tensor-parallel", tensorParallel,
    "train: tensor-parallel ranks; linear layers are split over them "
    "(column- then row-parallel, Megatron style), each rank reads "
    "the same batch (run under loom-launch --nproc N*M)");
LOOM_TRAIN_OPT(
    int64_t, "zero", zeroStage,
    "train: ZeRO stage with --data-parallel: 0 (none), 1 (optimizer state "
    "sharded), 2 (and gradients reduce-scattered)");
LOOM_TRAIN_OPT(
    std::string, "stage-boundaries", pipeline.boundaries,
    "train --pipeline-stages: where stages 1.. begin, each the text of an "
    "op name (ONNX node) it contains, e.g. /h.2/,/h.4/ (default: "
    "balanced by a cost model of FLOPs and bytes)");
LOOM_TRAIN_OPT(int64_t, "micro-batches", pipeline.microBatches,
               "train, schedule: micro-batches per optimizer step");
LOOM_TRAIN_OPT(int64_t, "virtual-stages", pipeline.virtualStages,
               "train, schedule: chunks per rank of the interleaved schedule "
               "(default 2)");
#undef LOOM_TRAIN_OPT
#undef LOOM_CONCAT
#undef LOOM_CONCAT2
static cl::opt<int64_t, true> pipelineStages(
    "pipeline-stages",
    cl::desc("train, schedule: pipeline ranks (default: train none, "
             "schedule 2)"),
    cl::location(train.pipeline.stages), cl::cat(trainCat));
static cl::opt<std::string> lossKind("loss",
                                     cl::desc("train: cross_entropy or mse"),
                                     cl::init("cross_entropy"),
                                     cl::cat(trainCat));
static cl::opt<std::string> optimizerKind("optimizer",
                                          cl::desc("train: sgd, adam, adamw"),
                                          cl::init("adamw"), cl::cat(trainCat));
static cl::opt<std::string> betas("betas",
                                  cl::desc("train: adam(w) betas B1,B2 "
                                           "(default 0.9,0.999)"),
                                  cl::init("0.9,0.999"), cl::cat(trainCat));
static cl::opt<std::string>
    lrSchedule("lr-schedule",
               cl::desc("train: the learning rate's schedule, constant or "
                        "cosine"),
               cl::init(""), cl::cat(trainCat));
static cl::opt<std::string> pipelineSchedule(
    "pipeline-schedule",
    cl::desc("train --pipeline-stages, schedule: gpipe, 1f1b (default), "
             "interleaved or zb-h1"),
    cl::init(""), cl::cat(trainCat));
static cl::list<std::string> deprecatedSchedule(
    "schedule",
    cl::desc("deprecated: --lr-schedule and --pipeline-schedule in one list "
             "(--schedule zb-h1,cosine)"),
    cl::CommaSeparated, cl::cat(trainCat));
static cl::opt<std::string> scheduleCosts(
    "costs",
    cl::desc("schedule: also simulate with these costs of F, I, W and a "
             "transfer (measured ones, e.g. from bench/pipeline)"),
    cl::value_desc("F,I,W[,T]"), cl::init(""), cl::cat(trainCat));
static cl::opt<bool>
    printTimeline("print",
                  cl::desc("schedule: draw each rank's timeline as text"),
                  cl::cat(trainCat));
static cl::opt<int64_t> batchSize(
    "batch",
    cl::desc("compile, train: the (micro-)batch size, for a dynamic dim 0 "
             "of an input (the CUDA target needs static shapes)"),
    cl::init(0), cl::cat(trainCat));
static cl::list<std::string>
    dimSizes("dim", cl::desc("compile, train: a size for a named dynamic dim"),
             cl::value_desc("NAME=SIZE"), cl::cat(trainCat));
static cl::opt<std::string> precision(
    "precision",
    cl::desc("train: f32, or bf16 / f16 mixed precision (matmuls and "
             "convolutions in 16 bits, f32 master weights; f16 with dynamic "
             "loss scaling)"),
    cl::init("f32"), cl::cat(trainCat));
static cl::opt<std::string> precisionPolicy(
    "precision-policy",
    cl::desc("train: which ops follow the 16-bit ones: conservative, default "
             "or aggressive"),
    cl::init("default"), cl::cat(trainCat));
static cl::opt<bool>
    printIR("print-ir", cl::desc("train: print the training step's graph IR"),
            cl::cat(trainCat));
static cl::opt<std::string> memoryBudget(
    "memory-budget",
    cl::desc("train: the planned peak of the step's intermediates may not "
             "exceed SIZE (bytes, or 512MiB, 2GiB, 1e9, 64KB ...); "
             "recomputes forward values to meet it"),
    cl::value_desc("SIZE"), cl::init(""), cl::cat(trainCat));
static cl::opt<std::string> recomputeStrategy(
    "recompute",
    cl::desc("train: which forward values the backward recomputes: none, "
             "all, sqrt or optimal (default: optimal with --memory-budget, "
             "else none)"),
    cl::init(""), cl::cat(trainCat));
static cl::opt<std::string>
    bucketSize("bucket-size",
               cl::desc("train: gradient bytes per data-parallel bucket "
                        "(default: chosen from the model)"),
               cl::value_desc("SIZE"), cl::init(""), cl::cat(trainCat));
static cl::opt<std::string> reportPath(
    "report",
    cl::desc("train: write the decisions of the passes (mixed precision, "
             "recompute) and the memory plan as JSON to FILE, and a summary "
             "to stderr"),
    cl::value_desc("FILE.json"), cl::init(""), cl::cat(trainCat));

static bool fail(const llvm::Twine &message) {
  llvm::errs() << "error: " << message << "\n";
  return false;
}

/// fail() for a command's exit code.
static int exitError(const llvm::Twine &message) {
  fail(message);
  return 1;
}

/// Sets `slot` from `parsed`, or prints its error.
template <typename T> static bool take(T &slot, llvm::Expected<T> parsed) {
  if (!parsed)
    return fail(llvm::toString(parsed.takeError()));
  slot = *parsed;
  return true;
}

/// The deprecated --schedule: each name to --lr-schedule or
/// --pipeline-schedule (unless given), with a warning naming them.
static bool takeDeprecatedSchedule() {
  if (deprecatedSchedule.empty())
    return true;
  std::string lr, pipe, joined = llvm::join(deprecatedSchedule, ",");
  for (const std::string &name : deprecatedSchedule) {
    bool isLr = name == "constant" || name == "cosine";
    const auto &pipes = loom::pipeline::scheduleNames();
    bool isPipe = llvm::is_contained(pipes, name);
    std::string &slot = isLr ? lr : pipe;
    if ((!isLr && !isPipe) || (isPipe && !slot.empty()) ||
        (isLr && !slot.empty() && slot != "constant" && slot != name))
      return fail("--schedule takes one of constant, cosine (the learning "
                  "rate) and one of gpipe, 1f1b, interleaved, zb-h1 (the "
                  "pipeline), not '" +
                  joined + "'");
    slot = name;
  }
  llvm::errs() << "warning: --schedule is deprecated: use"
               << (pipe.empty() ? "" : " --pipeline-schedule " + pipe)
               << (lr.empty() ? "" : " --lr-schedule " + lr) << "\n";
  if (lrSchedule.empty())
    lrSchedule = lr;
  if (pipelineSchedule.empty())
    pipelineSchedule = pipe;
  return true;
}

/// The train flags that need parsing, into `train`; then its verify().
static bool parseTrainFlags() {
  if (!takeDeprecatedSchedule() ||
      !take(train.loss, loom::parseLossKind(lossKind)) ||
      !take(train.optimizer, loom::parseOptimizerKind(optimizerKind)) ||
      !take(train.precision, loom::parsePrecision(precision)) ||
      !take(train.recompute, loom::parseRecomputeMode(recomputeStrategy)))
    return false;
  if (!lrSchedule.empty() &&
      !take(train.lrSchedule, loom::parseLrSchedule(lrSchedule)))
    return false;
  if (train.precision != loom::Precision::F32 &&
      !take(train.precisionPolicy, loom::parsePrecisionPolicy(precisionPolicy)))
    return false;
  if (llvm::Error e = loom::parseBetas(betas, train.beta1, train.beta2))
    return fail(llvm::toString(std::move(e)));
  if (!memoryBudget.empty() &&
      (train.memoryBudget = loom::parseByteSize(memoryBudget)) <= 0)
    return fail(train.pipeline.enabled()
                    ? "--memory-budget takes a size, not '" + memoryBudget + "'"
                    : "--memory-budget takes a size (4096, 64KiB, 512MiB, "
                      "2GiB, 1e9), not '" +
                          memoryBudget + "'");
  if (!train.pipeline.enabled() && train.dataParallel > 1 &&
      !bucketSize.empty() &&
      (train.bucketBytes = loom::parseByteSize(bucketSize)) <= 0)
    return fail("--bucket-size takes a size (4096, 64KiB, 25MiB), not '" +
                bucketSize + "'");
  train.pipeline.schedule = pipelineSchedule;
  train.target = target;
  train.report = !reportPath.empty();
  train.printSummary = printSummary;
  if (llvm::Error e = train.verify())
    return fail(llvm::toString(std::move(e)));
  return true;
}

/// The import options with --bind's values read; false on a bad file.
static bool importOptions(loom::onnx_import::ImportOptions &options) {
  int64_t tensorBytes = loom::parseByteSize(maxTensorBytes);
  if (tensorBytes <= 0)
    return fail("--max-tensor-bytes takes a size above 0 (4096, 64KiB, "
                "2GiB), not '" +
                maxTensorBytes + "'");
  if (maxNodes <= 0)
    return fail("--max-nodes takes a number above 0, not " +
                llvm::Twine(maxNodes));
  options.maxTensorBytes = static_cast<uint64_t>(tensorBytes);
  options.maxNodes = maxNodes;
  for (const std::string &b : binds) {
    size_t eq = b.find('=');
    if (eq == std::string::npos || eq == 0)
      return fail("--bind takes NAME=FILE, not '" + b + "'");
    std::string name = b.substr(0, eq), error;
    loom_tensor *t = loom::tools::readTensorFile(b.substr(eq + 1), error);
    if (!t)
      return fail("--bind " + name + ": " + error);
    options.bindings[name] = loom::tools::tensorProtoBytes(name, t);
    loom_tensor_release(t);
  }
  return true;
}

/// importOptions() with --dim and --batch.
static bool shapeOptions(loom::onnx_import::ImportOptions &options) {
  for (const std::string &d : dimSizes) {
    size_t eq = d.find('=');
    int64_t size = 0;
    if (eq == std::string::npos ||
        StringRef(d).substr(eq + 1).getAsInteger(10, size) || size <= 0)
      return fail("--dim takes NAME=SIZE, not '" + d + "'");
    options.dimSizes[d.substr(0, eq)] = size;
  }
  options.batch = batchSize;
  return importOptions(options);
}

static bool isOnnx(StringRef path) {
  return path.ends_with(".onnx") || path.ends_with(".onnxtext");
}

/// The model in `inputPath`: ONNX (binary or text) or graph IR.
static OwningOpRef<ModuleOp>
loadModel(MLIRContext &ctx, loom::onnx_import::ImportOptions options = {}) {
  if (isOnnx(inputPath)) {
    if (!shapeOptions(options))
      return nullptr;
    auto module = loom::onnx_import::importFile(ctx, inputPath, options);
    return failed(module) ? nullptr : std::move(*module);
  }
  if (!binds.empty())
    return fail("--bind applies to ONNX models, not graph IR"), nullptr;
  if (batchSize || !dimSizes.empty())
    return fail("--batch and --dim fix an ONNX model's dynamic dims; build "
                "graph IR with static shapes"),
           nullptr;
  llvm::SourceMgr sources;
  auto module = parseSourceFile<ModuleOp>(inputPath, sources, &ctx);
  if (!module || failed(verify(*module)))
    return nullptr;
  return module;
}

static bool writeOutput(StringRef bytes) {
  std::string error;
  return loom::tools::writeFileAtomically(outputPath, bytes.str(), error) ||
         fail(error);
}

static int runImport(MLIRContext &ctx) {
  loom::onnx_import::ImportOptions options;
  if (!importOptions(options))
    return 1;
  auto module = loom::onnx_import::importFile(ctx, inputPath, options);
  if (failed(module))
    return 1;
  std::string error;
  auto out = openOutputFile(outputPath, &error);
  if (!out)
    return exitError(error);
  (*module)->print(out->os());
  out->os() << "\n";
  out->keep();
  if (printSummary)
    loom::summarizeModule(**module, llvm::errs());
  return 0;
}

static int runExport(MLIRContext &ctx) {
  if (outputPath == "-")
    return exitError("export needs an output file (-o MODEL.onnx)");
  if (StringRef(inputPath).ends_with(".loom")) {
    FailureOr<std::string> onnx =
        loom::exportTrainedModel(ctx, inputPath, checkpointPath, funcName);
    return failed(onnx) || !writeOutput(*onnx);
  }
  if (!checkpointPath.empty())
    return exitError("--checkpoint goes with a training artifact (TRAIN.loom)");
  llvm::SourceMgr sources;
  auto module = parseSourceFile<ModuleOp>(inputPath, sources, &ctx);
  if (!module || failed(verify(*module)))
    return 1;
  loom::onnx_export::ExportOptions options;
  options.funcName = funcName;
  return failed(loom::onnx_export::exportFile(*module, outputPath, options));
}

/// The code generation flags into `options`; false after an error.
static bool codegenOptions(loom::CompileOptions &options) {
  options.target = target;
  if (failed(loom::tools::setCudaOptions(options, target, emitKind, cudaArchs)))
    return false;
  options.cpu.cpu = cpuName;
  options.cpu.optLevel = optLevel;
  options.cpu.fusionReport = fusionReport;
  options.cpu.printFusion = printFusion;
  options.cpu.timing = timing;
  options.cuda.fusionReport = fusionReport;
  options.cuda.printFusion = printFusion;
  options.cuda.timing = timing;
  return true;
}

/// The artifact, or --emit cuda's source, to -o; --print-memory-plan.
static bool writeCompiled(std::string &bytes,
                          const loom::CompileReport &report) {
  if (printMemoryPlan)
    llvm::outs() << report.memoryPlan;
  return writeOutput(emitKind == "cuda" ? report.cudaSource : bytes);
}

static int runCompile(MLIRContext &ctx) {
  if (outputPath == "-")
    return exitError("compile needs an output file (-o MODEL.loom)");
  if (emitKind == "mlir")
    return exitError("--emit mlir goes with loomc train");
  OwningOpRef<ModuleOp> module = loadModel(ctx);
  loom::CompileOptions options;
  options.funcName = funcName;
  std::string bytes;
  loom::CompileReport report;
  if (!module || !codegenOptions(options) ||
      failed(loom::compileToArtifact(*module, options, bytes, &report)))
    return 1;
  return !writeCompiled(bytes, report);
}

static int runTrain(MLIRContext &ctx) {
  if (outputPath == "-")
    return exitError("train needs an output file (-o TRAIN.loom)");
  if (!parseTrainFlags())
    return 1;
  loom::onnx_import::ImportOptions import;
  import.initializersAsParams = true;
  // --batch is the global batch: each rank and micro-batch gets a piece.
  int64_t pieces = train.dataParallel *
                   std::max<int64_t>(1, train.pipeline.enabled()
                                            ? train.pipeline.microBatches
                                            : 1);
  if (isOnnx(inputPath) && batchSize && pieces > 1) {
    if (batchSize % pieces)
      return exitError(
          "--batch " + llvm::Twine(batchSize) +
          " (the global batch) does not split over --data-parallel " +
          llvm::Twine(train.dataParallel) + " ranks" +
          (train.pipeline.enabled()
               ? " and --micro-batches " +
                     std::to_string(train.pipeline.microBatches)
               : std::string()));
    batchSize = batchSize / pieces;
  }
  OwningOpRef<ModuleOp> module = loadModel(ctx, import);
  if (!module)
    return 1;
  loom::CompileOptions options;
  if (StringRef(inputPath).ends_with(".onnx"))
    if (auto bytes = llvm::MemoryBuffer::getFile(inputPath))
      options.sourceOnnx = (*bytes)->getBuffer().str();
  // The inference function, for `loomc export` of a graph-IR model.
  llvm::raw_string_ostream ir(options.inferenceModule);
  if (failed(writeBytecodeToFile(*module, ir)))
    return 1;
  loom::report::Sink sink;
  if (failed(loom::runTrainingPipeline(*module, train, sink, timing)))
    return 1;
  if (printIR && !train.pipeline.enabled())
    (*module)->print(llvm::outs());
  if (emitKind == "mlir") {
    std::string text;
    llvm::raw_string_ostream os(text);
    (*module)->print(os);
    os << "\n";
    return !writeOutput(text);
  }
  std::string bytes;
  loom::CompileReport compiled;
  if (!codegenOptions(options) ||
      failed(loom::compileTraining(*module, train, options, sink, bytes,
                                   &compiled)) ||
      !writeCompiled(bytes, compiled))
    return 1;
  llvm::Error budget = loom::finishTrainingReport(train, sink, compiled);
  std::string json;
  llvm::raw_string_ostream os(json);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(sink.all())))
     << "\n";
  std::string error;
  if (!reportPath.empty() &&
      !loom::tools::writeFileAtomically(reportPath, json, error)) {
    llvm::consumeError(std::move(budget));
    return exitError(error);
  }
  if (budget)
    return exitError(llvm::toString(std::move(budget)));
  return 0;
}

/// `loomc schedule`: a pipeline schedule made, verified and simulated.
static int runSchedule() {
  // The deprecated --schedule: the last name that is not the learning
  // rate's (an unknown one is reported by the schedule's maker).
  std::string name =
      pipelineSchedule.empty() ? "1f1b" : pipelineSchedule.getValue();
  for (const std::string &n : deprecatedSchedule)
    if (n != "constant" && n != "cosine" && pipelineSchedule.empty())
      name = n;
  if (!deprecatedSchedule.empty())
    llvm::errs() << "warning: --schedule is deprecated: use "
                    "--pipeline-schedule "
                 << name << "\n";
  loom::ScheduleCosts costs;
  if (!scheduleCosts.empty()) {
    SmallVector<StringRef> parts;
    StringRef(scheduleCosts).split(parts, ',');
    double *v[4] = {&costs.forward, &costs.backwardInput, &costs.backwardWeight,
                    &costs.transfer};
    bool ok = parts.size() == 3 || parts.size() == 4;
    for (size_t i = 0; ok && i < parts.size(); ++i)
      ok = !parts[i].trim().getAsDouble(*v[i]) && *v[i] >= 0;
    if (!ok)
      return exitError("--costs takes F,I,W[,T] (non-negative numbers), not '" +
                       scheduleCosts + "'");
  }
  llvm::Expected<std::string> text = loom::simulatePipelineSchedule(
      name, pipelineStages.getNumOccurrences() ? train.pipeline.stages : 2,
      train.pipeline.microBatches, train.pipeline.virtualStages,
      scheduleCosts.empty() ? nullptr : &costs, printTimeline);
  if (!text)
    return exitError(llvm::toString(text.takeError()));
  llvm::outs() << *text;
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "Loom compiler driver\n");
  DialectRegistry registry;
  loom::registerAllDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  loom::registerAllPasses();
  // Diagnostics: one "[file: ]error: message" line each on stderr. The
  // messages name the ONNX node themselves.
  ScopedDiagnosticHandler handler(&ctx, [](Diagnostic &diag) {
    if (auto file = dyn_cast<FileLineColLoc>(diag.getLocation()))
      llvm::errs() << file.getFilename().getValue() << ": ";
    StringRef severity =
        diag.getSeverity() == DiagnosticSeverity::Error     ? "error: "
        : diag.getSeverity() == DiagnosticSeverity::Warning ? "warning: "
                                                            : "note: ";
    llvm::errs() << severity << diag.str() << "\n";
    return success();
  });
  if (command == "schedule")
    return runSchedule();
  if (inputPath.empty())
    return exitError("loomc " + command + " needs a model");
  if (command == "import")
    return runImport(ctx);
  if (command == "export")
    return runExport(ctx);
  if (command == "compile")
    return runCompile(ctx);
  if (command == "train")
    return runTrain(ctx);
  return exitError("unknown command '" + command +
                   "' (available: import, export, compile, train, schedule)");
}
