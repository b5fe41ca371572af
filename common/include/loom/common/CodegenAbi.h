//===- CodegenAbi.h - what the generated CPU code and the runtime share ---===//
//
// The artifact's CPU code calls back into libloom_runtime.so by name: the
// runtime's hooks (`loom_rt_*`: memory slots, failures, profiling, the
// parallel loop, collectives) and its library kernels (`loom_cpu_*`). The
// CPU code generator (compiler/codegen/cpu) declares and calls them, the
// runtime defines them; both spell each name and number from here, so
// neither can drift from the other. Header only, no MLIR, no runtime.
//
// A function the code calls through MLIR's C interface (its memrefs passed
// as pointers to descriptors) is defined by the runtime as
// `LOOM_ABI_CIFACE(symbol)`, `_mlir_ciface_` + the name; the others are
// plain C functions of the name itself. Each name is a macro (for the
// runtime's definitions) and a string (for the code generator).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMMON_CODEGENABI_H
#define LOOM_COMMON_CODEGENABI_H

#include <cstdint>

#define LOOM_ABI_PASTE_(a, b) a##b
#define LOOM_ABI_PASTE(a, b) LOOM_ABI_PASTE_(a, b)
#define LOOM_ABI_STRING_(x) #x
#define LOOM_ABI_STRING(x) LOOM_ABI_STRING_(x)
/// The name MLIR's C interface (`llvm.emit_c_interface`) gives `symbol`.
#define LOOM_ABI_CIFACE(symbol) LOOM_ABI_PASTE(_mlir_ciface_, symbol)

// ---- The runtime's hooks (runtime/src/RunContext, Profile, ThreadPool,
// collectives/RunCollectives) ----

/// C interface: `memref<?xi8> loom_rt_slot(i64 slot, i64 bytes)`: the
/// run's buffer `slot` of at least `bytes` (slot 0: the arena of the
/// compiler's memory plan).
#define LOOM_ABI_RT_SLOT loom_rt_slot
/// `void loom_rt_fail(const char *message)`: a run-time check failed; the
/// run's status carries `message`, the code goes on with safe sizes.
#define LOOM_ABI_RT_FAIL loom_rt_fail
/// `void loom_rt_profile_begin(i64 id)` / `_end`: around kernel `id` (an
/// index into the CpuCode's kernel names) when profiling.
#define LOOM_ABI_RT_PROFILE_BEGIN loom_rt_profile_begin
#define LOOM_ABI_RT_PROFILE_END loom_rt_profile_end
/// `void loom_rt_parallel_for(void (*fn)(void *ctx, i64 lo, i64 hi),
/// void *ctx, i64 n, i64 grain)`: [0, n) in chunks of at least `grain`.
#define LOOM_ABI_RT_PARALLEL_FOR loom_rt_parallel_for
/// C interface, one pair per element type T (f32, f16, bf16, f64, i64,
/// i32, i8): `i64 loom_rt_collective_start_T(memref<*xT> in, memref<*xT>
/// out, i64 kind, i64 dtype, i64 op, i64 axes)` returns a handle that
/// `loom_rt_collective_wait_T(i64 handle, memref<*xT> in, memref<*xT>
/// out)` completes (docs/distributed.md).
#define LOOM_ABI_RT_COLLECTIVE_START_ loom_rt_collective_start_
#define LOOM_ABI_RT_COLLECTIVE_WAIT_ loom_rt_collective_wait_

// ---- The runtime's library kernels (runtime/src/cpu/Kernels.cpp) ----

