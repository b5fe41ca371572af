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
#include "mlir/Pass/PassManager.h"

#include <string>
#include <vector>

namespace loom::codegen {

/// loomc --fused-attention=auto: attention is fused from this many scores
/// (1 GiB of them in f32), where storing them limits the batch and the
/// sequence length; smaller ones run faster unfused (cuBLASLt tensor-core
/// GEMMs and a softmax kernel against the CUDA-core fused kernels: 0.44
/// against 1.74 ms for 8 x 12 x 1024^2 causal f16 scores on an H200).
inline constexpr int64_t kFuseAttentionAuto = int64_t{256} << 20;

struct CudaCodegenOptions {
  /// Where --loom-fusion writes its regions and decisions as JSON (empty:
  /// nowhere), and whether it prints a readable summary to stderr.
  std::string fusionReport;
  bool printFusion = false;
  bool timing = false;
  /// Softmax attention with at least this many scores becomes
  /// graph.attention (--loom-fuse-attention) before the regions are made;
  /// -1: none.
  int64_t fuseAttentionMinScores = kFuseAttentionAuto;
};

/// The graph passes before the emitter: integer matmuls, attention
/// fusion, the kernel.fusion regions (loom-opt's loom-inference-pipeline
/// with target=cuda runs these too).
void buildCudaRegionPipeline(mlir::OpPassManager &pm,
                             const CudaCodegenOptions &options);

/// Compiles function `entry` of `module` (rewritten in place) to a CUDA
/// program; its first `numInputs` arguments are inputs, the rest weights.
mlir::FailureOr<cuda::Program>
compileForCuda(mlir::ModuleOp module, llvm::StringRef entry, unsigned numInputs,
               const CudaCodegenOptions &options);

} // namespace loom::codegen

#endif // LOOM_COMPILER_CODEGEN_CUDA_CUDACODEGEN_H
