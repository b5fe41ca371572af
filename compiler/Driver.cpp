//===- Driver.cpp - loomc's commands as a library -------------------------===//

#include "compiler/Driver.h"

#include "compiler/Calibration.h"
#include "compiler/CompileCache.h"
#include "compiler/ExportTrained.h"
#include "compiler/PipelineParallel.h"
#include "compiler/Qat.h"
#include "compiler/Training.h"
#include "frontends/onnx/OnnxExporter.h"
#include "frontends/onnx/OnnxImporter.h"
#include "frontends/onnx/OnnxQuantizer.h"
#include "loom/common/FileIO.h"
#include "loom/common/Nvrtc.h"
#include "loom/common/TensorFiles.h"

#include <onnx/onnx_pb.h>

#include <cstdio>
#include <cstdlib>
#include <optional>

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"

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

/// --seq-len, --absent and --input-shape into `options` (the model checks
/// the names: onnx_import).
llvm::Error structureOptions(const DriverOptions &o,
                             onnx_import::ImportOptions &options) {
  // Each sequence element is an input of its own: a bound on N keeps a
  // mistyped length from making a million inputs.
  constexpr int64_t kMaxSequenceLength = 1 << 16;
  for (const std::string &s : o.seqLens) {
    auto [name, value] = StringRef(s).split('=');
    int64_t n = -1;
    if (name.empty() || value.getAsInteger(10, n) || n < 0 ||
        n > kMaxSequenceLength)
      return error("--seq-len takes NAME=N with N from 0 to " +
                   llvm::Twine(kMaxSequenceLength) + ", not '" + s + "'");
    options.sequenceLengths[name.str()] = n;
  }
  for (const std::string &name : o.absent) {
    if (name.empty())
      return error("--absent takes the name of an optional graph input");
    options.absentInputs.insert(name);
  }
  for (const std::string &s : o.inputShapes) {
    auto [name, value] = StringRef(s).split('=');
    if (name.empty() || s.find('=') == std::string::npos)
      return error("--input-shape takes NAME=D0xD1... (NAME= for a "
                   "scalar), not '" +
                   s + "'");
    std::vector<int64_t> dims;
    llvm::SmallVector<StringRef> parts;
    if (!value.empty())
      value.split(parts, 'x');
    for (StringRef part : parts) {
      int64_t d = -1;
      if (part.getAsInteger(10, d) || d < 0)
        return error("--input-shape " + name + ": '" + part +
                     "' is not a size (0 or more); give D0xD1..., as 2x3");
      dims.push_back(d);
    }
    options.inputShapes[name.str()] = std::move(dims);
  }
  return llvm::Error::success();
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
  return structureOptions(o, options);
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
  if (!o.seqLens.empty() || !o.absent.empty() || !o.inputShapes.empty())
    return error("--seq-len, --absent and --input-shape apply to ONNX "
                 "models, not graph IR");
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

/// Whether `o` prints or writes something besides -o (a report, a
/// summary, timings): such a compile always runs, as the cache keeps -o
/// alone.
bool bypassesCache(const DriverOptions &o) {
  const codegen::CpuCodegenOptions &c = o.codegen.cpu;
  return o.printMemoryPlan || o.printSummary || o.printIR || c.timing ||
         c.printFusion || !c.fusionReport.empty() || !c.dumpLlvm.empty() ||
         !o.report.empty();
}

/// The key of `command` on `o`: loomc's code, the command, the model's
/// file name and bytes, every option that can change -o (all but -o and
/// the cache's own) with the bytes of the files they name, and what the
/// defaults take from the machine. None when an input cannot be read (the
/// compile reports it).
std::optional<std::string> compileKey(Command command, const DriverOptions &o,
                                      cache::CompileCache &cache) {
  cache::Key key;
  key.add("loom", cache.toolVersion());
  key.add("command", commandInfo(command).name);
  // Its name too: graph IR's locations (and so kernel names) hold it.
  key.add("input", llvm::sys::path::filename(o.input));
  if (!key.addFile("model", o.input))
    return std::nullopt;
  for (const OptionInfo &info : options()) {
    StringRef name = info.name;
    if (name == "o" || name == "cache-dir" || name == "no-cache")
      continue;
    std::vector<StringRef> values;
    for (const auto &[given, value] : o.given)
      if (given == name)
        values.push_back(value);
    if (!info.repeats && values.size() > 1)
      values.erase(values.begin(), values.end() - 1);
    for (StringRef value : values)
      // --bind NAME=FILE: the file's bytes, below, not its path.
      key.add("--" + name.str(),
              name == "bind" ? value.split('=').first : value);
  }
  // --qat DATA.npz: the ranges come from the data's bytes.
  if (command == Train && !o.train.qat.empty() &&
      !key.addFile("--qat", o.train.qat))
    return std::nullopt;
  for (StringRef bind : o.binds) {
    auto [name, file] = bind.split('=');
    if (!key.addFile("--bind " + name.str(), file))
      return std::nullopt;
  }
  // The defaults that depend on the machine: the host's CPU and features,
  // LLVM's threads (they split the module into parts), NVRTC's version.
  if (o.codegen.cpu.cpu == "host") {
    key.add("host cpu", llvm::sys::getHostCPUName());
    std::vector<std::string> features;
    for (const auto &f : llvm::sys::getHostCPUFeatures())
      features.push_back((f.second ? "+" : "-") + f.first().str());
    llvm::sort(features);
    key.add("host features", llvm::join(features, ","));
  }
  if (!o.codegen.cpu.threads)
    key.add(
        "threads",
        std::to_string(llvm::hardware_concurrency().compute_thread_count()));
  if (o.codegen.target == "cuda" && !o.archs.empty()) {
    std::string missing;
    const cuda::Nvrtc *api = cuda::nvrtc(missing);
    key.add("nvrtc", std::to_string(api ? api->version : 0));
  }
  return key.hex();
}

/// Runs `compile`, which writes -o and appends the external-data files it
/// read to its argument, through the compile cache (compiler/CompileCache.h):
/// on a hit -o is copied from the cache and the compile's warnings are
/// emitted again; after a compile that succeeded, -o is stored.
llvm::Error cachedCompile(
    Command command, const DriverOptions &o, MLIRContext &ctx,
    llvm::function_ref<llvm::Error(std::vector<std::string> *)> compile) {
  std::string dir = o.noCache || cache::disabledByEnvironment() ? ""
                    : o.cacheDir.empty() ? cache::defaultDirectory()
                                         : o.cacheDir;
  if (dir.empty() || bypassesCache(o))
    return compile(nullptr);
  uint64_t maxBytes = cache::kDefaultMaxBytes;
  if (const char *max = std::getenv("LOOM_CACHE_MAX_SIZE")) {
    int64_t bytes = parseByteSize(max);
    if (bytes < 0)
      llvm::errs() << "loomc: warning: LOOM_CACHE_MAX_SIZE='" << max
                   << "' is not a size (20GiB, 500MB); the cache keeps "
                   << maxBytes << " bytes\n";
    else
      maxBytes = static_cast<uint64_t>(bytes);
  }
  cache::CompileCache cache(dir, maxBytes);
  std::optional<std::string> key = compileKey(command, o, cache);
  if (!key)
    return compile(nullptr);
  // External data is relative to the model's folder.
  std::string base = llvm::sys::path::parent_path(o.input).str();
  if (base.empty())
    base = ".";
  std::vector<cache::Note> notes;
  std::string entry;
  if (cache.lookup(*key, base, o.output, notes, entry)) {
    for (const cache::Note &n : notes) {
      Location loc = n.file.empty()
                         ? Location(UnknownLoc::get(&ctx))
                         : FileLineColLoc::get(&ctx, n.file, n.line, n.column);
      if (n.severity == "remark")
        emitRemark(loc) << n.message;
      else
        emitWarning(loc) << n.message;
    }
    llvm::errs() << "loomc: " << o.output << " from the compile cache ("
                 << entry << "; --no-cache compiles)\n";
    return llvm::Error::success();
  }
  std::vector<std::string> read;
  bool errors = false;
  llvm::Error e = [&] {
    // Records the compile's diagnostics and passes them on.
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
      cache::Note n;
      if (diag.getSeverity() == DiagnosticSeverity::Error)
        errors = true;
      n.severity = diag.getSeverity() == DiagnosticSeverity::Remark ? "remark"
                                                                    : "warning";
      if (auto file = dyn_cast<FileLineColLoc>(diag.getLocation())) {
        n.file = file.getFilename().str();
        n.line = file.getLine();
        n.column = file.getColumn();
      }
      n.message = diag.str();
      notes.push_back(std::move(n));
      return failure();
    });
    return compile(&read);
  }();
  if (e || errors)
    return e;
  cache.store(*key, o.output, base, read, notes);
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

