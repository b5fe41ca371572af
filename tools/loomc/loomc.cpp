//===- loomc.cpp - the Loom compiler driver -------------------------------===//
//
//   loomc import MODEL.onnx|MODEL.onnxtext [-o OUT.mlir] [--print-summary]
//         [--bind NAME=FILE.npy|.pb ...] [--max-nodes N]
//         [--max-tensor-bytes SIZE]
//   loomc export MODEL.mlir -o OUT.onnx [--func NAME]
//   loomc export TRAIN.loom [--checkpoint CK.loomckpt] -o OUT.onnx
//   loomc compile MODEL.onnx|MODEL.onnxtext|MODEL.mlir -o OUT.loom
//         [--target cpu] [--cpu host|NAME] [--func NAME] [--print-memory-plan]
//         [--fusion-report FILE.json] [--print-fusion]
//   loomc train MODEL.onnx|MODEL.mlir -o TRAIN.loom --loss cross_entropy|mse
//         [--logits OUTPUT] [--labels NAME] [--ignore-index I]
//         [--label-smoothing E] --optimizer sgd|adam|adamw [--lr LR]
//         [--momentum M] [--nesterov] [--betas B1,B2] [--eps E]
//         [--weight-decay W] [--schedule constant|cosine] [--warmup W]
//         [--total-steps T] [--clip-norm C] [--accumulate K] [--freeze REGEX]
//         [--batch B] [--dim NAME=SIZE ...] [--print-ir]
//         [--precision f32|bf16|f16] [--precision-policy P]
//         [--loss-scale-init S] [--loss-scale-interval N]
//         [--memory-budget SIZE] [--recompute none|all|sqrt|optimal]
//         [--report FILE.json]
//         [--pipeline-stages S --micro-batches M
//          --schedule gpipe|1f1b|interleaved|zb-h1[,cosine]
//          [--virtual-stages V] [--stage-boundaries TEXT,...]]
//   loomc schedule --pipeline-stages S --micro-batches M
//         [--schedule gpipe|1f1b|interleaved|zb-h1] [--virtual-stages V]
//         [--costs F,I,W[,T]] [--print]
//
// `import` turns an ONNX model into graph IR text; `export` writes graph
// IR as an ONNX model at opset 17, checked by the ONNX checker before it
// is written; `compile` writes a .loom artifact that the runtime
// (loom-run, the C API) runs. Errors (every unsupported node, malformed
// files, shape errors, ops without a lowering) go to stderr and the exit
// code is 1. `--bind` freezes an ONNX graph input to a value (a shape or
// axes input that a model takes at run time but the compiler needs).
// `train` compiles a training step for an inference model (docs/training.md):
// its float initializers become the trained parameters.
//
//===----------------------------------------------------------------------===//

#include "compiler/Compile.h"
#include "compiler/InitAll.h"
#include "compiler/Pipeline.h"
#include "dialects/graph/GraphOps.h"
#include "frontends/onnx/OnnxExporter.h"
#include "frontends/onnx/OnnxImporter.h"
#include "loom/common/Artifact.h"
#include "loom/common/Checkpoint.h"
#include "loom/common/FileIO.h"
#include "loom/common/Schedule.h"
#include "loom/common/TensorFiles.h"
#include "passes/Autodiff/Passes.h"
#include "passes/MixedPrecision/Passes.h"
#include "passes/Recompute/Passes.h"
#include "passes/Sharding/Passes.h"
#include "passes/Training/Passes.h"
#include "tools/loomc/CudaTarget.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include <map>
#include <set>

namespace cl = llvm::cl;
using namespace mlir;

static cl::opt<std::string>
    command(cl::Positional, cl::Required,
            cl::desc("<command: import | export | compile | train | "
                     "schedule>"));
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
// CUDA (docs/cuda.md).
static cl::opt<std::string>
    emitKind("emit",
             cl::desc("compile/train: what -o gets: artifact (default) or "
                      "cuda (the CUDA C++ source of every kernel)"),
             cl::value_desc("artifact|cuda"), cl::init("artifact"));
