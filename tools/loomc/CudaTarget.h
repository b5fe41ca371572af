//===- CudaTarget.h - loomc's CUDA flags ------------------------*- C++ -*-===//

#ifndef LOOM_TOOLS_LOOMC_CUDATARGET_H
#define LOOM_TOOLS_LOOMC_CUDATARGET_H

#include "compiler/Compile.h"

namespace loom::tools {

/// Checks --target, --emit and --arch and sets the CUDA part of `options`
/// (the archs, and NVRTC as the compiler of their binaries). Errors go to
/// stderr.
mlir::LogicalResult setCudaOptions(CompileOptions &options,
                                   llvm::StringRef target, llvm::StringRef emit,
                                   llvm::StringRef archs);

} // namespace loom::tools

#endif // LOOM_TOOLS_LOOMC_CUDATARGET_H
