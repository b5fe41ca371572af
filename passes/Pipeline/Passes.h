//===- Passes.h - pipeline parallelism --------------------------*- C++ -*-===//

#ifndef LOOM_PASSES_PIPELINE_PASSES_H
#define LOOM_PASSES_PIPELINE_PASSES_H

#include "dialects/kernel/KernelDialect.h"

#include "mlir/Dialect/Mesh/IR/MeshDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace loom {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "passes/Pipeline/Passes.h.inc"

} // namespace loom

#endif // LOOM_PASSES_PIPELINE_PASSES_H
