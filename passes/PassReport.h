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

#include "dialects/graph/LocationString.h"

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
  return graph::locationString(loc);
}

/// A type as MLIR prints it ("tensor<4x8xbf16>", "f32").
inline std::string typeString(mlir::Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type;
  return s;
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
