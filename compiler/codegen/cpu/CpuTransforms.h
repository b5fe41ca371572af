//===- CpuTransforms.h - passes of the CPU code path ------------*- C++ -*-===//

#ifndef LOOM_COMPILER_CODEGEN_CPU_CPUTRANSFORMS_H
#define LOOM_COMPILER_CODEGEN_CPU_CPUTRANSFORMS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>
#include <string>

namespace loom::codegen {

/// On tensors: fuses elementwise linalg.generic producers into their
/// consumers (an elementwise chain, or a chain feeding a reduction, becomes
/// one loop nest), except into a matmul contraction, which stays a library
/// call. kernel.fusion regions are isolated from above, so nothing fuses
/// across their boundaries; a region whose body folds away is replaced by
/// the operands it forwards.
std::unique_ptr<mlir::Pass> createCpuFusionPass();

/// Inlines the body of each kernel.fusion into its parent, once the ops
/// of each region are lowered and fused among themselves; each inlined op's
/// location becomes a FusedLoc whose metadata is the region's name, so the
/// profile hooks can name kernels after their region.
std::unique_ptr<mlir::Pass> createCpuInlineKernelsPass();

/// Replaces tanh, exp, log, erf and the other transcendental math ops by
/// MLIR's polynomial approximations (inline arithmetic that LLVM can
/// vectorize, accurate to a few ulp in f32) instead of scalar libm calls.
std::unique_ptr<mlir::Pass> createCpuMathApproximationPass();

/// On buffers: replaces each f32 matmul contraction that --graph-to-linalg
/// emits, and each f32 linalg.conv_2d_nchw_fchw, by a call to the runtime's
/// kernels (loom_cpu_matmul_f32, loom_cpu_conv2d_nchw_f32 in
/// loom/common/CodegenAbi.h; oneDNN and OpenBLAS behind them).
std::unique_ptr<mlir::Pass> createCpuLibraryCallsPass();

/// On buffers, in the entry function: brackets each kernel (a linalg op, a
/// library call, a memref.copy) with calls to the runtime's profiling
/// hooks loom_rt_profile_begin/end(i64 id), and records the kernels' names
/// (op, fused body, shape, source location) in the module attribute
/// `loom.kernels`, indexed by id.
std::unique_ptr<mlir::Pass> createCpuProfileHooksPass();

/// On buffers: a reduction into a rank-0 buffer (a full sum, a squared
/// norm) accumulates in a stack scalar of its own, copied in before and out
/// after. The arena buffer and the input it reduces share one base pointer,
/// so LLVM stored and reloaded the sum at every element and vectorized
/// nothing (1 ms instead of 0.1 ms for 800 K floats); an alloca it keeps in
/// a register.
std::unique_ptr<mlir::Pass> createCpuScalarAccumulatorsPass();

/// Declared in Passes.td: --loom-cpu-widen-floats (WidenFloats.cpp) and
/// --loom-cpu-expand-float-casts (ExpandFloatCasts.cpp), f16/bf16 stored in
/// 16 bits and computed in f32; --loom-cpu-memory-plan (MemoryPlan.cpp) and
/// --loom-exec-to-cpu (ExecToCpu.cpp), the memory plan as `exec` ops, then
/// lowered to the runtime's slots.
#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "compiler/codegen/cpu/Passes.h.inc"

/// Whether `type` is f16 or bf16, or a shaped type of them: the 16-bit
/// floats the CPU backend stores in 16 bits and computes in f32.
bool isNarrowFloat(mlir::Type type);

/// The module attribute where the memory plan records its plan for people
/// (`loomc compile --print-memory-plan`).
inline constexpr const char *kMemoryPlanAttr = "loom.memory_plan";

/// The private declaration of the runtime function `name` of `type` in
/// `module` (made after the declarations at its top unless it exists),
/// with MLIR's C interface when `cInterface` (memref arguments passed as
/// descriptor pointers).
mlir::func::FuncOp declareRuntimeFunction(mlir::ModuleOp module,
                                          llvm::StringRef name,
                                          mlir::FunctionType type,
                                          bool cInterface);

/// "@node" for an op from an ONNX node (a NameLoc), "@file:line" for one
/// from a file, "" otherwise.
std::string sourceOf(mlir::Location loc);

/// On buffers: outlines each linalg.generic whose outer loop is parallel
/// into a function over a range of that loop, called through the runtime's
/// thread pool (loom_rt_parallel_for). See ParallelLoops.cpp.
std::unique_ptr<mlir::Pass> createCpuParallelLoopsPass();
void registerCpuParallelLoopsPass();
/// After lowering to LLVM: defines the dispatchers the pass above calls.
mlir::LogicalResult addParallelDispatchers(mlir::ModuleOp module);

/// Turns each cf.assert (a run-time check of a lowering) into a call of the
/// runtime's loom_rt_fail(message) when it fails: the run returns an error
/// status instead of aborting the process. See RuntimeChecks.cpp.
std::unique_ptr<mlir::Pass> createCpuRuntimeChecksPass();
void registerCpuRuntimeChecksPass();

/// Registers the passes above under their flags (loom-cpu-widen-floats,
/// loom-cpu-expand-float-casts, loom-cpu-fusion, loom-cpu-inline-kernels,
/// loom-cpu-math-approximation, loom-cpu-library-calls,
/// loom-cpu-profile-hooks, loom-cpu-memory-plan, loom-exec-to-cpu,
/// loom-cpu-parallel-loops, loom-cpu-scalar-accumulators,
/// loom-cpu-runtime-checks) for loom-opt.
void registerCpuPasses();

/// The module attribute the profile-hooks pass writes.
inline constexpr const char *kKernelNamesAttr = "loom.kernels";

} // namespace loom::codegen

#endif // LOOM_COMPILER_CODEGEN_CPU_CPUTRANSFORMS_H