static cl::opt<std::string>
    cudaArchs("arch",
              cl::desc("compile/train --target cuda: also compile the source "
                       "with NVRTC for these archs (sm_80,sm_90) into the "
                       "artifact"),
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
static cl::opt<int64_t> maxNodes(
    "max-nodes",
    cl::desc("import/compile/train: refuse an ONNX model with more nodes "
             "(default 1000000; docs/hardening.md)"),
    cl::value_desc("N"), cl::init(1000000));
static cl::opt<std::string> maxTensorBytes(
    "max-tensor-bytes",
    cl::desc("import/compile/train: refuse an ONNX tensor (initializer, "
             "Constant, external data) larger than SIZE (default 8GiB)"),
    cl::value_desc("SIZE"), cl::init("8GiB"));
static cl::opt<bool> printMemoryPlan(
    "print-memory-plan",
    cl::desc("compile: print the planned peak bytes and the largest buffers"));
static cl::opt<std::string> fusionReport(
    "fusion-report",
    cl::desc("compile: write the kernel regions and every fusion decision, "
             "with its reason, as JSON to FILE"),
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

// ---- train ----
static cl::OptionCategory trainCat("loomc train");
static cl::opt<std::string> lossKind("loss",
                                     cl::desc("train: cross_entropy or mse"),
                                     cl::init("cross_entropy"),
                                     cl::cat(trainCat));
static cl::opt<std::string>
    logitsName("logits", cl::desc("train: the model output the loss reads"),
               cl::init(""), cl::cat(trainCat));
static cl::opt<std::string>
    labelsName("labels", cl::desc("train: the name of the labels input"),
               cl::init("labels"), cl::cat(trainCat));
static cl::opt<int64_t>
    ignoreIndex("ignore-index",
                cl::desc("train: cross_entropy label that does not count"),
                cl::init(-100), cl::cat(trainCat));
static cl::opt<double> labelSmoothing("label-smoothing",
                                      cl::desc("train: cross_entropy label "
                                               "smoothing"),
                                      cl::init(0.0), cl::cat(trainCat));
static cl::opt<std::string> optimizerKind("optimizer",
                                          cl::desc("train: sgd, adam, adamw"),
                                          cl::init("adamw"), cl::cat(trainCat));
static cl::opt<double> learningRate("lr", cl::desc("train: learning rate"),
                                    cl::init(1e-3), cl::cat(trainCat));
static cl::opt<double> momentum("momentum", cl::desc("train: sgd momentum"),
                                cl::init(0.0), cl::cat(trainCat));
static cl::opt<bool> nesterov("nesterov", cl::desc("train: Nesterov momentum"),
                              cl::cat(trainCat));
static cl::opt<std::string> betas("betas",
                                  cl::desc("train: adam(w) betas B1,B2 "
                                           "(default 0.9,0.999)"),
                                  cl::init("0.9,0.999"), cl::cat(trainCat));
static cl::opt<double> adamEps("eps", cl::desc("train: adam(w) epsilon"),
                               cl::init(1e-8), cl::cat(trainCat));
static cl::opt<double>
    weightDecay("weight-decay",
                cl::desc("train: weight decay (default: PyTorch's for the "
                         "optimizer, 0.01 for adamw, else 0)"),
                cl::init(-1.0), cl::cat(trainCat));
static cl::list<std::string> scheduleKinds(
    "schedule",
    cl::desc("train: the learning rate's, constant or cosine, and with "
             "--pipeline-stages the pipeline's, gpipe, 1f1b, interleaved or "
             "zb-h1 (both: --schedule zb-h1,cosine); schedule: the "
             "pipeline's"),
    cl::CommaSeparated, cl::cat(trainCat));
static cl::opt<std::string> stageBoundaries(
    "stage-boundaries",
    cl::desc("train --pipeline-stages: where stages 1.. begin, each the text "
             "of an op name (ONNX node) it contains, e.g. /h.2/,/h.4/ "
             "(default: balanced by a cost model of FLOPs and bytes)"),
    cl::value_desc("TEXT,..."), cl::init(""), cl::cat(trainCat));
static cl::OptionCategory scheduleCat("loomc schedule options");
static cl::opt<int64_t>
    pipelineStages("pipeline-stages",
                   cl::desc("train, schedule: pipeline ranks (default: "
                            "train none, schedule 2)"),
                   cl::init(0), cl::cat(scheduleCat));
static cl::opt<int64_t>
    microBatches("micro-batches",
                 cl::desc("train, schedule: micro-batches per optimizer step"),
                 cl::init(4), cl::cat(scheduleCat));
static cl::opt<int64_t> virtualStages(
    "virtual-stages",
    cl::desc("schedule: chunks per rank of the interleaved schedule "
             "(default 2)"),
    cl::init(0), cl::cat(scheduleCat));
static cl::opt<std::string> scheduleCosts(
    "costs",
    cl::desc("schedule: also simulate with these costs of F, I, W and a "
             "transfer (measured ones, e.g. from bench/pipeline)"),
    cl::value_desc("F,I,W[,T]"), cl::init(""), cl::cat(scheduleCat));
static cl::opt<bool>
    printTimeline("print",
                  cl::desc("schedule: draw each rank's timeline as text"),
                  cl::cat(scheduleCat));
static cl::opt<int64_t> warmupSteps("warmup",
                                    cl::desc("train: linear warmup steps"),
                                    cl::init(0), cl::cat(trainCat));
static cl::opt<int64_t> totalSteps(
    "total-steps",
    cl::desc("train: the schedule's horizon (default: loom-run's --steps)"),
    cl::init(0), cl::cat(trainCat));
static cl::opt<double> clipNorm("clip-norm",
                                cl::desc("train: clip the global gradient "
                                         "norm (0: off)"),
                                cl::init(0.0), cl::cat(trainCat));
static cl::opt<int64_t> accumulate("accumulate",
                                   cl::desc("train: micro-batches per "
                                            "optimizer step"),
                                   cl::init(1), cl::cat(trainCat));
static cl::opt<std::string> freeze("freeze",
                                   cl::desc("train: parameters whose name "
                                            "matches this regex stay fixed"),
                                   cl::init(""), cl::cat(trainCat));
static cl::opt<int64_t> batchSize(
    "batch",
    cl::desc("compile, train: the (micro-)batch size, for a dynamic dim 0 "
             "of an input (the CUDA target needs static shapes)"),
    cl::init(0), cl::cat(trainCat));
static cl::list<std::string>
    dimSizes("dim", cl::desc("compile, train: a size for a named dynamic dim"),
             cl::value_desc("NAME=SIZE"), cl::cat(trainCat));
static cl::opt<bool> gradientsOnly(
    "gradients",
    cl::desc("train: compile the gradient function instead of the training "
             "step: outputs the loss and <param>.grad for one batch"),
    cl::cat(trainCat));
static cl::opt<std::string>
    checkpointPath("checkpoint",
                   cl::desc("export: the checkpoint whose parameters a "
                            "training artifact's model gets"),
                   cl::value_desc("CK.loomckpt"), cl::init(""));
static cl::opt<std::string>
    precision("precision",
              cl::desc("train: f32, or bf16 / f16 mixed precision (matmuls "
                       "and convolutions in 16 bits, f32 master weights; f16 "
                       "with dynamic loss scaling)"),
              cl::init("f32"), cl::cat(trainCat));
static cl::opt<std::string>
    precisionPolicy("precision-policy",
                    cl::desc("train: which ops follow the 16-bit ones: "
                             "conservative, default or aggressive"),
                    cl::init("default"), cl::cat(trainCat));
static cl::opt<double>
    lossScaleInit("loss-scale-init",
                  cl::desc("train: f16's first loss scale (default 65536)"),
                  cl::init(65536.0), cl::cat(trainCat));
static cl::opt<int64_t> lossScaleInterval(
    "loss-scale-interval",
    cl::desc("train: f16: good steps before the loss scale doubles (default "
             "2000)"),
    cl::init(2000), cl::cat(trainCat));
static cl::opt<bool> printIR("print-ir",
                             cl::desc("train: print the training step's graph "
                                      "IR"),
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
static cl::opt<int64_t> dataParallel(
    "data-parallel",
    cl::desc("train: data-parallel ranks; each computes 1/N of the global "
             "batch (--batch) and the gradients are averaged over them "
             "(run under loom-launch --nproc N)"),
    cl::init(1), cl::cat(trainCat));
static cl::opt<int64_t> tensorParallel(
    "tensor-parallel",
    cl::desc("train: tensor-parallel ranks; linear layers are split over "
             "them (column- then row-parallel, Megatron style), each rank "
             "reads the same batch (run under loom-launch --nproc N*M)"),
    cl::init(1), cl::cat(trainCat));
static cl::opt<int64_t>
    zeroStage("zero",
              cl::desc("train: ZeRO stage with --data-parallel: 0 (none), 1 "
                       "(optimizer state sharded), 2 (and gradients "
                       "reduce-scattered)"),
              cl::init(0), cl::cat(trainCat));
static cl::opt<std::string> bucketSize(
    "bucket-size",
    cl::desc("train: gradient bytes per data-parallel bucket (default: "
             "chosen from the model)"),
    cl::value_desc("SIZE"), cl::init(""), cl::cat(trainCat));
static cl::opt<std::string> reportPath(
    "report",
    cl::desc("train: write the decisions of the passes (mixed precision, "
             "recompute) and the "
             "memory plan as JSON to FILE, and a summary to stderr"),
    cl::value_desc("FILE.json"), cl::init(""), cl::cat(trainCat));

/// Bytes from "123", "1e9", "64KB", "512MiB", "2GiB" (K/M/G: powers of
/// 1000; Ki/Mi/Gi: of 1024; a trailing B optional); -1 when malformed.
static int64_t parseSize(StringRef text) {
  StringRef s = text.trim();
  size_t digits = s.find_first_not_of("0123456789.eE+-");
  StringRef number = s.substr(0, digits), unit = s.substr(number.size());
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

/// Op counts, and constants as parameters (count and bytes).
static void summarize(ModuleOp module, llvm::raw_ostream &os) {
  std::map<std::string, int64_t> ops;
  int64_t params = 0, bytes = 0, tensors = 0;
  module.walk([&](Operation *op) {
    if (!isa<loom::graph::GraphDialect>(op->getDialect()))
      return;
    ++ops[op->getName().getStringRef().str()];
    if (auto c = dyn_cast<loom::graph::ConstantOp>(op)) {
      auto type = cast<RankedTensorType>(c.getType());
      ++tensors;
      params += type.getNumElements();
      unsigned bits = type.getElementType().getIntOrFloatBitWidth();
      bytes += type.getNumElements() * ((bits + 7) / 8);
    }
  });
  os << "ops:\n";
  for (auto &[name, count] : ops)
    os << "  " << name << ": " << count << "\n";
  os << "parameters: " << params << " in " << tensors << " tensors, " << bytes
     << " bytes\n";
}

/// The import options with --bind's values read; false on a bad file.
static bool importOptions(loom::onnx_import::ImportOptions &options) {
  int64_t tensorBytes = parseSize(maxTensorBytes);
  if (tensorBytes <= 0) {
    llvm::errs() << "error: --max-tensor-bytes takes a size above 0 (4096, "
                    "64KiB, 2GiB), not '"
                 << maxTensorBytes << "'\n";
    return false;
  }
  if (maxNodes <= 0) {
    llvm::errs() << "error: --max-nodes takes a number above 0, not "
                 << maxNodes << "\n";
    return false;
  }
  options.maxTensorBytes = static_cast<uint64_t>(tensorBytes);
  options.maxNodes = maxNodes;
  for (const std::string &b : binds) {
    size_t eq = b.find('=');
    if (eq == std::string::npos || eq == 0) {
      llvm::errs() << "error: --bind takes NAME=FILE, not '" << b << "'\n";
      return false;
    }
    std::string name = b.substr(0, eq), error;
    loom::files::HostTensor t;
    if (!loom::files::readTensorFile(b.substr(eq + 1), t, error)) {
      llvm::errs() << "error: --bind " << name << ": " << error << "\n";
      return false;
    }
    options.bindings[name] =
        loom::files::tensorProtoBytes(name, loom::files::viewOf(t));
  }
  return true;
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
  if (!out) {
    llvm::errs() << "error: " << error << "\n";
    return 1;
  }
  (*module)->print(out->os());
  out->os() << "\n";
  out->keep();
  if (printSummary)
    summarize(**module, llvm::errs());
  return 0;
}

/// `loomc export TRAIN.loom [--checkpoint CK] -o OUT.onnx`: the inference
/// model with the trained parameters (the checkpoint's, else the initial
/// ones).
static int exportTrained(MLIRContext &ctx) {
  std::string error;
  auto file = llvm::MemoryBuffer::getFile(inputPath);
  loom::artifact::Artifact art;
  if (!file) {
    llvm::errs() << "error: cannot read '" << inputPath << "'\n";
    return 1;
  }
  if (!loom::artifact::parse((*file)->getBufferStart(),
                             (*file)->getBufferSize(), art, error)) {
    llvm::errs() << "error: " << inputPath << ": " << error << "\n";
    return 1;
  }
  if (!art.has_training()) {
    llvm::errs() << "error: " << inputPath
                 << " is not a training artifact (loomc train makes one)\n";
    return 1;
  }
  const loom::artifact::Training &tr = art.training();
  std::map<std::string, loom::onnx_export::InitializerValue> values;
  std::map<std::string, std::pair<int, std::vector<int64_t>>> paramTypes;
  auto addParams = [&](const loom::artifact::Artifact &a) {
    for (const auto &s : a.training().state())
      if (s.kind() == "param") {
        const auto &sig = a.inputs(s.input());
        std::vector<int64_t> dims;
        for (const auto &d : sig.dims())
          dims.push_back(d.size());
        // A tensor-parallel piece: the initial value and checkpoints hold
        // the whole tensor.
        if (s.has_shard() && s.shard().has_dim())
          dims.assign(s.shard().full_dims().begin(),
                      s.shard().full_dims().end());
        values[s.name()] = {sig.dtype(), dims, s.initial()};
      }
  };
  addParams(art);
  // A pipeline artifact: each rank's update artifact trains its stages'.
  for (const std::string &update : art.pipeline().updates()) {
    loom::artifact::Artifact u;
    if (!loom::artifact::parse(update.data(), update.size(), u, error)) {
      llvm::errs() << "error: " << inputPath << ": a pipeline update: " << error
                   << "\n";
      return 1;
    }
    addParams(u);
  }
  if (!checkpointPath.empty()) {
    loom::artifact::Checkpoint ck;
    if (!loom::artifact::readCheckpoint(checkpointPath, ck, error)) {
      llvm::errs() << "error: " << error << "\n";
      return 1;
    }
    // The checkpoint must hold exactly this artifact's parameters.
    std::set<std::string> found;
    for (const auto &t : ck.state()) {
      if (t.kind() != "param")
        continue;
      auto it = values.find(t.name());
      if (it == values.end()) {
        llvm::errs() << "error: " << checkpointPath << " has a parameter '"
                     << t.name() << "' that " << inputPath
                     << " does not train: a checkpoint of another model?\n";
        return 1;
      }
      std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
      if (t.dtype() != it->second.dataType || dims != it->second.dims) {
        llvm::errs() << "error: " << checkpointPath << ": parameter '"
                     << t.name() << "' has another dtype or shape than in "
                     << inputPath << "\n";
        return 1;
      }
      it->second.rawData = t.data();
      found.insert(t.name());
    }
    for (const auto &[name, v] : values)
      if (!found.count(name)) {
        llvm::errs() << "error: " << checkpointPath << " lacks parameter '"
                     << name << "' of " << inputPath
                     << ": a checkpoint of another model?\n";
        return 1;
      }
  }
  if (!tr.source_onnx().empty()) {
    std::string bytes;
    std::string problem =
        loom::onnx_export::replaceInitializers(tr.source_onnx(), values, bytes);
    if (!problem.empty()) {
      llvm::errs() << "error: " << problem << "\n";
      return 1;
    }
    if (!loom::files::writeFileAtomically(outputPath, bytes, error)) {
      llvm::errs() << "error: " << error << "\n";
      return 1;
    }
    return 0;
  }
  // A graph-IR model: its parameters as initializers.
  ParserConfig config(&ctx);
  auto module = parseSourceString<ModuleOp>(tr.inference_module(), config);
  if (!module) {
    llvm::errs() << "error: " << inputPath
                 << " holds no readable inference model\n";
    return 1;
  }
  for (auto func : module->getOps<func::FuncOp>())
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      auto name = func.getArgAttrOfType<StringAttr>(i, "graph.param");
      auto it = name ? values.find(name.str()) : values.end();
      if (it == values.end())
        continue;
      auto type = cast<RankedTensorType>(func.getArgument(i).getType());
      bool splat = false;
      ArrayRef<char> raw(it->second.rawData.data(), it->second.rawData.size());
      if (raw.empty()) {
        func.setArgAttr(
            i, "graph.initial_value",
            DenseElementsAttr::get(
                type, Builder(&ctx).getZeroAttr(type.getElementType())));
        continue;
      }
      if (!DenseElementsAttr::isValidRawBuffer(type, raw, splat)) {
        llvm::errs() << "error: parameter '" << name.getValue()
                     << "' has data of the wrong size\n";
        return 1;
      }
      func.setArgAttr(i, "graph.initial_value",
                      DenseElementsAttr::getFromRawBuffer(type, raw));
    }
  loom::onnx_export::ExportOptions options;
  options.funcName = funcName;
  options.paramsAsInitializers = true;
  return failed(loom::onnx_export::exportFile(*module, outputPath, options));
}

static int runExport(MLIRContext &ctx) {
  if (outputPath == "-") {
    llvm::errs() << "error: export needs an output file (-o MODEL.onnx)\n";
    return 1;
  }
  if (StringRef(inputPath).ends_with(".loom"))
    return exportTrained(ctx);
  if (!checkpointPath.empty()) {
    llvm::errs() << "error: --checkpoint goes with a training artifact "
                    "(TRAIN.loom)\n";
    return 1;
  }
  llvm::SourceMgr sources;
  auto module = parseSourceFile<ModuleOp>(inputPath, sources, &ctx);
  if (!module)
    return 1;
  if (failed(verify(*module)))
    return 1;
  loom::onnx_export::ExportOptions options;
  options.funcName = funcName;
  return failed(loom::onnx_export::exportFile(*module, outputPath, options));
}

/// The model in `inputPath`: ONNX (binary or text) or graph IR.
/// --dim NAME=SIZE into `import.dimSizes`; false after an error.
static bool parseDimSizes(loom::onnx_import::ImportOptions &import) {
  for (const std::string &d : dimSizes) {
    size_t eq = d.find('=');
    int64_t size = 0;
    if (eq == std::string::npos ||
        StringRef(d).substr(eq + 1).getAsInteger(10, size) || size <= 0) {
      llvm::errs() << "error: --dim takes NAME=SIZE, not '" << d << "'\n";
      return false;
    }
    import.dimSizes[d.substr(0, eq)] = size;
  }
  return true;
}

static OwningOpRef<ModuleOp> loadModel(MLIRContext &ctx) {
  StringRef path(inputPath);
  if (path.ends_with(".onnx") || path.ends_with(".onnxtext")) {
    loom::onnx_import::ImportOptions options;
    if (!importOptions(options) || !parseDimSizes(options))
      return nullptr;
    options.batch = batchSize;
    auto module = loom::onnx_import::importFile(ctx, inputPath, options);
    if (failed(module))
      return nullptr;
    return std::move(*module);
  }
  if (!binds.empty()) {
    llvm::errs() << "error: --bind applies to ONNX models, not graph IR\n";
    return nullptr;
  }
  if (batchSize || !dimSizes.empty()) {
    llvm::errs() << "error: --batch and --dim fix an ONNX model's dynamic "
                    "dims; build graph IR with static shapes\n";
    return nullptr;
  }
  llvm::SourceMgr sources;
  auto module = parseSourceFile<ModuleOp>(inputPath, sources, &ctx);
  if (!module || failed(verify(*module)))
    return nullptr;
  return module;
}

/// Compiles `module` with `options` plus the code generation flags, and
/// writes the artifact to -o; the exit code.
static int compileAndWrite(ModuleOp module, loom::CompileOptions options,
                           loom::CompileReport *out = nullptr) {
  if (failed(loom::tools::setCudaOptions(options, target, emitKind, cudaArchs)))
    return 1;
  options.cpu.cpu = cpuName;
  options.cpu.fusionReport = fusionReport;
  options.cpu.printFusion = printFusion;
  options.cpu.timing = timing;
  options.cuda.fusionReport = fusionReport;
  options.cuda.printFusion = printFusion;
  options.cuda.timing = timing;
  options.cpu.optLevel = optLevel;
  std::string bytes, error;
  loom::CompileReport report;
  if (failed(loom::compileToArtifact(module, options, bytes, &report)))
    return 1;
  if (printMemoryPlan)
    llvm::outs() << report.memoryPlan;
  if (out)
    *out = report;
  if (emitKind == "cuda")
    bytes = report.cudaSource;
  if (!loom::files::writeFileAtomically(outputPath, bytes, error)) {
    llvm::errs() << "error: " << error << "\n";
    return 1;
  }
  return 0;
}

static int runCompile(MLIRContext &ctx) {
  if (outputPath == "-") {
    llvm::errs() << "error: compile needs an output file (-o MODEL.loom)\n";
    return 1;
  }
  OwningOpRef<ModuleOp> module = loadModel(ctx);
  if (!module)
    return 1;
  loom::CompileOptions options;
  options.target = target;
  options.funcName = funcName;
  return compileAndWrite(*module, options);
}

/// `--gradients`: the parameters of the gradient function become constants
/// of their initial values (the artifact's weights), so that it runs on the
/// batch alone.
static void bakeParams(func::FuncOp func) {
  OpBuilder b(func.getBody());
  llvm::BitVector erase(func.getNumArguments());
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (auto init =
            func.getArgAttrOfType<ElementsAttr>(i, "graph.initial_value")) {
      Value c = b.create<loom::graph::ConstantOp>(func.getLoc(), init);
      func.getArgument(i).replaceAllUsesWith(c);
      erase.set(i);
    }
  (void)func.eraseArguments(erase);
}

/// A temporary file for a pass's JSON report (merged into --report).
static bool temporaryReport(StringRef prefix, SmallString<128> &path) {
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile(prefix, "json", path)) {
    llvm::errs() << "error: a temporary file: " << ec.message() << "\n";
    return false;
  }
  return true;
}

/// A pass's JSON report, read from `path` (which is removed).
static std::optional<llvm::json::Object> takeReport(StringRef path,
                                                    StringRef pass) {
  auto text = llvm::MemoryBuffer::getFile(path);
  llvm::sys::fs::remove(path);
  if (!text) {
    llvm::errs() << "error: the " << pass << " report is missing\n";
    return std::nullopt;
  }
  llvm::Expected<llvm::json::Value> parsed =
      llvm::json::parse((*text)->getBuffer());
  if (!parsed || !parsed->getAsObject()) {
    llvm::consumeError(parsed.takeError());
    llvm::errs() << "error: the " << pass << " report is not JSON\n";
    return std::nullopt;
  }
  return std::move(*parsed->getAsObject());
}

/// A section of --report: its key and the temporary file its pass wrote
/// (empty: the pass did not run).
struct ReportSection {
  StringRef key, pass;
  StringRef path;
};

/// After a training compile with --loom-recompute: the codegen memory
/// plan's peak against the pass's and the budget, and --report's JSON
/// (`{"recompute": {...}, "memory_plan": {...}}` and each of `sections`
/// that ran: "mixed_precision", "sharding").
static int finishRecompute(int rc, StringRef recomputeJson,
                           ArrayRef<ReportSection> sections, int64_t budget,
                           const loom::CompileReport &compiled) {
  std::optional<llvm::json::Object> recompute =
      takeReport(recomputeJson, "recompute");
  std::vector<std::pair<StringRef, std::optional<llvm::json::Object>>> extra;
  for (const ReportSection &section : sections)
    if (!section.path.empty())
      extra.push_back({section.key, takeReport(section.path, section.pass)});
  if (rc != 0)
    return rc;
  if (!recompute || llvm::any_of(extra, [](auto &e) { return !e.second; }))
    return 1;
  int64_t passPeak = recompute->getInteger("planned_peak_after").value_or(-1);
  (*recompute)["codegen_planned_peak"] = compiled.arenaBytes;
  if (!reportPath.empty()) {
    llvm::errs() << "memory plan of the compiled step: " << compiled.arenaBytes
                 << " bytes (loom-recompute planned " << passPeak << ")\n";
    llvm::json::Object root{
        {"recompute", std::move(*recompute)},
        {"memory_plan",
         llvm::json::Object{{"arena_bytes", compiled.arenaBytes}}},
    };
    for (auto &[key, object] : extra)
      root[key] = std::move(*object);
    std::string out, error;
    llvm::raw_string_ostream os(out);
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
    if (!loom::files::writeFileAtomically(reportPath, out, error)) {
      llvm::errs() << "error: " << error << "\n";
      return 1;
    }
  }
  if (budget > 0 && compiled.arenaBytes > budget) {
    llvm::errs() << "error: the compiled step's memory plan needs "
                 << compiled.arenaBytes << " bytes, over the budget of "
                 << budget << " (loom-recompute planned " << passPeak
                 << "); a smaller budget leaves room for the difference\n";
    return 1;
  }
  return 0;
}

/// --schedule's names: the learning rate's (constant, cosine) and the
/// pipeline's (gpipe, 1f1b, interleaved, zb-h1), each at most once.
struct Schedules {
  std::string lr = "constant", pipeline;
};

static bool parseSchedules(Schedules &out) {
  for (const std::string &name : scheduleKinds) {
    bool isLr = name == "constant" || name == "cosine";
    const auto &pipes = loom::pipeline::scheduleNames();
    bool isPipe = std::find(pipes.begin(), pipes.end(), name) != pipes.end();
    std::string &slot = isLr ? out.lr : out.pipeline;
    if ((!isLr && !isPipe) || (isPipe && !slot.empty()) ||
        (isLr && slot != "constant" && slot != name)) {
      llvm::errs() << "error: --schedule takes one of constant, cosine (the "
                      "learning rate) and one of gpipe, 1f1b, interleaved, "
                      "zb-h1 (the pipeline), not '"
                   << llvm::join(scheduleKinds, ",") << "'\n";
      return false;
    }
    slot = name;
  }
  return true;
}

/// The optimizer pass's options from the command line.
static loom::OptimizerPassOptions optimizerOptions(const Schedules &schedules,
                                                   double beta1, double beta2) {
  loom::OptimizerPassOptions opt;
  opt.optimizer = optimizerKind;
  opt.lr = learningRate;
  opt.momentum = momentum;
  opt.nesterov = nesterov;
  opt.beta1 = beta1;
  opt.beta2 = beta2;
  opt.eps = adamEps;
  opt.weightDecay = weightDecay;
  opt.clipNorm = clipNorm;
  opt.schedule = schedules.lr;
  opt.warmup = warmupSteps;
  opt.totalSteps = totalSteps;
  opt.accumulate = accumulate;
  opt.labels = labelsName;
  opt.lossScaleInit = lossScaleInit;
  opt.lossScaleInterval = lossScaleInterval;
  opt.description =
      lossKind + " loss" + (logitsName.empty() ? "" : " on " + logitsName);
  return opt;
}

/// `loomc train --pipeline-stages S`: after the loss (in `pm`), the
/// pipeline's stages, parts and per-rank optimizer steps
/// (compiler/Pipeline.h), in one artifact.
static int trainPipeline(ModuleOp module, PassManager &pm,
                         loom::CompileOptions options,
                         const Schedules &schedules, double beta1,
                         double beta2) {
  auto reject = [](StringRef what, StringRef why = "") {
    llvm::errs() << "error: " << what
                 << " with --pipeline-stages is not supported yet" << why
                 << "\n";
    return 1;
  };
  if (tensorParallel > 1)
    return reject("--tensor-parallel");
  if (zeroStage > 0)
    return reject("--zero");
  if (precision != "f32" && precision != "bf16")
    return reject("--precision " + precision,
                  " (f16 needs loss scaling; bf16 works)");
  if (gradientsOnly)
    return reject("--gradients");
  if (target != "cpu")
    return reject("--target " + target,
                  " (the CUDA target has no collectives yet)");
  if (!recomputeStrategy.empty())
    return reject("--recompute");
  if (accumulate > 1) {
    llvm::errs() << "error: --accumulate with --pipeline-stages: the "
                    "pipeline accumulates over its micro-batches "
                    "(--micro-batches)\n";
    return 1;
  }
  loom::PipelineOptions p;
  p.ranks = pipelineStages;
  p.microBatches = microBatches;
  p.schedule = schedules.pipeline.empty() ? "1f1b" : schedules.pipeline;
  p.virtualStages = virtualStages > 0             ? virtualStages
                    : p.schedule == "interleaved" ? 2
                                                  : 1;
  p.dataRanks = dataParallel;
  p.boundaries = stageBoundaries;
  p.freeze = freeze;
  if (!memoryBudget.empty()) {
    p.memoryBudget = parseSize(memoryBudget);
    if (p.memoryBudget <= 0) {
      llvm::errs() << "error: --memory-budget takes a size, not '"
                   << memoryBudget << "'\n";
      return 1;
    }
  }
  p.loss = lossKind;
  p.ignoreIndex = ignoreIndex;
  p.labels = labelsName;
  p.totalSteps = totalSteps;
  p.summary = printSummary;
  p.report = reportPath;
  loom::OptimizerPassOptions opt = optimizerOptions(schedules, beta1, beta2);
  p.description = opt.description;
  opt.labels = "";
  if (pipelineStages > 1)
    opt.normAxis = "pipe";
  p.addUpdatePasses = [&](PassManager &upm, int64_t rank) {
    // By name: a rank whose stages train nothing has a gradient function
    // without gradients, and still joins the norm's all-reduce.
    std::string name = "pipeline_update_" + std::to_string(rank);
    if (dataParallel > 1) {
      loom::DataParallelPassOptions dp;
      dp.funcName = name;
      dp.ranks = dataParallel;
      upm.addPass(loom::createDataParallelPass(dp));
    }
    loom::OptimizerPassOptions rankOpt = opt;
    rankOpt.funcName = name;
    upm.addPass(loom::createOptimizerPass(rankOpt));
  };
  if (precision == "bf16") {
    // On the loss function, before it is cut: the stages send bf16
    // activations, the parameters stay f32 masters.
    loom::MixedPrecisionPassOptions mixed;
    mixed.dtype = precision;
    mixed.policy = precisionPolicy;
    pm.addPass(loom::createMixedPrecisionPass(mixed));
  }
  if (timing)
    pm.enableTiming();
  if (failed(pm.run(module)))
    return 1;
  options.target = target;
  options.cpu.cpu = cpuName;
  options.cpu.optLevel = optLevel;
  std::string bytes, error;
  if (failed(loom::compilePipeline(module, p, options, bytes)))
    return 1;
  if (!loom::files::writeFileAtomically(outputPath, bytes, error)) {
    llvm::errs() << "error: " << error << "\n";
    return 1;
  }
  return 0;
}

static int runTrain(MLIRContext &ctx) {
  if (outputPath == "-") {
    llvm::errs() << "error: train needs an output file (-o TRAIN.loom)\n";
    return 1;
  }
  Schedules schedules;
  if (!parseSchedules(schedules))
    return 1;
  if (!schedules.pipeline.empty() && pipelineStages < 1) {
    llvm::errs() << "error: --schedule " << schedules.pipeline
                 << " is a pipeline schedule: it needs --pipeline-stages S\n";
    return 1;
  }
  StringRef path(inputPath);
  OwningOpRef<ModuleOp> module;
  loom::CompileOptions options;
  if (path.ends_with(".onnx") || path.ends_with(".onnxtext")) {
    loom::onnx_import::ImportOptions import;
    if (!importOptions(import))
      return 1;
    import.initializersAsParams = true;
    import.batch = batchSize;
    int64_t pieces =
        dataParallel * std::max<int64_t>(1, pipelineStages ? microBatches : 1);
    if (batchSize && pieces > 1) {
      if (batchSize % pieces) {
        llvm::errs() << "error: --batch " << batchSize
                     << " (the global batch) does not split over "
                     << "--data-parallel " << dataParallel << " ranks"
                     << (pipelineStages ? " and --micro-batches " +
                                              std::to_string(microBatches)
                                        : std::string())
                     << "\n";
        return 1;
      }
      import.batch = batchSize / pieces;
    }
    if (!parseDimSizes(import))
      return 1;
    auto imported = loom::onnx_import::importFile(ctx, inputPath, import);
    if (failed(imported))
      return 1;
    module = std::move(*imported);
    auto bytes = llvm::MemoryBuffer::getFile(inputPath);
    if (bytes && path.ends_with(".onnx"))
      options.sourceOnnx = (*bytes)->getBuffer().str();
  } else {
    if (batchSize || !dimSizes.empty()) {
      llvm::errs() << "error: --batch and --dim fix an ONNX model's dynamic "
                      "dims; build graph IR with static shapes\n";
      return 1;
    }
    module = loadModel(ctx);
    if (!module)
      return 1;
  }
  // The inference function, for `loomc export --checkpoint` of a graph-IR
  // model.
  {
    std::string ir;
    llvm::raw_string_ostream os(ir);
    if (failed(writeBytecodeToFile(*module, os)))
      return 1;
    options.inferenceModule = ir;
  }
  double beta1 = 0.9, beta2 = 0.999;
  {
    auto [b1, b2] = StringRef(betas).split(',');
    if (b1.getAsDouble(beta1) || b2.getAsDouble(beta2)) {
      llvm::errs() << "error: --betas takes B1,B2, not '" << betas << "'\n";
      return 1;
    }
  }
  // The passes with their options as structs (no pipeline-string quoting).
  PassManager pm(&ctx);
  loom::LossPassOptions loss;
  loss.loss = lossKind;
  loss.logits = logitsName;
  loss.labels = labelsName;
  loss.ignoreIndex = ignoreIndex;
  loss.labelSmoothing = labelSmoothing;
  // A pipeline's micro-batch may have every label ignored.
  loss.emptyMeanZero = pipelineStages > 0;
  pm.addPass(loom::createLossPass(loss));
  if (pipelineStages > 0)
    return trainPipeline(*module, pm, options, schedules, beta1, beta2);
  // Tensor parallel: the forward split before autodiff derives the
  // backward from it; its report goes into --report.
  SmallString<128> tensorJson;
  if (tensorParallel < 1) {
    llvm::errs() << "error: --tensor-parallel takes M >= 1\n";
    return 1;
  }
  if (tensorParallel > 1) {
    if (gradientsOnly) {
      llvm::errs() << "error: --tensor-parallel compiles a training step, "
                      "not --gradients\n";
      return 1;
    }
    if (zeroStage > 0) {
      llvm::errs() << "error: --zero with --tensor-parallel is not "
                      "supported yet: ZeRO shards whole parameters over the "
                      "data axis, tensor parallelism splits them first\n";
      return 1;
    }
    loom::TensorParallelPassOptions tp;
    tp.ranks = tensorParallel;
    tp.dataRanks = dataParallel;
    tp.freeze = freeze;
    if (!reportPath.empty()) {
      if (!temporaryReport("loomc-tensor-parallel", tensorJson))
        return 1;
      tp.report = tensorJson.str().str();
      tp.summary = true;
    }
    pm.addPass(loom::createTensorParallelPass(tp));
  }
  // The mixed precision pass writes its JSON here; merged into --report.
  SmallString<128> mixedJson;
  if (precision != "f32") {
    if (precision != "bf16" && precision != "f16") {
      llvm::errs() << "error: --precision takes f32, bf16 or f16, not '"
                   << precision << "'\n";
      return 1;
    }
    loom::MixedPrecisionPassOptions mixed;
    mixed.dtype = precision;
    mixed.policy = precisionPolicy;
    if (!reportPath.empty()) {
      if (!temporaryReport("loomc-mixed-precision", mixedJson))
        return 1;
      mixed.report = mixedJson.str().str();
      mixed.summary = true;
    }
    pm.addPass(loom::createMixedPrecisionPass(mixed));
  }
  loom::AutodiffPassOptions autodiff;
  autodiff.freeze = freeze;
  // f16's narrow range needs loss scaling (bf16 has f32's).
  autodiff.lossScale = precision == "f16" && !gradientsOnly;
  pm.addPass(loom::createAutodiffPass(autodiff));
  // Data parallel: the gradient function's gradients reduced over the
  // ranks; its report goes into --report.
  SmallString<128> shardingJson;
  if (dataParallel < 1 || zeroStage < 0 || zeroStage > 2 ||
      (zeroStage > 0 && dataParallel < 2)) {
    llvm::errs() << "error: --data-parallel takes N >= 1 and --zero 0, 1 or "
                    "2 with --data-parallel N >= 2\n";
    return 1;
  }
  if (dataParallel > 1) {
    if (gradientsOnly) {
      llvm::errs() << "error: --data-parallel compiles a training step, not "
                      "--gradients\n";
      return 1;
    }
    loom::DataParallelPassOptions dp;
    dp.ranks = dataParallel;
    dp.zero = zeroStage;
    if (!bucketSize.empty()) {
      dp.bucketBytes = parseSize(bucketSize);
      if (dp.bucketBytes <= 0) {
        llvm::errs() << "error: --bucket-size takes a size (4096, 64KiB, "
                        "25MiB), not '"
                     << bucketSize << "'\n";
        return 1;
      }
    }
    if (!reportPath.empty()) {
      if (!temporaryReport("loomc-sharding", shardingJson))
        return 1;
      dp.report = shardingJson.str().str();
      dp.summary = true;
    }
    pm.addPass(loom::createDataParallelPass(dp));
  }
  if (!gradientsOnly) {
    pm.addPass(
        loom::createOptimizerPass(optimizerOptions(schedules, beta1, beta2)));
  }
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  if (precision != "f32") {
    // After CSE, which would merge the backward's casts back.
    loom::SaveNarrowPassOptions narrow;
    narrow.funcName = gradientsOnly ? "forward_grad" : "train_step";
    pm.addPass(loom::createSaveNarrowPass(narrow));
  }
  // Only the training step (or the gradient function) is compiled.
  std::string entry = gradientsOnly ? "forward_grad" : "train_step";
  int64_t budget = 0;
  if (!memoryBudget.empty()) {
    budget = parseSize(memoryBudget);
    if (budget <= 0) {
      llvm::errs() << "error: --memory-budget takes a size (4096, 64KiB, "
                      "512MiB, 2GiB, 1e9), not '"
                   << memoryBudget << "'\n";
      return 1;
    }
  }
  std::string strategy = recomputeStrategy;
  if (strategy.empty())
    strategy = budget > 0 ? "optimal" : "none";
  // The recompute pass writes its JSON here; merged into --report below.
  SmallString<128> recomputeJson;
  bool recompute =
      budget > 0 || !recomputeStrategy.empty() || !reportPath.empty();
  if (recompute) {
    if (!temporaryReport("loomc-recompute", recomputeJson))
      return 1;
    loom::RecomputePassOptions rc;
    rc.funcName = entry;
    rc.budget = budget;
    rc.strategy = strategy;
    rc.report = recomputeJson.str().str();
    rc.summary = !reportPath.empty();
    if (target == "cpu")
      rc.targetPasses = loom::codegen::kCpuGraphPasses;
    pm.addPass(loom::createRecomputePass(rc));
  }
  // Every rank of every group issues the same collectives, in order.
  if (dataParallel > 1 || tensorParallel > 1) {
    loom::VerifyCollectivesPassOptions verify;
    verify.funcName = entry;
    pm.addPass(loom::createVerifyCollectivesPass(verify));
  }
  if (timing)
    pm.enableTiming();
  if (failed(pm.run(*module))) {
    for (StringRef path : {StringRef(recomputeJson), StringRef(mixedJson),
                           StringRef(shardingJson), StringRef(tensorJson)})
      if (!path.empty())
        llvm::sys::fs::remove(path);
    return 1;
  }
  for (auto f : llvm::make_early_inc_range(module->getOps<func::FuncOp>()))
    if (f.getName() != entry)
      f.erase();
  if (gradientsOnly)
    if (auto f = module->lookupSymbol<func::FuncOp>(entry))
      bakeParams(f);
  if (printIR)
    (*module)->print(llvm::outs());
  if (gradientsOnly) {
    options.inferenceModule.clear();
    options.sourceOnnx.clear();
  }
  options.target = target;
  options.funcName = entry;
  loom::CompileReport compiled;
  int rc = compileAndWrite(*module, options, &compiled);
  if (recompute)
    return finishRecompute(rc, recomputeJson,
                           {{"mixed_precision", "mixed precision", mixedJson},
                            {"sharding", "data parallel", shardingJson},
                            {"tensor_parallel", "tensor parallel", tensorJson}},
                           budget, compiled);
  return rc;
}

/// `loomc schedule`: makes a pipeline schedule, verifies it, simulates it
/// with unit costs (F = I = W = 1, a whole backward 2) and prints what it
/// found: the bubble against the analytic one, each rank's peak of
/// micro-batches holding activations, and with --print the timeline.
static int runSchedule() {
  // The pipeline's schedule: the last name that is not the learning
  // rate's (makeSchedule reports an unknown one).
  std::string name = "1f1b";
  for (const std::string &n : scheduleKinds)
    if (n != "constant" && n != "cosine")
      name = n;
  int64_t v = virtualStages > 0 ? virtualStages : name == "interleaved" ? 2 : 1;
  std::string error;
  loom::pipeline::Schedule s = loom::pipeline::makeSchedule(
      name,
      static_cast<int>(pipelineStages.getNumOccurrences() ? pipelineStages : 2),
      static_cast<int>(microBatches), static_cast<int>(v), error);
  if (!error.empty()) {
    llvm::errs() << "error: " << error << "\n";
    return 1;
  }
  loom::pipeline::VerifyOptions options;
  loom::pipeline::VerifyResult result;
  if (!loom::pipeline::verify(s, options, result, error)) {
    llvm::errs() << "error: schedule " << name << ": " << error << "\n";
    return 1;
  }
  loom::pipeline::Timeline t =
      loom::pipeline::simulate(s, loom::pipeline::Costs{});
  llvm::outs() << "schedule " << name << ": " << s.ranks << " stages"
               << (v > 1 ? " x " + std::to_string(v) + " chunks" : "") << ", "
               << s.microBatches
               << " micro-batches: verified (each computation once after "
                  "its inputs, every send received, no cyclic wait)\n";
  llvm::outs() << llvm::formatv(
      "simulated with F = I = W = 1: makespan {0}, bubble {1:P1} "
      "(analytic {2:P1})\n",
      t.makespan, t.bubble,
      loom::pipeline::analyticBubble(name, s.ranks, s.microBatches,
                                     s.virtualStages));
  if (!scheduleCosts.empty()) {
    SmallVector<StringRef> parts;
    StringRef(scheduleCosts).split(parts, ',');
    double v[4] = {0, 0, 0, 0};
    bool ok = parts.size() == 3 || parts.size() == 4;
    for (size_t i = 0; ok && i < parts.size(); ++i)
      ok = !parts[i].trim().getAsDouble(v[i]) && v[i] >= 0;
    if (!ok) {
      llvm::errs() << "error: --costs takes F,I,W[,T] (non-negative numbers), "
                      "not '"
                   << scheduleCosts << "'\n";
      return 1;
    }
    loom::pipeline::Costs costs;
    costs.forward = v[0];
    costs.backwardInput = v[1];
    costs.backwardWeight = v[2];
    costs.transfer = v[3];
    loom::pipeline::Timeline m = loom::pipeline::simulate(s, costs);
    llvm::outs() << llvm::formatv("simulated with F = {0}, I = {1}, W = {2}, "
                                  "transfer {3}: makespan {4}, bubble {5:P1}\n",
                                  v[0], v[1], v[2], v[3], m.makespan, m.bubble);
  }
  llvm::outs() << "peak micro-batches holding activations, per rank:";
  for (int n : result.peakLive)
    llvm::outs() << " " << n;
  llvm::outs() << "\n";
  if (printTimeline)
    llvm::outs() << loom::pipeline::drawTimeline(s, t);
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
    switch (diag.getSeverity()) {
    case DiagnosticSeverity::Error:
      llvm::errs() << "error: ";
      break;
    case DiagnosticSeverity::Warning:
      llvm::errs() << "warning: ";
      break;
    default:
      llvm::errs() << "note: ";
    }
    llvm::errs() << diag.str() << "\n";
    return success();
  });
  if (command == "schedule")
    return runSchedule();
  if (inputPath.empty()) {
    llvm::errs() << "error: loomc " << command << " needs a model\n";
    return 1;
  }
  if (command == "import")
    return runImport(ctx);
  if (command == "export")
    return runExport(ctx);
  if (command == "compile")
    return runCompile(ctx);
  if (command == "train")
    return runTrain(ctx);
  llvm::errs() << "error: unknown command '" << command
               << "' (available: import, export, compile, train, schedule)\n";
  return 1;
}