/// --external-data.
llvm::Expected<onnx_export::ExternalData> externalData(const DriverOptions &o) {
  using onnx_export::ExternalData;
  if (o.externalData == "auto")
    return ExternalData::Auto;
  if (o.externalData == "always")
    return ExternalData::Always;
  if (o.externalData == "never")
    return ExternalData::Never;
  return error("--external-data takes auto, always or never, not '" +
               o.externalData + "'");
}

llvm::Error runExport(DriverOptions &o, MLIRContext &ctx) {
  if (o.output == "-")
    return error("export needs an output file (-o MODEL.onnx)");
  llvm::Expected<onnx_export::ExternalData> external = externalData(o);
  if (!external)
    return external.takeError();
  if (StringRef(o.input).ends_with(".loom")) {
    if (failed(exportTrainedModel(ctx, o.input, o.checkpoint,
                                  o.codegen.funcName, o.output, *external)))
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
  options.externalData = *external;
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
  CompileOptions options;
  options.funcName = o.codegen.funcName;
  if (llvm::Error e = codegenOptions(o, options))
    return e;
  return cachedCompile(
      Compile, o, ctx, [&](std::vector<std::string> *read) -> llvm::Error {
        onnx_import::ImportOptions import;
        import.externalFilesRead = read;
        auto module = loadModel(o, ctx, import);
        if (!module)
          return module.takeError();
        std::string bytes;
        CompileReport report;
        if (failed(compileToArtifact(**module, options, bytes, &report)))
          return reported();
        return writeCompiled(o, report);
      });
}

llvm::Expected<std::string> findLoomRun();

/// --qat: the products to fake-quantize marked in `module` with their
/// activations' observed ranges, the record for export in the kept source
/// (compiler/Qat.h).
llvm::Error prepareQat(const DriverOptions &o, MLIRContext &ctx,
                       ModuleOp module, CompileOptions &options) {
  if (o.train.qat.empty())
    return llvm::Error::success();
  if (!isOnnx(o.input) || options.sourceOnnx.empty())
    return error("--qat takes an ONNX model, not '" + o.input + "'");
  qat::QatOptions q;
  q.data = o.train.qat;
  q.exclude = o.train.qatExclude;
  q.learnedScales = o.train.qatLearnedScales;
  q.modelDir = llvm::sys::path::parent_path(o.input).str();
  if (q.modelDir.empty())
    q.modelDir = ".";
  llvm::Expected<std::string> loomRun = findLoomRun();
  if (!loomRun)
    return loomRun.takeError();
  q.loomRun = *loomRun;
  if (llvm::Error e = qat::prepare(ctx, o.input, q, module, options.sourceOnnx))
    return error("loomc train " + o.input + ": " +
                 llvm::toString(std::move(e)));
  return llvm::Error::success();
}

/// loomc train's compile after its options are parsed: `local` is `o`
/// with each rank's and micro-batch's piece of the batch.
llvm::Error train(const DriverOptions &o, const DriverOptions &local,
                  onnx_import::ImportOptions import, MLIRContext &ctx) {
  // From ONNX, `loomc export` rewrites the source model: the importer
  // keeps it, its weights' data moved into the IR rather than copied.
  onnx_import::KeptSource source;
  if (StringRef(o.input).ends_with(".onnx"))
    import.keepSource = &source;
  auto module = loadModel(local, ctx, import);
  if (!module)
    return module.takeError();
  CompileOptions options;
  options.initialValues = !o.noInitialValues;
  report::Sink sink;
  if (failed(keepInferenceModel(**module, import.keepSource, options)))
    return reported();
  if (llvm::Error e = prepareQat(o, ctx, **module, options))
    return e;
  if (failed(
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
  return cachedCompile(Train, o, ctx, [&](std::vector<std::string> *read) {
    import.externalFilesRead = read;
    return train(o, local, import, ctx);
  });
}

/// The loom-run that runs calibration: LOOM_RUN, else the one beside this
/// program, or why there is none.
llvm::Expected<std::string> findLoomRun() {
  if (const char *env = std::getenv("LOOM_RUN"); env && *env) {
    if (!llvm::sys::fs::can_execute(env))
      return error("LOOM_RUN=" + llvm::Twine(env) + " is not a program");
    return std::string(env);
  }
  llvm::SmallString<256> path(llvm::sys::path::parent_path(
      llvm::sys::fs::getMainExecutable(nullptr, nullptr)));
  llvm::sys::path::append(path, "loom-run");
  if (!llvm::sys::fs::can_execute(path))
    return error("--mode static runs the model with loom-run, which is not "
                 "beside loomc (no " +
                 path + "; LOOM_RUN may name it)");
  return path.str().str();
}

/// --mode static's checks, before anything is read.
llvm::Error checkStaticOptions(const DriverOptions &o) {
  if (o.quantizeMode != "static") {
    for (const auto &[name, value] : o.given)
      if (name == "calibration" || name == "method" || name == "percentile")
        return error("--" + name + " goes with --mode static");
    return llvm::Error::success();
  }
  if (o.calibration.empty())
    return error("loomc quantize --mode static needs --calibration DATA.npz "
                 "(an array per graph input, the samples along its first "
                 "dim)");
  if (o.calibrationMethod != "minmax" && o.calibrationMethod != "percentile" &&
      o.calibrationMethod != "entropy")
    return error("--method takes minmax, percentile or entropy, not '" +
                 o.calibrationMethod + "'");
  if (!(o.percentile > 50 && o.percentile <= 100)) {
    char given[32];
    std::snprintf(given, sizeof(given), "%g", o.percentile);
    return error("--percentile takes a percent above 50, at most 100, not " +
                 llvm::Twine(given));
  }
  return llvm::Error::success();
}

/// --mode static: the ranges of the activations `model`'s quantized nodes
/// read, from running it on --calibration's data, into `q.ranges`; with
/// --report, the SQNR of each node's output after `quantize` rewrote the
/// model.
llvm::Error calibrateModel(const DriverOptions &o, MLIRContext &ctx,
                           onnx::ModelProto &model,
                           onnx_quantize::QuantizeOptions &q,
                           llvm::function_ref<llvm::Error()> quantize,
                           onnx_quantize::QuantizeReport &report) {
  calibration::CalibrationOptions c;
  c.data = o.calibration;
  c.method = o.calibrationMethod;
  c.percentile = o.percentile;
  c.modelDir = llvm::sys::path::parent_path(o.input).str();
  if (c.modelDir.empty())
    c.modelDir = ".";
  llvm::Expected<std::string> loomRun = findLoomRun();
  if (!loomRun)
    return loomRun.takeError();
  c.loomRun = *loomRun;
  q.method = c.method;
  if (c.method == "percentile") {
    char percent[32];
    std::snprintf(percent, sizeof(percent), " %g", c.percentile);
    q.method += percent;
  }
  std::vector<onnx_quantize::QuantizeTarget> targets;
  if (std::string why = onnx_quantize::findTargets(model, q, targets);
      !why.empty())
    return error(why);
  auto runner = calibration::Runner::create(c, model);
  if (!runner)
    return runner.takeError();
  std::vector<std::string> activations, outputs;
  for (const onnx_quantize::QuantizeTarget &t : targets) {
    if (!llvm::is_contained(activations, t.activation))
      activations.push_back(t.activation);
    outputs.push_back(t.output);
  }
  if (!activations.empty())
    if (llvm::Error e = calibration::calibrate(ctx, **runner, c, model,
                                               activations, q.ranges))
      return e;
  llvm::errs() << "calibrated " << activations.size() << " activation"
               << (activations.size() == 1 ? "" : "s") << " on "
               << (*runner)->samples() << " sample"
               << ((*runner)->samples() == 1 ? "" : "s") << " (" << q.method
               << ", " << (*runner)->runs() << " loom-run call"
               << ((*runner)->runs() == 1 ? "" : "s") << ")\n";
  if (o.report.empty() || outputs.empty())
    return quantize();
  onnx::ModelProto original = model;
  if (llvm::Error e = quantize())
    return e;
  std::map<std::string, double> sqnr;
  if (llvm::Error e = calibration::measureSqnr(ctx, **runner, original, model,
                                               outputs, sqnr))
    return e;
  for (onnx_quantize::QuantizedNode &n : report.nodes)
    if (auto it = sqnr.find(n.output); it != sqnr.end())
      n.outputSqnr = it->second;
  return llvm::Error::success();
}

/// `loomc quantize`: the ONNX model's matrix products rewritten as int8
/// ones (frontends/onnx/OnnxQuantizer.h), written as ONNX.
llvm::Error runQuantize(DriverOptions &o, MLIRContext &ctx) {
  if (!isOnnx(o.input))
    return error("loomc quantize takes an ONNX model, not '" + o.input + "'");
  if (o.output == "-")
    return error("loomc quantize needs -o <model.onnx>");
  llvm::Expected<onnx_export::ExternalData> external = externalData(o);
  if (!external)
    return external.takeError();
  if (llvm::Error e = checkStaticOptions(o))
    return e;
  onnx::ModelProto model;
  if (failed(onnx_import::readModelFile(ctx, o.input, model)))
    return reported();
  onnx_quantize::QuantizeOptions q;
  q.mode = o.quantizeMode;
  q.perChannel = o.perChannel;
  q.exclude = o.exclude;
  onnx_quantize::QuantizeReport report;
  auto quantize = [&]() -> llvm::Error {
    std::string problem = onnx_quantize::quantizeModel(model, q, report);
    if (!problem.empty())
      return error(problem);
    return llvm::Error::success();
  };
  if (llvm::Error e = o.quantizeMode == "static"
                          ? calibrateModel(o, ctx, model, q, quantize, report)
                          : quantize())
    return error("loomc quantize " + o.input + ": " +
                 llvm::toString(std::move(e)));
  if (std::string problem = onnx_export::writeModel(model, o.output, *external);
      !problem.empty())
    return error("loomc quantize " + o.input + ": " + problem);
  std::string why;
  if (!o.report.empty() &&
      !files::writeFileAtomically(o.report, report.json(), why))
    return error(why);
  size_t convs = llvm::count_if(report.nodes,
                                [](const auto &q) { return q.op == "Conv"; });
  size_t products = report.nodes.size() - convs;
  llvm::errs() << "quantized " << products << " MatMul/Gemm node"
               << (products == 1 ? "" : "s");
  if (convs)
    llvm::errs() << " and " << convs << " Conv node" << (convs == 1 ? "" : "s");
  llvm::errs() << " to int8 (" << o.quantizeMode << "), left "
               << report.kept.size() << " in f32"
               << (!report.kept.empty() && o.report.empty()
                       ? " (--report FILE says why)"
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
