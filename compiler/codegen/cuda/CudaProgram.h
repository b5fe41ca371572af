//===- CudaProgram.h - a model compiled for CUDA, before serialization -*- C++
//-*-===//
//
// What the CUDA emitter produces for one function: one CUDA C++ source
// with every kernel, the kernels' launch configurations, the cuBLASLt
// matmuls, the launch sequence, and the buffers (inputs, weights, and
// offsets in one device arena from the static memory plan). No MLIR:
// compiler/Compile.cpp copies it into the artifact's CudaCode message.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMPILER_CODEGEN_CUDA_CUDAPROGRAM_H
#define LOOM_COMPILER_CODEGEN_CUDA_CUDAPROGRAM_H

#include <cstdint>
#include <string>
#include <vector>

namespace loom::codegen::cuda {

/// A device buffer of the program.
struct Buffer {
  enum Kind { Arena, Input, Weight };
  Kind kind = Arena;
  /// Input or weight index (Input, Weight); the arena offset (Arena).
  int64_t index = 0;
  int64_t offset = 0;
  int64_t bytes = 0;
  /// The MLIR element type ("f32", "bf16", "i64", ...) and the shape.
  std::string elementType;
  std::vector<int64_t> shape;
  /// The value it holds, for people ("fusion_3#0").
  std::string name;
};

/// One `__global__` function of the source, with its launch.
struct Kernel {
  std::string name;
  /// The region it comes from, its kind and ops with their locations.
  std::string description;
  int64_t grid = 1;
  int64_t block = 256;
  int64_t sharedBytes = 0;
  /// The buffer of each pointer parameter, in order.
  std::vector<int> args;
  /// The args reach the kernel as one device array of their addresses
  /// (kernels of more than kMaxDirectArgs buffers).
  bool pointerTable = false;
};

/// The most buffers a kernel takes as parameters of their own (8 bytes
/// each); more go through a pointer table, so a multi-tensor optimizer of
/// any number of parameters stays within the 4 KiB of parameters every
/// CUDA version takes.
inline constexpr size_t kMaxDirectArgs = 128;

/// A matmul as a cuBLASLt call, in row-major terms: D[b] = op(A[b]) x
/// op(B[b]) (+ bias, then the activation), D of M x N, op(A) of M x K,
/// op(B) of K x N; batch strides in elements (0: shared by every batch).
struct Gemm {
  std::string name;
  std::string description;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  bool transA = false, transB = false;
  int64_t strideA = 0, strideB = 0, strideD = 0;
  /// The element type of A, B, D and the bias ("f32", "f16", "bf16",
  /// "f64"); f16 and bf16 accumulate in f32. "i8": A and B are s8, D is
  /// s32 (CUBLAS_COMPUTE_32I, exact), no bias nor activation, and the
  /// layout is cuBLASLt's IMMA one in row-major terms: transA false,
  /// transB true (B stored N x K), K and N multiples of 4
  /// (kInt8GemmMultiple).
  std::string elementType;
  int a = -1, b = -1, d = -1;
  /// A bias of N elements added to each row of D (cuBLASLt's epilogue).
  int bias = -1;
  /// "none", "relu" or "gelu" (GELU's tanh form), after the bias.
  std::string activation = "none";
};

/// What K and N of an int8 Gemm are multiples of (cuBLASLt's IMMA rule
/// for its regular ordering: m, k and the leading dims multiples of 4).
inline constexpr int64_t kInt8GemmMultiple = 4;

/// A collective of the mesh (an upstream `mesh` op the sharding passes
/// produced) between the ranks of a job, run by the runtime's
/// communicator: started by a Step::Collective where the op stood, waited
/// for by a Step::CollectiveWait before the first step that reads its
/// output (docs/distributed.md, "The CUDA program's collectives"; docs/cuda.md,
/// "Collectives").
struct Collective {
  /// loom::abi::CollectiveKind (all-reduce, all-gather, reduce-scatter,
  /// broadcast, all-slice).
  int64_t kind = 0;
  /// The element type of `in` and `out` ("f32", "bf16", ...).
  std::string elementType;
  /// loom::abi::ReductionOp for an all-reduce or a reduce-scatter, the
  /// root's index in the group for a broadcast; 0 otherwise.
  int64_t op = 0;
  /// The mesh axes of the group, bit a for axis a.
  int64_t axes = 0;
  int in = -1, out = -1;
  /// "mesh.all_reduce over axes [0] (sum) of tensor<64xf32> @ loc", for
  /// people and errors.
  std::string name;
};

/// One step of the launch sequence.
struct Step {
  enum Kind { Launch, Gemm, Collective, CollectiveWait };
  Kind kind = Launch;
  /// Index into Program::kernels, Program::gemms or Program::collectives
  /// (a collective's start and its wait).
  int index = 0;
};

struct Program {
  /// Every kernel as one CUDA C++ translation unit (the prelude first).
  std::string source;
  std::vector<Kernel> kernels;
  std::vector<Gemm> gemms;
  std::vector<Collective> collectives;
  std::vector<Step> steps;
  std::vector<Buffer> buffers;
  /// The arena's size: the planned peak of the intermediates and outputs.
  int64_t arenaBytes = 0;
  /// The buffer of each function result.
  std::vector<int> outputs;
};

/// Arena offsets and buffer sizes are multiples of this, so that every
/// buffer can be read with 16-byte vector loads.
inline constexpr int64_t kBufferAlignment = 256;

} // namespace loom::codegen::cuda

#endif // LOOM_COMPILER_CODEGEN_CUDA_CUDAPROGRAM_H
