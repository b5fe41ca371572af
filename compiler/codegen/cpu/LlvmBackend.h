//===- LlvmBackend.h - LLVM IR to objects, on every core --------*- C++ -*-===//
//
// The LLVM half of the CPU path: the module CpuCodegen.cpp translated from
// the LLVM dialect goes in, object files come out. Identical functions are
// merged first (the loop nests of identical layers), then the module is
// cut into parts along its call graph, and each part is optimized and
// compiled on its own thread with its own context and target machine.
// Only LLVM headers here.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMPILER_CODEGEN_CPU_LLVMBACKEND_H
#define LOOM_COMPILER_CODEGEN_CPU_LLVMBACKEND_H

#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace llvm {
class Module;
} // namespace llvm

namespace loom::codegen {

struct LlvmBackendOptions {
  std::string triple;
  std::string cpu;
  /// "+avx2,-avx512f,..." (empty: the CPU's own).
  std::string features;
  unsigned optLevel = 3;
  /// Threads (and at most as many parts); 0: one per core.
  unsigned threads = 0;
  /// The graph's function: with its C interface and `exported`, the glue
  /// that calls the kernels, compiled without machine optimizations.
  std::string entry;
  /// The one symbol the shared object exports (loom_entry).
  std::string exported;
  /// Print each phase's and each part's time to stderr.
  bool timing = false;
};

/// Optimizes and compiles `module` (which this consumes) into one or more
/// relocatable objects, to be linked together.
llvm::Expected<std::vector<std::string>>
compileLlvmModule(std::unique_ptr<llvm::Module> module,
                  const LlvmBackendOptions &options);

} // namespace loom::codegen

#endif // LOOM_COMPILER_CODEGEN_CPU_LLVMBACKEND_H
