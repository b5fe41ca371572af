//===- loomc.cpp - the Loom compiler driver -------------------------------===//
//
//   loomc import|export|compile|train|schedule [MODEL] [-o OUT] [flags]
//
// A thin driver: subcommands, flags bound to the library's typed options
// (compiler/Compile.h, Pipelines.h, Training.h, PipelineParallel.h,
// ExportTrained.h, frontends/onnx), files in and out. Errors go to stderr,
// one "error: ..." line each, and the exit code is 1. README.md,
// docs/training.md and docs/pipeline.md describe the commands and flags.
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
#include "loom/common/FileIO.h"
#include "loom/common/TensorFiles.h"
#include "tools/loomc/CudaTarget.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

namespace cl = llvm::cl;
using namespace mlir;
using llvm::StringRef;

// Flags bind to the typed options they set (cl::location); the text ones
// are parsed and checked by the library (parseTrainingOptions).
static loom::CompileOptions codegen;
static loom::TrainingOptions train;
static loom::TrainingOptionsText trainText;
static cl::OptionCategory trainCat("loomc train and schedule");
#define LOOM_CONCAT2(A, B) A##B
#define LOOM_CONCAT(A, B) LOOM_CONCAT2(A, B)
#define LOOM_FLAG(T, NAME, WHERE, DESC)                                        \
  static cl::opt<T, true> LOOM_CONCAT(flag, __LINE__)(NAME, cl::desc(DESC),    \
                                                      cl::location(WHERE))

static cl::opt<std::string> command(
    cl::Positional, cl::Required,
    cl::desc("<command: import | export | compile | train | schedule>"));
static cl::opt<std::string> inputPath(cl::Positional, cl::desc("<model>"));
static cl::opt<std::string> outputPath("o", cl::desc("output file"),
                                       cl::init("-"));
LOOM_FLAG(std::string, "func", codegen.funcName, "export: the function");
LOOM_FLAG(std::string, "target", codegen.target, "cpu (default) or cuda");
LOOM_FLAG(std::string, "cpu", codegen.cpu.cpu,
          "an LLVM CPU name (x86-64-v3) or host (default)");
LOOM_FLAG(unsigned, "opt-level", codegen.cpu.optLevel, "LLVM -O (0-3)");
LOOM_FLAG(std::string, "fusion-report", codegen.cpu.fusionReport,
          "the fusion decisions as JSON to FILE");
LOOM_FLAG(bool, "print-fusion", codegen.cpu.printFusion, "print fusion");
LOOM_FLAG(bool, "timing", codegen.cpu.timing, "print every pass's time");
static cl::opt<std::string>
    emitKind("emit",
             cl::desc("what -o gets: artifact, cuda (source) or, for train, "
                      "mlir (the IR after its pass pipeline)"),
             cl::init("artifact"));
static cl::opt<std::string>
    cudaArchs("arch", cl::desc("--target cuda: NVRTC binaries for sm_80,..."));
static cl::opt<bool> allowTf32(
    "allow-tf32",
    cl::desc("--target cuda: f32 matmuls may round their inputs to TF32 "
             "(10-bit mantissa) on tensor cores; off by default, as in "
             "PyTorch"));
static cl::opt<std::string> fusedAttention(
    "fused-attention",
    cl::desc("--target cuda: softmax attention as one fused op and kernel: "
             "auto (default: from 256M scores, where storing them limits "
             "the batch), on, off"),
    cl::init("auto"));
static cl::list<std::string>
    binds("bind", cl::desc("freeze ONNX graph input NAME to a .npy/.pb"),
          cl::value_desc("NAME=FILE"));
static cl::opt<int64_t>
    maxNodes("max-nodes", cl::desc("refuse a larger ONNX model (1000000)"),
             cl::init(1000000));
static cl::opt<std::string>
    maxTensorBytes("max-tensor-bytes",
                   cl::desc("refuse a larger ONNX tensor (8GiB)"),
                   cl::init("8GiB"));
