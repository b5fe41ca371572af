//===- Passes.h - lowerings out of the graph dialect ------------*- C++ -*-===//

#ifndef LOOM_PASSES_CONVERSION_PASSES_H
#define LOOM_PASSES_CONVERSION_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace loom {

/// `--loom-graph-to-linalg` (passes/Conversion/Passes.td): lowers graph ops
/// to upstream MLIR on tensors (linalg, tensor, arith, math), the input of
/// the CPU code path; `createGraphToLinalgPass()` makes it and
/// `registerConversionPasses()` registers it.
#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "passes/Conversion/Passes.h.inc"

} // namespace loom

#endif // LOOM_PASSES_CONVERSION_PASSES_H
