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

} // namespace loom

#endif // LOOM_PASSES_SHARDING_PASSES_H
