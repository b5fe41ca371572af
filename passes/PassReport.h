//===- PassReport.h - what passes tell people about their decisions ------===//
//
// The passes that decide something for the user (fusion, mixed precision,
// recomputation, sharding) explain each decision in a JSON report and a
// readable summary. The report goes to an in-memory Sink when a driver
// collects the decisions of a whole pipeline (loomc train --report writes
// the sink once), else to the pass's `report=FILE`. These are the pieces
// they share: how an op is named for people and where a report goes.
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

#include <optional>
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

/// A deep copy of `value` that owns every string: a JSON value built from
/// a StringRef only borrows it, and a report outlives the pass that made
/// it.
inline llvm::json::Value owned(const llvm::json::Value &value) {
  if (std::optional<llvm::StringRef> s = value.getAsString())
    return s->str();
  if (const llvm::json::Object *o = value.getAsObject()) {
    llvm::json::Object out;
    for (const auto &[key, v] : *o)
      out[key.str()] = owned(v);
    return out;
  }
  if (const llvm::json::Array *a = value.getAsArray()) {
    llvm::json::Array out;
    for (const llvm::json::Value &v : *a)
      out.push_back(owned(v));
    return out;
  }
  return value;
}

/// The decisions of a pipeline's passes, one JSON section per pass
/// ("recompute", "mixed_precision", ...), collected in memory and written
/// once by the driver. Passes add to it from module passes only (no
/// locking).
class Sink {
public:
  /// Sets `section` to a copy of `value` that owns its strings (a pass
  /// that runs twice keeps its last).
  void add(llvm::StringRef section, const llvm::json::Value &value) {
    sections[section.str()] = owned(value);
  }
  /// The section as an object, or null when no pass added it.
  llvm::json::Object *getObject(llvm::StringRef section) {
    return sections.getObject(section);
  }
  /// Every section, for the driver to write.
  llvm::json::Object &all() { return sections; }
  /// Every section as the report file holds it: indented JSON and a
  /// newline.
  std::string toJson() const {
    return llvm::formatv("{0:2}\n",
                         llvm::json::Value(llvm::json::Object(sections)))
        .str();
  }

private:
  llvm::json::Object sections;
};

/// A pass's report: into `sink` under `section` when there is a sink,
/// else written to `path` when it is not empty (see writeJson).
inline mlir::LogicalResult emit(Sink *sink, llvm::StringRef section,
                                mlir::Operation *anchor, llvm::StringRef pass,
                                llvm::StringRef path, llvm::json::Value value) {
  if (sink) {
    sink->add(section, value);
    return mlir::success();
  }
  if (path.empty())
    return mlir::success();
  return writeJson(anchor, pass, path, value);
}

} // namespace loom::report

#endif // LOOM_PASSES_PASSREPORT_H