static cl::opt<bool> printMemoryPlan("print-memory-plan",
                                     cl::desc("print the planned peak bytes"));
static cl::opt<bool>
    printSummary("print-summary",
                 cl::desc("print op counts and parameters to stderr"));
static cl::opt<std::string>
    checkpointPath("checkpoint",
                   cl::desc("export: the trained parameters to export"));
static cl::opt<int64_t> batchSize("batch",
                                  cl::desc("the batch size of a dynamic dim 0"),
                                  cl::init(0));
static cl::list<std::string> dimSizes("dim",
                                      cl::desc("a size for a dynamic dim"),
                                      cl::value_desc("NAME=SIZE"));

LOOM_FLAG(std::string, "loss", trainText.loss, "cross_entropy or mse");
LOOM_FLAG(std::string, "logits", train.logits, "the output the loss reads");
LOOM_FLAG(std::string, "labels", train.labels, "the labels input's name");
LOOM_FLAG(int64_t, "ignore-index", train.ignoreIndex, "label of no class");
LOOM_FLAG(double, "label-smoothing", train.labelSmoothing, "(cross_entropy)");
LOOM_FLAG(std::string, "optimizer", trainText.optimizer, "sgd, adam, adamw");
LOOM_FLAG(double, "lr", train.lr, "learning rate");
LOOM_FLAG(double, "momentum", train.momentum, "sgd momentum");
LOOM_FLAG(bool, "nesterov", train.nesterov, "Nesterov momentum");
LOOM_FLAG(std::string, "betas", trainText.betas, "adam(w) B1,B2");
LOOM_FLAG(double, "eps", train.eps, "adam(w) epsilon");
LOOM_FLAG(double, "weight-decay", train.weightDecay,
          "weight decay (default: 0.01 for adamw, else 0)");
LOOM_FLAG(std::string, "lr-schedule", trainText.lrSchedule,
          "the learning rate's schedule: constant or cosine");
LOOM_FLAG(int64_t, "warmup", train.warmup, "linear warmup steps");
LOOM_FLAG(int64_t, "total-steps", train.totalSteps,
          "the schedule's horizon (default: loom-run's --steps)");
LOOM_FLAG(double, "clip-norm", train.clipNorm, "clip the gradient norm");
LOOM_FLAG(int64_t, "accumulate", train.accumulate, "batches per update");
LOOM_FLAG(std::string, "freeze", train.freeze, "regex of fixed params");
LOOM_FLAG(bool, "gradients", train.gradientsOnly,
          "compile the gradient function, not the training step");
LOOM_FLAG(std::string, "precision", trainText.precision, "f32, bf16 or f16");
LOOM_FLAG(std::string, "precision-policy", trainText.precisionPolicy,
          "ops following 16-bit ones: conservative, default, aggressive");
LOOM_FLAG(double, "loss-scale-init", train.lossScaleInit, "f16: first scale");
LOOM_FLAG(int64_t, "loss-scale-interval", train.lossScaleInterval,
          "f16: good steps before the loss scale doubles");
LOOM_FLAG(std::string, "memory-budget", trainText.memoryBudget,
          "the step's planned peak may not exceed SIZE (512MiB, 2GiB)");
LOOM_FLAG(std::string, "recompute", trainText.recompute,
          "none, all, sqrt or optimal (default with --memory-budget)");
LOOM_FLAG(int64_t, "data-parallel", train.dataParallel, "data-parallel ranks");
LOOM_FLAG(int64_t, "tensor-parallel", train.tensorParallel,
          "tensor-parallel ranks");
LOOM_FLAG(int64_t, "zero", train.zeroStage, "ZeRO stage 0, 1 or 2");
LOOM_FLAG(std::string, "bucket-size", trainText.bucketSize,
          "gradient bytes per data-parallel bucket");
LOOM_FLAG(int64_t, "micro-batches", train.pipeline.microBatches, "per step");
LOOM_FLAG(int64_t, "virtual-stages", train.pipeline.virtualStages,
          "interleaved: chunks");
