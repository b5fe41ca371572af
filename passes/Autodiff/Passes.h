//===- Passes.h - reverse-mode autodiff -------------------------*- C++ -*-===//

#ifndef LOOM_PASSES_AUTODIFF_PASSES_H
#define LOOM_PASSES_AUTODIFF_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace loom {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "passes/Autodiff/Passes.h.inc"

} // namespace loom

#endif // LOOM_PASSES_AUTODIFF_PASSES_H
