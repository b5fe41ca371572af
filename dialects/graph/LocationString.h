//===- LocationString.h - where an op came from, for reports ----*- C++ -*-===//

#ifndef LOOM_DIALECTS_GRAPH_LOCATIONSTRING_H
#define LOOM_DIALECTS_GRAPH_LOCATIONSTRING_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"

#include <string>

namespace loom::graph {

/// "node" for an op from an ONNX node, "file:line:col" for one from a
/// file, "" otherwise (the first location of a fused one).
inline std::string locationString(mlir::Location loc) {
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

} // namespace loom::graph

#endif // LOOM_DIALECTS_GRAPH_LOCATIONSTRING_H
