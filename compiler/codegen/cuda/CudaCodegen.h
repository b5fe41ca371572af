//===- CudaCodegen.h - graph IR to a CUDA program ---------------*- C++ -*-===//
//
// The CUDA code path: --loom-fusion groups the graph ops into
// kernel.fusion regions (the same decisions as the CPU path), then
// CudaEmitter.cpp writes each region as CUDA C++ kernels or cuBLASLt calls
// and plans the buffers between them in one device arena. The source is
// compiled by NVRTC: at load time by the runtime for the GPU present, and
// at compile time for the archs named with `loomc --arch`.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMPILER_CODEGEN_CUDA_CUDACODEGEN_H
#define LOOM_COMPILER_CODEGEN_CUDA_CUDACODEGEN_H

#include "compiler/codegen/cuda/CudaProgram.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace loom::codegen {

struct CudaCodegenOptions {
  /// Where --loom-fusion writes its regions and decisions as JSON (empty:
  /// nowhere), and whether it prints a readable summary to stderr.
  std::string fusionReport;
  bool printFusion = false;
  bool timing = false;
  /// Softmax attention becomes graph.attention (--loom-fuse-attention)
  /// before the regions are made.
  bool fuseAttention = true;
};

/// Compiles function `entry` of `module` (rewritten in place) to a CUDA
/// program; its first `numInputs` arguments are inputs, the rest weights.
mlir::FailureOr<cuda::Program>
compileForCuda(mlir::ModuleOp module, llvm::StringRef entry, unsigned numInputs,
               const CudaCodegenOptions &options);

} // namespace loom::codegen

#endif // LOOM_COMPILER_CODEGEN_CUDA_CUDACODEGEN_H