/// C interface: `loom_cpu_matmul_f32(memref<*xf32> lhs, rhs, out, i64
/// flags)`, `out (+)= lhs x rhs` with loom::abi::MatmulFlags.
#define LOOM_ABI_CPU_MATMUL_F32 loom_cpu_matmul_f32
/// C interface: `loom_cpu_matmul_i8(memref<*xi8> lhs, rhs, memref<*xi32>
/// out, i32 lhsZero, i32 rhsZero, i64 flags)`, `out (+)= (lhs - lhsZero) x
/// (rhs - rhsZero)` exactly in i32, each operand signed 8-bit or, with its
/// flag, unsigned, with loom::abi::MatmulFlags.
#define LOOM_ABI_CPU_MATMUL_I8 loom_cpu_matmul_i8
/// C interface: `loom_cpu_conv2d_nchw_f32(memref<*xf32> in, filter, out,
/// bias, i64 strideH, strideW, dilationH, dilationW, padTop, padLeft,
/// padBottom, padRight, flags)`: `out (+)= conv(zero-padded in, filter)
/// [+ bias[f]]`, then [ReLU], with loom::abi::ConvFlags
/// (runtime/src/cpu/Convolution.cpp).
#define LOOM_ABI_CPU_CONV2D_NCHW_F32 loom_cpu_conv2d_nchw_f32
/// C interface: `loom_cpu_conv2d_i8(memref<*xi8> in, filter, memref<*xi32>
/// out, i32 inZero, filterZero, i64 strideH, strideW, dilationH, dilationW,
/// padTop, padLeft, padBottom, padRight, flags)`: `out (+)= conv(in -
/// inZero, filter - filterZero)` exactly in i32 (in [N, C, H, W], filter
/// grouped [G, O/G, C/G, kh, kw], out [N, O, Ho, Wo]), the padding holding
/// inZero, with loom::abi::IntegerConvFlags
/// (runtime/src/cpu/IntegerConvolution.cpp).
#define LOOM_ABI_CPU_CONV2D_I8 loom_cpu_conv2d_i8
/// C interface: `loom_cpu_maxpool2d_f32(memref<*xf32> in, out, i64
/// kernelH, kernelW, strideH, strideW, dilationH, dilationW, padTop,
/// padLeft, padBottom, padRight, flags)`: `out = max over the window of
/// (-inf-padded in)`, with loom::abi::PoolFlags
/// (runtime/src/cpu/Convolution.cpp).
#define LOOM_ABI_CPU_MAXPOOL2D_F32 loom_cpu_maxpool2d_f32

