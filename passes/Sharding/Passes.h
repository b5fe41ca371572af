//===- Passes.h - sharding over a device mesh -------------------*- C++ -*-===//

#ifndef LOOM_PASSES_SHARDING_PASSES_H
#define LOOM_PASSES_SHARDING_PASSES_H

#include "mlir/Dialect/Mesh/IR/MeshDialect.h"
#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace loom {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "passes/Sharding/Passes.h.inc"

namespace report {
class Sink;
} // namespace report

/// --loom-data-parallel whose JSON report goes to `sink` (loomc train --report)
/// instead of its `report` file.
std::unique_ptr<mlir::Pass>
createDataParallelPass(const DataParallelPassOptions &options,
                       report::Sink *sink);

/// --loom-tensor-parallel whose JSON report goes to `sink` (loomc train
/// --report) instead of its `report` file.
std::unique_ptr<mlir::Pass>
createTensorParallelPass(const TensorParallelPassOptions &options,
                         report::Sink *sink);

} // namespace loom

#endif // LOOM_PASSES_SHARDING_PASSES_H
