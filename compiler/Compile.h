//===- Compile.h - graph IR to a .loom artifact -----------------*- C++ -*-===//
//
// The compile API behind `loomc compile`: picks the entry function, moves
// large constants out of the code into the artifact's weights, records the
// input/output signature (dtypes, static sizes, named dynamic dims),
// generates the target's code and serializes everything as one artifact
// (runtime/artifact/loom_artifact.proto).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMPILER_COMPILE_H
#define LOOM_COMPILER_COMPILE_H

#include "compiler/codegen/cpu/CpuCodegen.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace loom {

struct CompileOptions {
  /// "cpu" (the only target so far).
  std::string target = "cpu";
  /// The function to compile; empty: the module's only public function.
  std::string funcName;
  codegen::CpuCodegenOptions cpu;
  /// Constants of at least this many bytes become artifact weights, the
  /// rest stay in the code.
  int64_t minWeightBytes = 1024;
  /// Training artifacts: the inference module (MLIR bytecode) and, for an
  /// ONNX model, the original file, kept for `loomc export --checkpoint`.
  std::string inferenceModule;
  std::string sourceOnnx;
};

/// What a compile reports besides the artifact.
struct CompileReport {
  /// The memory plan, readable (loomc compile --print-memory-plan).
  std::string memoryPlan;
};

/// Compiles `module` (rewritten in place) into the bytes of a .loom file.
/// Errors are reported as diagnostics.
mlir::LogicalResult compileToArtifact(mlir::ModuleOp module,
                                      const CompileOptions &options,
                                      std::string &artifact,
                                      CompileReport *report = nullptr);

} // namespace loom

#endif // LOOM_COMPILER_COMPILE_H
