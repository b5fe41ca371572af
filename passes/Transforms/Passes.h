//===- Passes.h - general graph transforms ----------------------*- C++ -*-===//

#ifndef LOOM_PASSES_TRANSFORMS_PASSES_H
#define LOOM_PASSES_TRANSFORMS_PASSES_H

#include "dialects/graph/GraphDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace loom {

/// Declared in Passes.td: `--loom-sort-constants` (SortConstants.cpp), the
/// constants of a function in a canonical order, for IR comparison.
/// registerTransformsPasses() registers them for loom-opt.
#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "passes/Transforms/Passes.h.inc"

} // namespace loom

#endif // LOOM_PASSES_TRANSFORMS_PASSES_H
