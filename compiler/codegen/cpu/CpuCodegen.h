//===- CpuCodegen.h - graph IR to a CPU shared object -----------*- C++ -*-===//
//
// The CPU code path: graph ops -> linalg on tensors (--loom-graph-to-linalg) ->
// elementwise fusion -> one-shot bufferization -> loops -> LLVM dialect ->
// LLVM IR, optimized for the chosen CPU -> an object file -> a shared
// object (linked with ld.lld), which the runtime loads without a linker.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMPILER_CODEGEN_CPU_CPUCODEGEN_H
#define LOOM_COMPILER_CODEGEN_CPU_CPUCODEGEN_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <string>
#include <vector>

namespace loom::codegen {

/// The graph passes the CPU pipeline runs before --loom-fusion, as pass
/// pipeline text: what --loom-recompute runs on the copies it plans, so
/// that its planned peak is the compiled code's.
inline constexpr const char *kCpuGraphPasses =
    "loom-cpu-widen-floats,func.func(loom-integer-matmul,loom-integer-conv)";

/// A training step's attribute: [result, argument, ...] pairs whose
/// result is the argument's next value, to be written into the argument's
/// buffer and dropped from the results (--loom-cpu-state-in-place, then
/// --loom-cpu-drop-in-place-results; set by compileToArtifact).
inline constexpr const char *kStateInPlaceAttr = "loom.state_in_place";

struct CpuCodegenOptions {
  /// An LLVM CPU name ("x86-64-v3", "skylake-avx512") or "host".
  std::string cpu = "host";
  unsigned optLevel = 3;
  /// Where --loom-fusion writes its regions and decisions as JSON (empty:
  /// nowhere), and whether it prints a readable summary to stderr.
  std::string fusionReport;
  bool printFusion = false;
  /// Print the time of every pass and of LLVM's optimization and code
  /// generation to stderr (loomc --timing).
  bool timing = false;
  /// Where to write the LLVM IR as translated, before LLVM optimizes it
  /// (loomc --dump-llvm; empty: nowhere), for `opt -time-passes` and the like.
  std::string dumpLlvm;
  /// Threads for LLVM's optimization and code generation (loomc --jobs);
  /// 0: one per core.
  unsigned threads = 0;
  /// Expand f16 <-> f32 conversions into integer arithmetic instead of
  /// leaving them to LLVM (which emits F16C instructions, or without F16C
  /// calls compiler-rt routines the runtime lacks). compileForCpu sets it
  /// from the target's features.
  bool softF16 = false;
};

/// The shared object and what the runtime needs to check and call it: see
/// CpuCode in common/schema/loom_artifact.proto.
struct CpuCode {
  std::string sharedObject;
  std::string entrySymbol;
  std::string triple;
  std::string cpu;
  std::string features;
  /// Kernel names, indexed by the ids passed to the profiling hooks.
  std::vector<std::string> kernels;
  /// The memory plan, readable: planned bytes and the largest buffers.
  std::string memoryPlan;
  /// The planned arena bytes (the static-size peak), summed over functions.
  int64_t arenaBytes = 0;
};

/// The name of the entry `void loom_entry(void **args)`.
inline constexpr const char *kCpuEntrySymbol = "loom_entry";

/// Adds the passes from graph IR to the LLVM dialect to `pm` (a
/// module-level pass manager). Registered as `--loom-cpu-lowering`.
void buildCpuLoweringPipeline(mlir::OpPassManager &pm,
                              const CpuCodegenOptions &options = {});

/// The external models and translations the pipeline needs.
void registerCpuCodegenDialects(mlir::DialectRegistry &registry);
void registerCpuCodegenPipelines();

/// Compiles `module`, whose function `entry` takes tensors and returns
/// tensors, to a shared object exporting kCpuEntrySymbol. Rewrites
/// `module` in place. Errors are reported as diagnostics.
mlir::FailureOr<CpuCode> compileForCpu(mlir::ModuleOp module,
                                       llvm::StringRef entry,
                                       const CpuCodegenOptions &options);

} // namespace loom::codegen

#endif // LOOM_COMPILER_CODEGEN_CPU_CPUCODEGEN_H
