//===- Driver.cpp - loomc's commands as a library -------------------------===//

#include "compiler/Driver.h"

#include "compiler/ExportTrained.h"
#include "compiler/PipelineParallel.h"
#include "compiler/Training.h"
#include "frontends/onnx/OnnxExporter.h"
#include "frontends/onnx/OnnxImporter.h"
#include "frontends/onnx/OnnxQuantizer.h"
#include "loom/common/FileIO.h"
#include "loom/common/Nvrtc.h"
#include "loom/common/TensorFiles.h"

#include <onnx/onnx_pb.h>

#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using llvm::StringRef;

namespace loom::driver {
namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// A failure the diagnostics have reported.
llvm::Error reported() { return error(""); }

/// --fused-attention into the fewest scores an attention is fused with
/// (-1: none).
llvm::Error attentionThreshold(StringRef mode, int64_t &minScores) {
  if (mode == "auto")
    minScores = codegen::kFuseAttentionAuto;
  else if (mode == "on")
    minScores = 0;
  else if (mode == "off")
    minScores = -1;
  else
    return error("--fused-attention takes auto, on or off, not '" + mode + "'");
  return llvm::Error::success();
}

/// Checks --target, --emit, --arch and --allow-tf32 and sets the CUDA part
/// of `options`: the archs, NVRTC as the compiler of their binaries, TF32.
llvm::Error setCudaOptions(const DriverOptions &o, CompileOptions &options) {
  StringRef target = o.codegen.target, emit = o.emit;
  if (target != "cpu" && target != "cuda")
    return error("--target takes cpu or cuda, not '" + target + "'");
  if (emit != "artifact" && emit != "cuda" && emit != "mlir")
    return error("--emit takes artifact, cuda or mlir, not '" + emit + "'");
  if (emit == "cuda" && target != "cuda")
    return error("--emit cuda needs --target cuda");
  if (!o.archs.empty() && target != "cuda")
    return error("--arch needs --target cuda");
  if (o.allowTf32 && target != "cuda")
    return error("--allow-tf32 needs --target cuda (the CPU computes f32 "
                 "matmuls in f32)");
  options.cudaAllowTf32 = o.allowTf32;
  llvm::SmallVector<StringRef> list;
  StringRef(o.archs).split(list, ',', -1, false);
  for (StringRef arch : list) {
    unsigned number = 0;
    if (!arch.starts_with("sm_") || arch.drop_front(3).getAsInteger(10, number))
      return error("--arch: '" + arch + "' is not an arch like sm_80 or sm_90");
    if (emit != "cuda")
      options.cudaArchs.push_back(arch.str());
  }
  // NVRTC is opened here, by the driver, so that the compiler library
  // itself never loads CUDA libraries.
  options.compileCuda = [](const std::string &source, const std::string &arch,
                           std::string &cubin, int &version, std::string &why) {
    // No cache: loomc compiles once, for the artifact.
    cuda::NvrtcCompiler compiler("");
    cuda::CompileResult r = compiler.compile({source, arch, {}});
    std::string missing;
    const cuda::Nvrtc *api = cuda::nvrtc(missing);
    version = api ? api->version : 0;
    cubin = std::move(r.cubin);
    why = std::move(r.error);
    return r.ok;
  };
  return llvm::Error::success();
}

/// The code generation options of a compile or train.
llvm::Error codegenOptions(const DriverOptions &o, CompileOptions &options) {
  options.target = o.codegen.target;
  options.cpu = o.codegen.cpu;
  options.cuda.fusionReport = o.codegen.cpu.fusionReport;
  options.cuda.printFusion = o.codegen.cpu.printFusion;
  options.cuda.timing = o.codegen.cpu.timing;
  // The artifact goes straight to its file (the weights are not copied
  // into memory on the way); --emit cuda writes the source instead.
  if (o.emit != "cuda")
    options.outputPath = o.output;
  if (llvm::Error e = attentionThreshold(o.fusedAttention,
                                         options.cuda.fuseAttentionMinScores))
    return e;
  return setCudaOptions(o, options);
}

/// The train options that need parsing, into `o.train`, which is verified.
llvm::Error parseTrainOptions(DriverOptions &o) {
  if (!o.deprecatedSchedule.empty()) {
    llvm::Expected<std::string> warning = takeDeprecatedSchedule(
        o.deprecatedSchedule, o.trainText, o.train.pipeline);
    if (!warning)
      return warning.takeError();
    llvm::errs() << *warning << "\n";
  }
  o.train.target = o.codegen.target;
  if (llvm::Error e =
          attentionThreshold(o.fusedAttention, o.train.fuseAttentionMinScores))
    return e;
  o.train.report = !o.report.empty();
  o.train.printSummary = o.printSummary;
  return parseTrainingOptions(o.trainText, o.train);
}

/// The import options with --bind's values read.
llvm::Error importOptions(const DriverOptions &o,
                          onnx_import::ImportOptions &options) {
  int64_t tensorBytes = parseByteSize(o.maxTensorBytes);
  if (tensorBytes <= 0)
    return error("--max-tensor-bytes takes a size above 0 (4096, 64KiB, "
                 "2GiB), not '" +
                 o.maxTensorBytes + "'");
  if (o.maxNodes <= 0)
    return error("--max-nodes takes a number above 0, not " +
                 llvm::Twine(o.maxNodes));
  options.maxTensorBytes = static_cast<uint64_t>(tensorBytes);
  options.maxNodes = o.maxNodes;
  for (const std::string &b : o.binds) {
    size_t eq = b.find('=');
    if (eq == std::string::npos || eq == 0)
      return error("--bind takes NAME=FILE, not '" + b + "'");
    std::string name = b.substr(0, eq), why;
    files::HostTensor t;
    if (!files::readTensorFile(b.substr(eq + 1), t, why))
      return error("--bind " + name + ": " + why);
    options.bindings[name] = files::tensorProtoBytes(name, files::viewOf(t));
  }
  return llvm::Error::success();
}

/// importOptions() with --dim and --batch.
llvm::Error shapeOptions(const DriverOptions &o,
                         onnx_import::ImportOptions &options) {
  for (const std::string &d : o.dims) {
    size_t eq = d.find('=');
    int64_t size = 0;
    if (eq == std::string::npos ||
        StringRef(d).substr(eq + 1).getAsInteger(10, size) || size <= 0)
      return error("--dim takes NAME=SIZE, not '" + d + "'");
    options.dimSizes[d.substr(0, eq)] = size;
  }
  options.batch = o.batch;
  return importOptions(o, options);
}

bool isOnnx(StringRef path) {
  return path.ends_with(".onnx") || path.ends_with(".onnxtext");
}

/// Graph IR from a file, verified.
llvm::Expected<OwningOpRef<ModuleOp>> parseGraphIR(MLIRContext &ctx,
                                                   StringRef path) {
  llvm::SourceMgr sources;
  auto module = parseSourceFile<ModuleOp>(path, sources, &ctx);
  if (!module || failed(verify(*module)))
    return reported();
  return std::move(module);
}

/// The model in `o.input`: ONNX (binary or text) or graph IR.
llvm::Expected<OwningOpRef<ModuleOp>>
loadModel(const DriverOptions &o, MLIRContext &ctx,
          onnx_import::ImportOptions options = {}) {
  if (isOnnx(o.input)) {
    if (llvm::Error e = shapeOptions(o, options))
      return std::move(e);
    auto module = onnx_import::importFile(ctx, o.input, options);
    if (failed(module))
      return reported();
    return std::move(*module);
  }
  if (!o.binds.empty())
    return error("--bind applies to ONNX models, not graph IR");
  if (o.batch || !o.dims.empty())
    return error("--batch and --dim fix an ONNX model's dynamic dims; build "
                 "graph IR with static shapes");
  return parseGraphIR(ctx, o.input);
}

llvm::Error writeOutput(const DriverOptions &o, StringRef bytes) {
  std::string why;
  if (!files::writeFileAtomically(o.output, bytes.str(), why))
    return error(why);
  return llvm::Error::success();
}

llvm::Error runImport(DriverOptions &o, MLIRContext &ctx) {
  onnx_import::ImportOptions options;
  if (llvm::Error e = importOptions(o, options))
    return e;
  auto module = onnx_import::importFile(ctx, o.input, options);
  if (failed(module))
    return reported();
  std::string text;
  llvm::raw_string_ostream os(text);
  (*module)->print(os);
  os << "\n";
  if (o.output == "-")
    llvm::outs() << text;
  else if (llvm::Error e = writeOutput(o, text))
    return e;
  if (o.printSummary)
    summarizeModule(**module, llvm::errs());
  return llvm::Error::success();
}

llvm::Error runExport(DriverOptions &o, MLIRContext &ctx) {
  if (o.output == "-")
    return error("export needs an output file (-o MODEL.onnx)");
  if (StringRef(o.input).ends_with(".loom")) {
    if (failed(exportTrainedModel(ctx, o.input, o.checkpoint,
                                  o.codegen.funcName, o.output)))
      return reported();
    return llvm::Error::success();
  }
  if (!o.checkpoint.empty())
    return error("--checkpoint goes with a training artifact (TRAIN.loom)");
  auto module = parseGraphIR(ctx, o.input);
  if (!module)
    return module.takeError();
  onnx_export::ExportOptions options;
  options.funcName = o.codegen.funcName;
  if (failed(onnx_export::exportFile(**module, o.output, options)))
    return reported();
  return llvm::Error::success();
}

/// --emit cuda's source to -o (the compiler writes an artifact itself);
/// --print-memory-plan.
llvm::Error writeCompiled(const DriverOptions &o, const CompileReport &report) {
  if (o.printMemoryPlan)
    llvm::outs() << report.memoryPlan;
  if (o.emit == "cuda")
    return writeOutput(o, report.cudaSource);
  return llvm::Error::success();
}

llvm::Error runCompile(DriverOptions &o, MLIRContext &ctx) {
  if (o.output == "-")
    return error("compile needs an output file (-o MODEL.loom)");
  if (o.emit == "mlir")
    return error("--emit mlir goes with loomc train");
  auto module = loadModel(o, ctx);
  if (!module)
    return module.takeError();
  CompileOptions options;
  options.funcName = o.codegen.funcName;
  if (llvm::Error e = codegenOptions(o, options))
    return e;
  std::string bytes;
  CompileReport report;
  if (failed(compileToArtifact(**module, options, bytes, &report)))
    return reported();
  return writeCompiled(o, report);
}

llvm::Error runTrain(DriverOptions &o, MLIRContext &ctx) {
  if (o.output == "-")
    return error("train needs an output file (-o TRAIN.loom)");
  if (llvm::Error e = parseTrainOptions(o))
    return e;
  onnx_import::ImportOptions import;
  import.initializersAsParams = true;
  // --batch is the global batch: each rank and micro-batch gets a piece.
  DriverOptions local = o;
  if (isOnnx(o.input) && o.batch) {
    llvm::Expected<int64_t> piece = o.train.microBatchSize(o.batch);
    if (!piece)
      return piece.takeError();
    local.batch = *piece;
  }
  auto module = loadModel(local, ctx, import);
  if (!module)
    return module.takeError();
  CompileOptions options;
  options.initialValues = !o.noInitialValues;
  report::Sink sink;
  if (failed(keepInferenceModel(**module, o.input, options)) ||
      failed(
          runTrainingPipeline(**module, o.train, sink, o.codegen.cpu.timing)))
    return reported();
  if (o.printIR && !o.train.pipeline.enabled())
    (*module)->print(llvm::outs());
  if (o.emit == "mlir") {
    std::string text;
    llvm::raw_string_ostream os(text);
    (*module)->print(os);
    os << "\n";
    return writeOutput(o, text);
  }
  if (llvm::Error e = codegenOptions(o, options))
    return e;
  std::string bytes;
  CompileReport compiled;
  if (failed(
          compileTraining(**module, o.train, options, sink, bytes, &compiled)))
    return reported();
  if (llvm::Error e = writeCompiled(o, compiled))
    return e;
  llvm::Error budget = finishTrainingReport(o.train, sink, compiled);
  std::string why;
  if (!o.report.empty() &&
      !files::writeFileAtomically(o.report, sink.toJson(), why)) {
    llvm::consumeError(std::move(budget));
    return error(why);
  }
  return budget;
}

/// `loomc quantize`: the ONNX model's matrix products rewritten as int8
/// ones (frontends/onnx/OnnxQuantizer.h), written as ONNX.
llvm::Error runQuantize(DriverOptions &o, MLIRContext &ctx) {
  if (!isOnnx(o.input))
    return error("loomc quantize takes an ONNX model, not '" + o.input + "'");
  if (o.output == "-")
    return error("loomc quantize needs -o <model.onnx>");
  onnx::ModelProto model;
  if (failed(onnx_import::readModelFile(ctx, o.input, model)))
    return reported();
  onnx_quantize::QuantizeOptions q;
  q.mode = o.quantizeMode;
  q.perChannel = o.perChannel;
  q.exclude = o.exclude;
  onnx_quantize::QuantizeReport report;
  std::string problem = onnx_quantize::quantizeModel(model, q, report);
  if (problem.empty())
    problem = onnx_export::writeModel(model, o.output);
  if (!problem.empty())
    return error("loomc quantize " + o.input + ": " + problem);
  std::string why;
  if (!o.report.empty() &&
      !files::writeFileAtomically(o.report, report.json, why))
    return error(why);
  llvm::errs() << "quantized " << report.quantized << " MatMul/Gemm node"
               << (report.quantized == 1 ? "" : "s") << " to int8 ("
               << o.quantizeMode << "), left " << report.kept << " in f32"
               << (report.kept && o.report.empty() ? " (--report FILE says why)"
                                                   : "")
               << "\n";
  return llvm::Error::success();
}

/// `loomc schedule`: a pipeline schedule made, verified and simulated.
llvm::Error runSchedule(DriverOptions &o) {
  PipelineParallelOptions &p = o.train.pipeline;
  // The deprecated --schedule: the last name that is not the learning
  // rate's (an unknown one is reported by the schedule's maker).
  bool given = !p.schedule.empty();
  for (const std::string &n : o.deprecatedSchedule)
    if (n != "constant" && n != "cosine" && !given)
      p.schedule = n;
  if (!o.deprecatedSchedule.empty())
    llvm::errs() << "warning: --schedule is deprecated: use "
                 << "--pipeline-schedule " << p.scheduleOrDefault() << "\n";
  auto costs = parseScheduleCosts(o.costs);
  if (!costs)
    return costs.takeError();
  llvm::Expected<std::string> text = simulatePipelineSchedule(
      p.scheduleOrDefault(), o.pipelineStagesGiven ? p.stages : 2,
      p.microBatches, p.virtualStages, *costs ? &**costs : nullptr,
      o.printTimeline);
  if (!text)
    return text.takeError();
  llvm::outs() << *text;
  return llvm::Error::success();
}

} // namespace

llvm::Error run(Command command, DriverOptions &options, MLIRContext &ctx) {
  if (command == Schedule)
    return runSchedule(options);
  if (options.input.empty())
    return error("loomc " + llvm::Twine(commandInfo(command).name) +
                 " needs a model");
  switch (command) {
  case Import:
    return runImport(options, ctx);
  case Export:
    return runExport(options, ctx);
  case Compile:
    return runCompile(options, ctx);
  case Train:
    return runTrain(options, ctx);
  case Quantize:
    return runQuantize(options, ctx);
  case Schedule:
    break;
  }
  return llvm::Error::success();
}

} // namespace loom::driver
