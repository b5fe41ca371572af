//===- CudaEmitter.h - kernel.fusion regions to CUDA C++ --------*- C++ -*-===//

#ifndef LOOM_COMPILER_CODEGEN_CUDA_CUDAEMITTER_H
#define LOOM_COMPILER_CODEGEN_CUDA_CUDAEMITTER_H

#include "compiler/codegen/cuda/CudaProgram.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace loom::codegen::cuda {

/// The CUDA program of `func`, whose body is kernel.fusion regions (after
/// --loom-fusion) and whose first `numInputs` arguments are the inputs
/// (the rest are weights). Unsupported ops and types are errors that name
/// the op and its location.
mlir::FailureOr<Program> emitCudaProgram(mlir::func::FuncOp func,
                                         unsigned numInputs);

} // namespace loom::codegen::cuda

#endif // LOOM_COMPILER_CODEGEN_CUDA_CUDAEMITTER_H
