//===- loom-onnx-roundtrip.cpp - ONNX -> IR -> ONNX -> IR, many models ----===//
//
//   loom-onnx-roundtrip LIST [--keep DIR]
//
// For each line "NAME PATH" of LIST: imports the ONNX model, prints and
// parses the IR (as `loomc import` then `loomc export` would), exports it
// (the exporter runs the ONNX checker with shape inference), imports the
// export, and compares the two IRs after canonicalize, cse and
// --loom-sort-constants (which only fold, merge equal constants and put
// them in one order). One process for the whole list: the shell loop it
// replaces started five processes per model, 0.15 s each, 80% of the
// export test's 14 minutes. With --keep, the exports that round trip are
// written to DIR/NAME.onnx. Prints "FAIL NAME: why" per failure and a
// summary line; exits 1 when any failed.
//
//===----------------------------------------------------------------------===//

#include "compiler/InitAll.h"
#include "frontends/onnx/OnnxExporter.h"
#include "frontends/onnx/OnnxImporter.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <utility>
#include <vector>

using namespace mlir;

namespace {

std::string print(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os);
  return text;
}

/// A context of its own per step, as each step was a process: resource
/// blob names are unique within a context, so a second import into the
/// same one would name its blobs differently.
struct Step {
  MLIRContext ctx;
  std::string diagnostics;
  ScopedDiagnosticHandler handler;
  explicit Step(const DialectRegistry &registry)
      : ctx(registry), handler(&ctx, [this](Diagnostic &d) {
          if (diagnostics.size() < 300)
            diagnostics += d.str() + " ";
          return success();
        }) {
    ctx.loadAllAvailableDialects();
  }
  std::string why(llvm::StringRef step) const {
    return (step + ": " + llvm::StringRef(diagnostics).take_front(300)).str();
  }
  /// canonicalize, cse, --loom-sort-constants, printed.
  std::optional<std::string> normalized(ModuleOp m) {
    PassManager pm(&ctx, ModuleOp::getOperationName());
    if (failed(parsePassPipeline(
            "canonicalize,cse,func.func(loom-sort-constants)", pm)) ||
        failed(pm.run(m)))
      return std::nullopt;
    return print(m);
  }
};

/// `loomc import`: the model's IR as text into `text`, else why not.
std::string importText(const DialectRegistry &registry, llvm::StringRef path,
                       llvm::StringRef what, std::string &text) {
  Step import(registry);
  auto imported = loom::onnx_import::importFile(import.ctx, path);
  if (failed(imported))
    return import.why(what);
  text = print(**imported);
  return "";
}

/// The round trip of one model: empty when it holds, else why not.
std::string roundtrip(const DialectRegistry &registry, llvm::StringRef path,
                      llvm::StringRef exportPath) {
  std::string text, again;
  if (std::string why = importText(registry, path, "import", text);
      !why.empty())
    return why;
  // loomc export.
  {
    Step exporting(registry);
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(text, ParserConfig(&exporting.ctx));
    if (!module || failed(verify(*module)))
      return exporting.why("parse");
    if (failed(loom::onnx_export::exportFile(*module, exportPath)))
      return exporting.why("export");
  }
  // loomc import of the export.
  if (std::string why = importText(registry, exportPath, "re-import", again);
      !why.empty())
    return why;
  // loom-opt --canonicalize --cse --loom-sort-constants of each IR.
  std::optional<std::string> na, nb;
  for (auto [ir, normal] : {std::pair(&text, &na), std::pair(&again, &nb)}) {
    Step step(registry);
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(*ir, ParserConfig(&step.ctx));
    if (!module || !(*normal = step.normalized(*module)))
      return step.why("normalize");
  }
  if (*na == *nb)
    return "";
  // The first lines that differ.
  llvm::SmallVector<llvm::StringRef> la, lb;
  llvm::StringRef(*na).split(la, '\n');
  llvm::StringRef(*nb).split(lb, '\n');
  std::string out = "the IRs differ:";
  size_t shown = 0;
  for (size_t i = 0; i < std::max(la.size(), lb.size()) && shown < 5; ++i) {
    llvm::StringRef x = i < la.size() ? la[i] : "",
                    y = i < lb.size() ? lb[i] : "";
    if (x == y)
      continue;
    out += "\n< " + x.str() + "\n> " + y.str();
    ++shown;
  }
  return out;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  std::string list, keep;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (arg == "--keep" && i + 1 < argc)
      keep = argv[++i];
    else if (list.empty() && !arg.starts_with("-"))
      list = arg.str();
    else {
      llvm::errs() << "usage: loom-onnx-roundtrip LIST [--keep DIR]\n";
      return 2;
    }
  }
  if (list.empty()) {
    llvm::errs() << "usage: loom-onnx-roundtrip LIST [--keep DIR]\n";
    return 2;
  }
  auto text = llvm::MemoryBuffer::getFile(list);
  if (!text) {
    llvm::errs() << "error: cannot read " << list << ": "
                 << text.getError().message() << "\n";
    return 2;
  }
  llvm::SmallString<128> tmp;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("loom-roundtrip", tmp)) {
    llvm::errs() << "error: no temporary directory: " << ec.message() << "\n";
    return 2;
  }
  if (!keep.empty())
    llvm::sys::fs::create_directories(keep);

  DialectRegistry registry;
  loom::registerAllDialects(registry);
  loom::registerAllPasses();
  int equal = 0, differ = 0;
  llvm::SmallVector<llvm::StringRef> lines;
  (*text)->getBuffer().split(lines, '\n', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef line : lines) {
    auto [name, path] = line.trim().split(' ');
    if (name.empty() || path.empty())
      continue;
    llvm::SmallString<128> out(tmp);
    llvm::sys::path::append(out, name + ".onnx");
    std::string why = roundtrip(registry, path.trim(), out);
    if (why.empty()) {
      ++equal;
      if (!keep.empty()) {
        llvm::SmallString<128> kept(keep);
        llvm::sys::path::append(kept, name + ".onnx");
        llvm::sys::fs::copy_file(out, kept);
      }
      llvm::outs() << "ok " << name << "\n";
    } else {
      ++differ;
      llvm::outs() << "FAIL " << name << ": " << why << "\n";
    }
    llvm::sys::fs::remove(out);
  }
  llvm::sys::fs::remove(tmp);
  llvm::outs() << "roundtrip: " << equal << " equal, " << differ << " differ\n";
  return differ ? 1 : 0;
}
