//===- Passes.h - lowerings out of the graph dialect ------------*- C++ -*-===//

#ifndef LOOM_PASSES_CONVERSION_PASSES_H
#define LOOM_PASSES_CONVERSION_PASSES_H

#include "mlir/Pass/Pass.h"

#include <memory>

namespace loom {

/// `--graph-to-linalg`: lowers graph ops to upstream MLIR on tensors
/// (linalg.generic / linalg.fill / linalg.transpose, tensor, arith, math),
/// the input of the CPU code path. Elementwise ops become one
/// linalg.generic each with NumPy broadcasting in the indexing maps;
/// dynamic dims are read with tensor.dim. A graph op without a lowering is
/// an error naming it.
std::unique_ptr<mlir::Pass> createGraphToLinalgPass();

void registerConversionPasses();

} // namespace loom

#endif // LOOM_PASSES_CONVERSION_PASSES_H
