//===- CpuTransforms.h - passes of the CPU code path ------------*- C++ -*-===//

#ifndef LOOM_COMPILER_CODEGEN_CPU_CPUTRANSFORMS_H
#define LOOM_COMPILER_CODEGEN_CPU_CPUTRANSFORMS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>
#include <string>

namespace loom::codegen {

/// Every pass of the CPU code path is declared in Passes.td (flags
/// loom-cpu-*, loom-exec-to-cpu, loom-copy-to-linalg); this gives their
/// create*Pass() factories and registerCpuCodegenPasses().
#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "compiler/codegen/cpu/Passes.h.inc"

/// Whether `type` is f16 or bf16, or a shaped type of them: the 16-bit
/// floats the CPU backend stores in 16 bits and computes in f32.
bool isNarrowFloat(mlir::Type type);

/// The module attribute where the memory plan records its plan for people
/// (`loomc compile --print-memory-plan`).
inline constexpr const char *kMemoryPlanAttr = "loom.memory_plan";

/// The entry function's attribute listing its weight arguments (array of
/// argument numbers), set where their graph.weight attributes are dropped
/// before lowering: a convolution over one may keep its filter reordered.
inline constexpr const char *kWeightArgsAttr = "loom.weight_args";

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

/// After lowering to LLVM: defines the dispatchers that
/// --loom-cpu-parallel-loops (ParallelLoops.cpp) calls.
mlir::LogicalResult addParallelDispatchers(mlir::ModuleOp module);

/// Registers every pass of Passes.td for loom-opt.
void registerCpuPasses();

/// The module attribute the profile-hooks pass writes.
inline constexpr const char *kKernelNamesAttr = "loom.kernels";

} // namespace loom::codegen

#endif // LOOM_COMPILER_CODEGEN_CPU_CPUTRANSFORMS_H
