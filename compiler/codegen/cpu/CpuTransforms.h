//===- CpuTransforms.h - passes of the CPU code path ------------*- C++ -*-===//

#ifndef LOOM_COMPILER_CODEGEN_CPU_CPUTRANSFORMS_H
#define LOOM_COMPILER_CODEGEN_CPU_CPUTRANSFORMS_H

#include "mlir/Pass/Pass.h"

#include <memory>

namespace loom::codegen {

/// On tensors: fuses elementwise linalg.generic producers into their
/// consumers (an elementwise chain, or a chain feeding a reduction, becomes
/// one loop nest), except into a matmul contraction, which stays a library
/// call.
std::unique_ptr<mlir::Pass> createCpuFusionPass();

/// On buffers: replaces each f32 matmul contraction that --graph-to-linalg
/// emits, and each f32 linalg.conv_2d_nchw_fchw, by a call to the runtime's
/// kernels (loom_cpu_matmul_f32, loom_cpu_conv2d_nchw_f32 in
/// runtime/src/cpu/Kernels.cpp; OpenBLAS behind them).
std::unique_ptr<mlir::Pass> createCpuLibraryCallsPass();

} // namespace loom::codegen

#endif // LOOM_COMPILER_CODEGEN_CPU_CPUTRANSFORMS_H
