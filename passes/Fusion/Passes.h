//===- Passes.h - graph-level fusion ----------------------------*- C++ -*-===//

#ifndef LOOM_PASSES_FUSION_PASSES_H
#define LOOM_PASSES_FUSION_PASSES_H

#include "dialects/kernel/KernelDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace loom {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "passes/Fusion/Passes.h.inc"

namespace report {
class Sink;
} // namespace report

/// --loom-fuse-attention whose JSON report goes to `sink` (loomc train
/// --report) instead of its `report` file.
std::unique_ptr<mlir::Pass>
createFuseAttentionPass(const FuseAttentionPassOptions &options,
                        report::Sink *sink);

} // namespace loom

#endif // LOOM_PASSES_FUSION_PASSES_H
