//===- loomc.cpp - the Loom compiler driver -------------------------------===//
//
//   loomc import MODEL.onnx|MODEL.onnxtext [-o OUT.mlir] [--print-summary]
//
// `import` turns an ONNX model into graph IR text. Errors (every
// unsupported node, malformed files, shape errors) go to stderr and the
// exit code is 1. Later commands (compile, train, export) join here.
//
//===----------------------------------------------------------------------===//

#include "compiler/InitAll.h"
#include "dialects/graph/GraphOps.h"
#include "frontends/onnx/OnnxImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include <map>

namespace cl = llvm::cl;
using namespace mlir;

static cl::opt<std::string> command(cl::Positional, cl::Required,
                                    cl::desc("<command: import>"));
static cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                                      cl::desc("<model>"));
static cl::opt<std::string> outputPath("o", cl::desc("output file"),
                                       cl::value_desc("file"), cl::init("-"));
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

static int runImport(MLIRContext &ctx) {
  auto module = loom::onnx_import::importFile(ctx, inputPath);
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
  llvm::errs() << "error: unknown command '" << command
               << "' (available: import)\n";
  return 1;
}
