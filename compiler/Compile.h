//===- Compile.h - graph IR to a .loom artifact -----------------*- C++ -*-===//
//
// The compile API behind `loomc compile`: picks the entry function, moves
// large constants out of the code into the artifact's weights, records the
// input/output signature (dtypes, static sizes, named dynamic dims),
// generates the target's code and serializes everything as one artifact
// (common/schema/loom_artifact.proto). A training step (`loom.training`
// on the function, docs/training.md) also gets the artifact's Training
// message: the roles of its inputs and outputs and the state's initial
// values.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMPILER_COMPILE_H
#define LOOM_COMPILER_COMPILE_H

#include "compiler/codegen/cpu/CpuCodegen.h"
#include "compiler/codegen/cuda/CudaCodegen.h"

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinOps.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace loom {

namespace artifact {
class TensorSignature;
} // namespace artifact

struct CompileOptions {
  /// "cpu" or "cuda".
  std::string target = "cpu";
  /// The function to compile; empty: the module's only public function.
  std::string funcName;
  codegen::CpuCodegenOptions cpu;
  codegen::CudaCodegenOptions cuda;
  /// CUDA: archs ("sm_80") to compile the source for now, with
  /// `compileCuda`; the artifact carries each binary beside the source.
  std::vector<std::string> cudaArchs;
  /// CUDA: f32 matmuls may round their inputs to TF32 on tensor cores
  /// (cuBLASLt's CUBLAS_COMPUTE_32F_FAST_TF32; loomc --allow-tf32).
  bool cudaAllowTf32 = false;
  /// Compiles CUDA source for an arch (NVRTC, given by the tool so that
  /// the compiler does not load CUDA libraries itself): the cubin and the
  /// NVRTC version, or false with `error` set.
  std::function<bool(const std::string &source, const std::string &arch,
                     std::string &cubin, int &nvrtcVersion, std::string &error)>
      compileCuda;
  /// When set, the artifact is written to this path (its weights streamed
  /// from the IR to the file, never copied into one string) and the
  /// `artifact` bytes stay empty.
  std::string outputPath;
  /// Whether a training step's state initial values (its parameters'
  /// values) go into the artifact; without them the runtime starts the
  /// state from zeros unless given values (loom_trainer_set_state, a
  /// checkpoint).
  bool initialValues = true;
  /// Constants of at least this many bytes become artifact weights, the
  /// rest stay in the code.
  int64_t minWeightBytes = 1024;
  /// For a training step (a function with `loom.training`): the inference
  /// function as MLIR bytecode, kept in Training.inference_module for
  /// `loomc export`. Must be empty for an inference function.
  std::string inferenceModule;
  /// For a training step of an ONNX model: the original model, kept in
  /// Training.source_onnx so that `loomc export` writes the model back with
  /// only its initializers changed. The data of the initializers in
  /// `sourceData` is not in it: the importer moved it into the IR
  /// (onnx_import::KeptSource), and it comes back for those that are not
  /// parameters.
  std::string sourceOnnx;
  std::map<std::string, mlir::ElementsAttr> sourceData;
  /// For a training step on the CPU: the code writes each state's next
  /// value into its input's buffer and returns no state
  /// (Training.state_in_place), so a step holds the state once.
  bool stateInPlace = false;
};

/// What a compile reports besides the artifact.
struct CompileReport {
  /// The memory plan, readable (loomc compile --print-memory-plan).
  std::string memoryPlan;
  /// The memory plan's arena bytes: the planned peak of the intermediates.
  int64_t arenaBytes = 0;
  /// CUDA: the generated source (loomc --emit cuda) and the counts.
  std::string cudaSource;
  size_t cudaKernels = 0, cudaGemms = 0;
};

/// Compiles `module` (rewritten in place) into the bytes of a .loom file.
/// Errors are reported as diagnostics.
mlir::LogicalResult compileToArtifact(mlir::ModuleOp module,
                                      const CompileOptions &options,
                                      std::string &artifact,
                                      CompileReport *report = nullptr);

/// Fills `sig` with `name` and the dtype and dims of `type` (a ranked
/// tensor of a dtype the runtime has; `dimNames` names dynamic dims), or
/// an error on `where` about its `what` ("input", "output").
mlir::LogicalResult fillSignature(artifact::TensorSignature &sig,
                                  llvm::StringRef name, mlir::Type type,
                                  mlir::ArrayAttr dimNames,
                                  mlir::Operation *where, llvm::StringRef what);

/// Prints the graph ops by name with their counts, and the constants as
/// parameters (count and bytes): `loomc import --print-summary`.
void summarizeModule(mlir::ModuleOp module, llvm::raw_ostream &os);

} // namespace loom

#endif // LOOM_COMPILER_COMPILE_H
