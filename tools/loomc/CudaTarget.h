//===- CudaTarget.h - loomc's CUDA flags ------------------------*- C++ -*-===//

#ifndef LOOM_TOOLS_LOOMC_CUDATARGET_H
#define LOOM_TOOLS_LOOMC_CUDATARGET_H

#include "compiler/Compile.h"

namespace loom::tools {

/// Checks --target, --emit, --arch and --allow-tf32 and sets the CUDA part
/// of `options` (the archs, NVRTC as the compiler of their binaries, TF32).
/// Errors go to stderr.
mlir::LogicalResult setCudaOptions(CompileOptions &options,
                                   llvm::StringRef target, llvm::StringRef emit,
                                   llvm::StringRef archs, bool allowTf32);

} // namespace loom::tools

#endif // LOOM_TOOLS_LOOMC_CUDATARGET_H