LOOM_FLAG(std::string, "stage-boundaries", train.pipeline.boundaries,
          "op name texts where stages 1.. begin (/h.2/,/h.4/)");
#undef LOOM_FLAG
static cl::opt<int64_t, true>
    pipelineStages("pipeline-stages",
                   cl::desc("pipeline ranks (schedule: 2 by default)"),
                   cl::location(train.pipeline.stages));
static cl::opt<std::string, true>
    pipelineSchedule("pipeline-schedule",
                     cl::desc("gpipe, 1f1b (default), interleaved or zb-h1"),
                     cl::location(train.pipeline.schedule));
static cl::list<std::string> deprecatedSchedule(
    "schedule",
    cl::desc("deprecated: --lr-schedule and --pipeline-schedule in one list"),
    cl::CommaSeparated);
static cl::opt<bool> printIR("print-ir",
                             cl::desc("print the training step's graph IR"));
static cl::opt<bool> noInitialValues(
    "no-initial-values",
    cl::desc("train: leave the state's initial values out of the artifact "
             "(zeros at load; loom-run --init or --resume gives them): a "
             "small artifact of a large model whose weights come from "
             "elsewhere"));
static cl::opt<std::string>
    reportPath("report",
               cl::desc("the passes' decisions and the memory plan as JSON"));
static cl::opt<std::string>
    scheduleCosts("costs",
                  cl::desc("schedule: also simulate with costs F,I,W[,T]"));
static cl::opt<bool>
    printTimeline("print", cl::desc("schedule: draw each rank's timeline"));

static bool fail(const llvm::Twine &message) {
  llvm::errs() << "error: " << message << "\n";
  return false;
}

/// fail() for a command's exit code.
static int exitError(const llvm::Twine &message) {
  fail(message);
  return 1;
}

/// --fused-attention into the fewest scores an attention is fused with
/// (-1: none); false after an error.
static bool attentionThreshold(int64_t &minScores) {
  if (fusedAttention == "auto")
    minScores = loom::codegen::kFuseAttentionAuto;
  else if (fusedAttention == "on")
    minScores = 0;
  else if (fusedAttention == "off")
    minScores = -1;
  else
    return fail("--fused-attention takes auto, on or off, not '" +
                fusedAttention + "'");
  return true;
}

/// The train flags that need parsing, into `train`, which is verified.
static bool parseTrainFlags() {
  if (!deprecatedSchedule.empty()) {
    llvm::Expected<std::string> warning = loom::takeDeprecatedSchedule(
        deprecatedSchedule, trainText, train.pipeline);
    if (!warning)
      return fail(llvm::toString(warning.takeError()));
    llvm::errs() << *warning << "\n";
  }
  train.target = codegen.target;
  if (!attentionThreshold(train.fuseAttentionMinScores))
    return false;
  train.report = !reportPath.empty();
  train.printSummary = printSummary;
  if (llvm::Error e = loom::parseTrainingOptions(trainText, train))
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
    loom::files::HostTensor t;
    if (!loom::files::readTensorFile(b.substr(eq + 1), t, error))
      return fail("--bind " + name + ": " + error);
    options.bindings[name] =
        loom::files::tensorProtoBytes(name, loom::files::viewOf(t));
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
  return loom::files::writeFileAtomically(outputPath, bytes.str(), error) ||
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
    return failed(loom::exportTrainedModel(ctx, inputPath, checkpointPath,
                                           codegen.funcName, outputPath));
  }
  if (!checkpointPath.empty())
    return exitError("--checkpoint goes with a training artifact (TRAIN.loom)");
  llvm::SourceMgr sources;
  auto module = parseSourceFile<ModuleOp>(inputPath, sources, &ctx);
  if (!module || failed(verify(*module)))
    return 1;
  loom::onnx_export::ExportOptions options;
  options.funcName = codegen.funcName;
  return failed(loom::onnx_export::exportFile(*module, outputPath, options));
}