namespace loom::abi {

inline constexpr const char kRtSlot[] = LOOM_ABI_STRING(LOOM_ABI_RT_SLOT);
inline constexpr const char kRtFail[] = LOOM_ABI_STRING(LOOM_ABI_RT_FAIL);
inline constexpr const char kRtProfileBegin[] =
    LOOM_ABI_STRING(LOOM_ABI_RT_PROFILE_BEGIN);
inline constexpr const char kRtProfileEnd[] =
    LOOM_ABI_STRING(LOOM_ABI_RT_PROFILE_END);
inline constexpr const char kRtParallelFor[] =
    LOOM_ABI_STRING(LOOM_ABI_RT_PARALLEL_FOR);
/// Followed by the element type's suffix ("f32", ...).
inline constexpr const char kRtCollectiveStartPrefix[] =
    LOOM_ABI_STRING(LOOM_ABI_RT_COLLECTIVE_START_);
inline constexpr const char kRtCollectiveWaitPrefix[] =
    LOOM_ABI_STRING(LOOM_ABI_RT_COLLECTIVE_WAIT_);

/// Every library kernel's name starts with this (the profiler names a
/// kernel call by what follows it).
inline constexpr const char kCpuKernelPrefix[] = "loom_cpu_";
inline constexpr const char kCpuMatmulF32[] =
    LOOM_ABI_STRING(LOOM_ABI_CPU_MATMUL_F32);
inline constexpr const char kCpuMatmulI8[] =
    LOOM_ABI_STRING(LOOM_ABI_CPU_MATMUL_I8);
inline constexpr const char kCpuConv2dNchwF32[] =
    LOOM_ABI_STRING(LOOM_ABI_CPU_CONV2D_NCHW_F32);
inline constexpr const char kCpuConv2dI8[] =
    LOOM_ABI_STRING(LOOM_ABI_CPU_CONV2D_I8);
inline constexpr const char kCpuMaxPool2dF32[] =
    LOOM_ABI_STRING(LOOM_ABI_CPU_MAXPOOL2D_F32);

/// The `flags` of loom_cpu_matmul_f32, or-ed together.
enum MatmulFlags : int64_t {
  /// lhs holds [k, m] (transposed).
  kMatmulTransposeLhs = 1,
  /// rhs holds [n, k] (transposed).
  kMatmulTransposeRhs = 2,
  /// lhs is a vector [k] (no m dim).
  kMatmulLhsVector = 4,
  /// rhs is a vector [k] (no n dim).
  kMatmulRhsVector = 8,
  /// out is overwritten (=) instead of accumulated into (+=): the
  /// generated code drops the zero fill before the call.
  kMatmulOverwrite = 16,
  /// loom_cpu_matmul_i8 only: lhs holds unsigned 8-bit integers (else
  /// signed).
  kMatmulLhsUnsigned = 32,
  /// loom_cpu_matmul_i8 only: rhs holds unsigned 8-bit integers.
  kMatmulRhsUnsigned = 64,
  /// rhs is a weight of the artifact (read only while it is loaded): the
  /// kernel may keep it packed for the next calls.
  kMatmulConstantRhs = 128,
};

/// The `flags` of loom_cpu_conv2d_i8, or-ed together.
enum IntegerConvFlags : int64_t {
  /// out is overwritten (=) instead of accumulated into (+=).
  kIntegerConvOverwrite = 1,
  /// The filter is a weight of the artifact: the kernel may keep it
  /// reordered for the next calls.
  kIntegerConvConstantFilter = 2,
  /// in holds unsigned 8-bit integers (else signed).
  kIntegerConvInUnsigned = 4,
  /// filter holds unsigned 8-bit integers (else signed).
  kIntegerConvFilterUnsigned = 8,
  /// `in` holds its [N, C, H, W] elements in NHWC order (dense; its
  /// strides are not read), as kConvInNhwc.
  kIntegerConvInNhwc = 16,
  /// `out` holds its elements in NHWC order, as kConvOutNhwc.
  kIntegerConvOutNhwc = 32,
};

/// The `flags` of loom_cpu_conv2d_nchw_f32, or-ed together.
enum ConvFlags : int64_t {
  /// out is overwritten (=) instead of accumulated into (+=): the
  /// generated code drops the zero fill before the call.
  kConvOverwrite = 1,
  /// The filter is a weight of the artifact (read only while it is
  /// loaded): the kernel may keep it reordered for the next calls.
  kConvConstantFilter = 2,
  /// bias[f] (a [F] tensor) is added to every output of channel f; without
  /// this flag the bias operand is not read.
  kConvBias = 4,
  /// The result goes through max(x, 0), after the bias and (without
  /// kConvOverwrite) the sum into out: conv + residual, then ReLU.
  kConvRelu = 8,
  /// `in` holds its [N, C, H, W] elements in NHWC order (dense; its
  /// strides are not read): the compiler chose that layout for the buffer
  /// (CpuLibraryCallsPass), and every other reader and writer of it agrees.
  kConvInNhwc = 16,
  /// `out` holds its elements in NHWC order (dense; its strides are not
  /// read), likewise.
  kConvOutNhwc = 32,
};

/// The `flags` of loom_cpu_maxpool2d_f32, or-ed together.
enum PoolFlags : int64_t {
  /// `in` holds its [N, C, H, W] elements in NHWC order (as kConvInNhwc).
  kPoolInNhwc = 1,
  /// `out` holds its elements in NHWC order.
  kPoolOutNhwc = 2,
  /// The result goes through max(x, 0).
  kPoolRelu = 4,
};

/// The `kind` of a collective call.
enum CollectiveKind : int64_t {
  kAllReduce = 0,
  kAllGather = 1,
  kReduceScatter = 2,
  kBroadcast = 3,
  kAllSlice = 4,
};
inline constexpr int64_t kNumCollectiveKinds = 5;

/// The `op` of an all-reduce or a reduce-scatter (a broadcast's `op` is
/// its root's index in the group).
enum ReductionOp : int64_t {
  kReduceSum = 0,
  kReduceMax = 1,
  kReduceMin = 2,
  kReduceProduct = 3,
};

/// A collective's `dtype` is the element type's loom_dtype
/// (loom/common/DType.h); its `axes` the mesh axes of the group, bit a for
/// axis a.

} // namespace loom::abi

#endif // LOOM_COMMON_CODEGENABI_H
