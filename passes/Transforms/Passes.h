//===- Passes.h - general graph transforms ----------------------*- C++ -*-===//

#ifndef LOOM_PASSES_TRANSFORMS_PASSES_H
#define LOOM_PASSES_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

#include <memory>

namespace loom {

/// `--graph-sort-constants`: moves every graph.constant to the top of its
/// function, ordered by type and value. Two functions that differ only in
/// where their constants sit then print alike, which is how round-trip
/// tests compare IR (after --cse, which merges equal constants).
std::unique_ptr<mlir::Pass> createSortConstantsPass();

void registerTransformsPasses();

} // namespace loom

#endif // LOOM_PASSES_TRANSFORMS_PASSES_H
