//===- Passes.h - loss and training step -------------------------*- C++
//-*-===//

#ifndef LOOM_PASSES_TRAINING_PASSES_H
#define LOOM_PASSES_TRAINING_PASSES_H

#include "mlir/Dialect/Mesh/IR/MeshDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace loom {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "passes/Training/Passes.h.inc"

} // namespace loom

#endif // LOOM_PASSES_TRAINING_PASSES_H
