//===- loomc.cpp - the Loom compiler driver -------------------------------===//
//
//   loomc import MODEL.onnx|MODEL.onnxtext [-o OUT.mlir] [--print-summary]
//         [--bind NAME=FILE.npy|.pb ...]
//   loomc export MODEL.mlir -o OUT.onnx [--func NAME]
//   loomc compile MODEL.onnx|MODEL.onnxtext|MODEL.mlir -o OUT.loom
//         [--target cpu] [--cpu host|NAME] [--func NAME] [--print-memory-plan]
//         [--fusion-report FILE.json] [--print-fusion]
//
// `import` turns an ONNX model into graph IR text; `export` writes graph
// IR as an ONNX model at opset 17, checked by the ONNX checker before it
// is written; `compile` writes a .loom artifact that the runtime
// (loom-run, the C API) runs. Errors (every unsupported node, malformed
// files, shape errors, ops without a lowering) go to stderr and the exit
// code is 1. `--bind` freezes an ONNX graph input to a value (a shape or
// axes input that a model takes at run time but the compiler needs).
//
//===----------------------------------------------------------------------===//

#include "compiler/Compile.h"
#include "compiler/InitAll.h"
#include "dialects/graph/GraphOps.h"
#include "frontends/onnx/OnnxExporter.h"
#include "frontends/onnx/OnnxImporter.h"
#include "tools/loom-run/TensorFiles.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include <map>

namespace cl = llvm::cl;
using namespace mlir;

static cl::opt<std::string>
    command(cl::Positional, cl::Required,
            cl::desc("<command: import | export | compile>"));
static cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                                      cl::desc("<model>"));
static cl::opt<std::string> outputPath("o", cl::desc("output file"),
                                       cl::value_desc("file"), cl::init("-"));
static cl::opt<std::string> funcName("func",
                                     cl::desc("export: the function to export"),
                                     cl::value_desc("name"), cl::init(""));
static cl::opt<std::string> target("target",
                                   cl::desc("compile: the target (cpu)"),
                                   cl::value_desc("target"), cl::init("cpu"));
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
static cl::opt<bool> printSummary(
    "print-summary",
    cl::desc("print op counts, parameter count and bytes to stderr"));

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
  for (const std::string &b : binds) {
    size_t eq = b.find('=');
    if (eq == std::string::npos || eq == 0) {
      llvm::errs() << "error: --bind takes NAME=FILE, not '" << b << "'\n";
      return false;
    }
    std::string name = b.substr(0, eq), error;
    loom_tensor *t = loom::tools::readTensorFile(b.substr(eq + 1), error);
    if (!t) {
      llvm::errs() << "error: --bind " << name << ": " << error << "\n";
      return false;
    }
    options.bindings[name] = loom::tools::tensorProtoBytes(name, t);
    loom_tensor_release(t);
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

static int runExport(MLIRContext &ctx) {
  if (outputPath == "-") {
    llvm::errs() << "error: export needs an output file (-o MODEL.onnx)\n";
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
static OwningOpRef<ModuleOp> loadModel(MLIRContext &ctx) {
  StringRef path(inputPath);
  if (path.ends_with(".onnx") || path.ends_with(".onnxtext")) {
    loom::onnx_import::ImportOptions options;
    if (!importOptions(options))
      return nullptr;
    auto module = loom::onnx_import::importFile(ctx, inputPath, options);
    if (failed(module))
      return nullptr;
    return std::move(*module);
  }
  if (!binds.empty()) {
    llvm::errs() << "error: --bind applies to ONNX models, not graph IR\n";
    return nullptr;
  }
  llvm::SourceMgr sources;
  auto module = parseSourceFile<ModuleOp>(inputPath, sources, &ctx);
  if (!module || failed(verify(*module)))
    return nullptr;
  return module;
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
  options.cpu.cpu = cpuName;
  options.cpu.fusionReport = fusionReport;
  options.cpu.printFusion = printFusion;
  std::string bytes, error;
  loom::CompileReport report;
  if (failed(loom::compileToArtifact(*module, options, bytes, &report)))
    return 1;
  if (printMemoryPlan)
    llvm::outs() << report.memoryPlan;
  if (!loom::tools::writeFileAtomically(outputPath, bytes, error)) {
    llvm::errs() << "error: " << error << "\n";
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "Loom compiler driver\n");
  DialectRegistry registry;
  loom::registerAllDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
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
  if (command == "import")
    return runImport(ctx);
  if (command == "export")
    return runExport(ctx);
  if (command == "compile")
    return runCompile(ctx);
  llvm::errs() << "error: unknown command '" << command
               << "' (available: import, export, compile)\n";
  return 1;
}
