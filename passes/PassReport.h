//===- PassReport.h - what passes tell people about their decisions -*- C++
//-*-===//
//
// The passes that decide something for the user (fusion, mixed precision,
// recomputation) explain each decision in a JSON report (`report=FILE`)
// and a readable summary. These are the pieces they share: how an op is
// named for people and how a report file is written.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PASSES_PASSREPORT_H
#define LOOM_PASSES_PASSREPORT_H

#include "mlir/IR/Location.h"
#include "mlir/IR/Operation.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace loom::report {

/// "node" for an op from an ONNX node, "file:line:col" for one from a
/// file, "" otherwise.
inline std::string locString(mlir::Location loc) {
  if (auto fused = llvm::dyn_cast<mlir::FusedLoc>(loc))
    if (!fused.getLocations().empty())
      loc = fused.getLocations().front();
  if (auto named = llvm::dyn_cast<mlir::NameLoc>(loc))
    return named.getName().str();
  if (auto file = llvm::dyn_cast<mlir::FileLineColLoc>(loc))
    return (file.getFilename().getValue() + ":" + llvm::Twine(file.getLine()) +
            ":" + llvm::Twine(file.getColumn()))
        .str();
  return "";
}

/// "graph.add @node" for people.
inline std::string describe(mlir::Operation *op) {
  std::string s = op->getName().getStringRef().str();
  std::string loc = locString(op->getLoc());
  return loc.empty() ? s : s + " @" + loc;
}

/// Writes `value` (indented) to `path`; an error on `anchor` naming `pass`
/// when the file cannot be written.
inline mlir::LogicalResult writeJson(mlir::Operation *anchor,
                                     llvm::StringRef pass, llvm::StringRef path,
                                     const llvm::json::Value &value) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_Text);
  if (ec)
    return anchor->emitError(pass)
           << ": cannot write report '" << path << "': " << ec.message();
  os << llvm::formatv("{0:2}", value) << "\n";
  return mlir::success();
}

} // namespace loom::report

#endif // LOOM_PASSES_PASSREPORT_H
