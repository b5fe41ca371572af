//===- Passes.h - passes of the compiler's pipelines ------------*- C++ -*-===//

#ifndef LOOM_COMPILER_PASSES_H
#define LOOM_COMPILER_PASSES_H

#include "dialects/graph/GraphDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace loom {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "compiler/Passes.h.inc"

} // namespace loom

#endif // LOOM_COMPILER_PASSES_H