/// The code generation flags into `options`; false after an error.
static bool codegenOptions(loom::CompileOptions &options) {
  options.target = codegen.target;
  options.cpu = codegen.cpu;
  options.cuda.fusionReport = codegen.cpu.fusionReport;
  options.cuda.printFusion = codegen.cpu.printFusion;
  options.cuda.timing = codegen.cpu.timing;
  // The artifact goes straight to its file (the weights are not copied
  // into memory on the way); --emit cuda writes the source instead.
  if (emitKind != "cuda")
    options.outputPath = outputPath;
  if (!attentionThreshold(options.cuda.fuseAttentionMinScores))
    return false;
  return succeeded(loom::tools::setCudaOptions(options, codegen.target,
                                               emitKind, cudaArchs, allowTf32));
}

/// --emit cuda's source to -o (the compiler writes an artifact itself);
/// --print-memory-plan.
static bool writeCompiled(const loom::CompileReport &report) {
  if (printMemoryPlan)
    llvm::outs() << report.memoryPlan;
  if (emitKind == "cuda")
    return writeOutput(report.cudaSource);
  // The compiler wrote the artifact (CompileOptions::outputPath).
  return true;
}

static int runCompile(MLIRContext &ctx) {
  if (outputPath == "-")
    return exitError("compile needs an output file (-o MODEL.loom)");
  if (emitKind == "mlir")
    return exitError("--emit mlir goes with loomc train");
  OwningOpRef<ModuleOp> module = loadModel(ctx);
  loom::CompileOptions options;
  options.funcName = codegen.funcName;
  std::string bytes;
  loom::CompileReport report;
  if (!module || !codegenOptions(options) ||
      failed(loom::compileToArtifact(*module, options, bytes, &report)))
    return 1;
  return !writeCompiled(report);
}

static int runTrain(MLIRContext &ctx) {
  if (outputPath == "-")
    return exitError("train needs an output file (-o TRAIN.loom)");
  if (!parseTrainFlags())
    return 1;
  loom::onnx_import::ImportOptions import;
  import.initializersAsParams = true;
  // --batch is the global batch: each rank and micro-batch gets a piece.
  if (isOnnx(inputPath) && batchSize) {
    llvm::Expected<int64_t> piece = train.microBatchSize(batchSize);
    if (!piece)
      return exitError(llvm::toString(piece.takeError()));
    batchSize = *piece;
  }
  OwningOpRef<ModuleOp> module = loadModel(ctx, import);
  if (!module)
    return 1;
  loom::CompileOptions options;
  options.initialValues = !noInitialValues;
  loom::report::Sink sink;
  if (failed(loom::keepInferenceModel(*module, inputPath, options)) ||
      failed(
          loom::runTrainingPipeline(*module, train, sink, codegen.cpu.timing)))
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
      !writeCompiled(compiled))
    return 1;
  llvm::Error budget = loom::finishTrainingReport(train, sink, compiled);
  std::string error;
  if (!reportPath.empty() &&
      !loom::files::writeFileAtomically(reportPath, sink.toJson(), error)) {
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
  for (const std::string &n : deprecatedSchedule)
    if (n != "constant" && n != "cosine" &&
        !pipelineSchedule.getNumOccurrences())
      train.pipeline.schedule = n;
  if (!deprecatedSchedule.empty())
    llvm::errs() << "warning: --schedule is deprecated: use "
                 << "--pipeline-schedule " << train.pipeline.scheduleOrDefault()
                 << "\n";
  auto costs = loom::parseScheduleCosts(scheduleCosts);
  if (!costs)
    return exitError(llvm::toString(costs.takeError()));
  const loom::PipelineParallelOptions &p = train.pipeline;
  llvm::Expected<std::string> text = loom::simulatePipelineSchedule(
      p.scheduleOrDefault(), pipelineStages.getNumOccurrences() ? p.stages : 2,
      p.microBatches, p.virtualStages, *costs ? &**costs : nullptr,
      printTimeline);
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
