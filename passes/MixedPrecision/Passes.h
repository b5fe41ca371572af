//===- Passes.h - mixed precision -------------------------*- C++ -*-===//

#ifndef LOOM_PASSES_MIXEDPRECISION_PASSES_H
#define LOOM_PASSES_MIXEDPRECISION_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace loom {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "passes/MixedPrecision/Passes.h.inc"

namespace report {
class Sink;
} // namespace report

/// --loom-mixed-precision whose JSON report goes to `sink` (loomc train
/// --report) instead of its `report` file.
std::unique_ptr<mlir::Pass>
createMixedPrecisionPass(const MixedPrecisionPassOptions &options,
                         report::Sink *sink);

} // namespace loom

#endif // LOOM_PASSES_MIXEDPRECISION_PASSES_H
