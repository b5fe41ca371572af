//===- Passes.h - quantized graphs ------------------------------*- C++ -*-===//

#ifndef LOOM_PASSES_QUANTIZATION_PASSES_H
#define LOOM_PASSES_QUANTIZATION_PASSES_H

#include "dialects/graph/GraphDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace loom {

/// Declared in Passes.td: `--loom-integer-matmul` (IntegerMatmul.cpp) and
/// `--loom-integer-conv` (IntegerConv.cpp).
/// registerQuantizationPasses() registers them for loom-opt.
#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "passes/Quantization/Passes.h.inc"

} // namespace loom

#endif // LOOM_PASSES_QUANTIZATION_PASSES_H
