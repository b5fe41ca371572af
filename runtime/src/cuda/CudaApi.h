//===- CudaApi.h - libcuda and cuBLASLt through dlopen ----------*- C++ -*-===//
//
// The CUDA libraries are never linked: each is opened with dlopen and its
// functions are looked up by name from one X-macro table per library, so
// the runtime builds, loads and runs its CPU path on machines without
// them, and says which library or symbol is missing when they are absent.
// The types are the few the runtime passes (opaque handles, enums as int),
// declared here so that no CUDA header is needed to build. NVRTC, which
// loomc needs too, is loaded by loom/common/Nvrtc.h.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CUDA_CUDAAPI_H
#define LOOM_RUNTIME_CUDA_CUDAAPI_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace loom::cuda {

// Driver API types (cuda.h).
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;
using CUgraph = struct CUgraph_st *;
using CUgraphExec = struct CUgraphExec_st *;
// cuBLASLt (cublasLt.h). The descriptors' struct tags are Loom's own:
// cublasLt.h names unnamed structs with typedefs, which no struct tag may
// repeat (CudaHeaderTest includes both).
using cublasStatus_t = int;
using cublasLtHandle_t = struct cublasLtContext *;
using cublasLtMatmulDesc_t = struct LtMatmulDesc *;
using cublasLtMatrixLayout_t = struct LtMatrixLayout *;
using cublasLtMatmulPreference_t = struct LtMatmulPreference *;
/// cublasLtMatmulHeuristicResult_t: the algorithm (64 bytes), workspace
/// size, status, waves count, 4 reserved ints.
struct cublasLtMatmulHeuristicResult_t {
  uint64_t algo[8];
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
};

/// The enum values the runtime passes, as cuda.h, library_types.h,
/// cublas_api.h and cublasLt.h define them (CudaHeaderTest checks each
/// against the headers where the CUDA toolkit is installed).
namespace api {
inline constexpr CUresult kSuccess = 0;                // CUDA_SUCCESS
inline constexpr CUresult kErrorNotFound = 500;        // CUDA_ERROR_NOT_FOUND
inline constexpr int kAttrComputeCapabilityMajor = 75; // CU_DEVICE_ATTRIBUTE_
inline constexpr int kAttrComputeCapabilityMinor = 76; //   COMPUTE_CAPABILITY_*
inline constexpr int kAttrMaxSharedPerBlockOptin =
    97; // ..._MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
inline constexpr int kFuncAttrMaxDynamicShared =
    8; // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
inline constexpr unsigned kStreamNonBlocking = 1; // CU_STREAM_NON_BLOCKING
inline constexpr unsigned kEventDefault = 0;      // CU_EVENT_DEFAULT
inline constexpr int kCaptureModeRelaxed = 2; // CU_STREAM_CAPTURE_MODE_RELAXED
inline constexpr cublasStatus_t kCublasSuccess = 0; // CUBLAS_STATUS_SUCCESS
inline constexpr int kOpN = 0, kOpT = 1;            // CUBLAS_OP_N, CUBLAS_OP_T
inline constexpr int kComputeF32 = 68,
                     kComputeF64 = 70;         // CUBLAS_COMPUTE_32F, _64F
inline constexpr int kComputeF32FastTf32 = 77; // CUBLAS_COMPUTE_32F_FAST_TF32
inline constexpr int kR32F = 0, kR64F = 1, kR16F = 2, kR16BF = 14; // CUDA_R_*
inline constexpr int kR8I = 3, kR32I = 10; // CUDA_R_8I, CUDA_R_32I
inline constexpr int kComputeI32 = 72;     // CUBLAS_COMPUTE_32I
// cuBLASLt's int8 GEMM (IMMA, regular ordering): "TN" only (its A
// transposed, its B not), m, k and the leading dims multiples of this,
// pointers 4-byte aligned.
inline constexpr int64_t kInt8Multiple = 4;
inline constexpr int kDescTransA = 3, kDescTransB = 4; // CUBLASLT_MATMUL_DESC_*
inline constexpr int kDescEpilogue = 7, kDescBiasPointer = 8;
inline constexpr uint32_t kEpilogueDefault = 1,
                          kEpilogueRelu = 2, // CUBLASLT_EPILOGUE_*
    kEpilogueBias = 4, kEpilogueReluBias = 6, kEpilogueGelu = 32,
                          kEpilogueGeluBias = 36;
inline constexpr int kLayoutBatchCount = 5,
                     kLayoutBatchStride = 6; // CUBLASLT_MATRIX_LAYOUT_*
inline constexpr int kPrefMaxWorkspace =
    1; // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES
} // namespace api

// X(name, return type, parameters); the driver's table also names the
// exported symbol (cuda.h maps cuMemAlloc to cuMemAlloc_v2, ...; CUDA 13's
// maps cuEventElapsedTime to cuEventElapsedTime_v2, which drivers before
// 12.8 lack: those get the unversioned symbol, see CudaApi.cpp).
#define LOOM_CUDA_DRIVER_SYMBOLS(X)                                            \
  X(cuInit, cuInit, CUresult, (unsigned))                                      \
  X(cuDriverGetVersion, cuDriverGetVersion, CUresult, (int *))                 \
  X(cuDeviceGetCount, cuDeviceGetCount, CUresult, (int *))                     \
  X(cuDeviceGet, cuDeviceGet, CUresult, (CUdevice *, int))                     \
  X(cuDeviceGetAttribute, cuDeviceGetAttribute, CUresult,                      \
    (int *, int, CUdevice))                                                    \
  X(cuDeviceGetName, cuDeviceGetName, CUresult, (char *, int, CUdevice))       \
  X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, CUresult,              \
    (CUcontext *, CUdevice))                                                   \
  X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2, CUresult,         \
    (CUdevice))                                                                \
  X(cuCtxSetCurrent, cuCtxSetCurrent, CUresult, (CUcontext))                   \
  X(cuGetErrorName, cuGetErrorName, CUresult, (CUresult, const char **))       \
  X(cuStreamCreate, cuStreamCreate, CUresult, (CUstream *, unsigned))          \
  X(cuStreamDestroy, cuStreamDestroy_v2, CUresult, (CUstream))                 \
  X(cuStreamSynchronize, cuStreamSynchronize, CUresult, (CUstream))            \
  X(cuMemAlloc, cuMemAlloc_v2, CUresult, (CUdeviceptr *, size_t))              \
  X(cuMemFree, cuMemFree_v2, CUresult, (CUdeviceptr))                          \
  X(cuMemAllocHost, cuMemAllocHost_v2, CUresult, (void **, size_t))            \
  X(cuMemFreeHost, cuMemFreeHost, CUresult, (void *))                          \
  X(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2, CUresult,                         \
    (CUdeviceptr, const void *, size_t, CUstream))                             \
  X(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2, CUresult,                         \
    (void *, CUdeviceptr, size_t, CUstream))                                   \
  X(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2, CUresult,                         \
    (CUdeviceptr, CUdeviceptr, size_t, CUstream))                              \
  X(cuMemsetD8Async, cuMemsetD8Async, CUresult,                                \
    (CUdeviceptr, unsigned char, size_t, CUstream))                            \
  X(cuEventCreate, cuEventCreate, CUresult, (CUevent *, unsigned))             \
  X(cuEventDestroy, cuEventDestroy_v2, CUresult, (CUevent))                    \
  X(cuEventRecord, cuEventRecord, CUresult, (CUevent, CUstream))               \
  X(cuEventSynchronize, cuEventSynchronize, CUresult, (CUevent))               \
  X(cuEventElapsedTime, cuEventElapsedTime_v2, CUresult,                       \
    (float *, CUevent, CUevent))                                               \
  X(cuFuncSetAttribute, cuFuncSetAttribute, CUresult, (CUfunction, int, int))  \
  X(cuModuleLoadData, cuModuleLoadData, CUresult, (CUmodule *, const void *))  \
  X(cuModuleUnload, cuModuleUnload, CUresult, (CUmodule))                      \
  X(cuModuleGetFunction, cuModuleGetFunction, CUresult,                        \
    (CUfunction *, CUmodule, const char *))                                    \
  X(cuLaunchKernel, cuLaunchKernel, CUresult,                                  \
    (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,   \
     unsigned, CUstream, void **, void **))                                    \
  X(cuStreamQuery, cuStreamQuery, CUresult, (CUstream))                        \
  X(cuStreamBeginCapture, cuStreamBeginCapture_v2, CUresult, (CUstream, int))  \
  X(cuStreamEndCapture, cuStreamEndCapture, CUresult, (CUstream, CUgraph *))   \
  X(cuGraphInstantiate, cuGraphInstantiateWithFlags, CUresult,                 \
    (CUgraphExec *, CUgraph, unsigned long long))                              \
  X(cuGraphLaunch, cuGraphLaunch, CUresult, (CUgraphExec, CUstream))           \
  X(cuGraphExecDestroy, cuGraphExecDestroy, CUresult, (CUgraphExec))           \
  X(cuGraphDestroy, cuGraphDestroy, CUresult, (CUgraph))                       \
  X(cuPointerGetAttribute, cuPointerGetAttribute, CUresult,                    \
    (void *, int, CUdeviceptr))

#define LOOM_CUBLASLT_SYMBOLS(X)                                               \
  X(cublasLtGetStatusName, const char *, (cublasStatus_t))                     \
  X(cublasLtCreate, cublasStatus_t, (cublasLtHandle_t *))                      \
  X(cublasLtDestroy, cublasStatus_t, (cublasLtHandle_t))                       \
  X(cublasLtMatmulDescCreate, cublasStatus_t,                                  \
    (cublasLtMatmulDesc_t *, int, int))                                        \
  X(cublasLtMatmulDescDestroy, cublasStatus_t, (cublasLtMatmulDesc_t))         \
  X(cublasLtMatmulDescSetAttribute, cublasStatus_t,                            \
    (cublasLtMatmulDesc_t, int, const void *, size_t))                         \
  X(cublasLtMatrixLayoutCreate, cublasStatus_t,                                \
    (cublasLtMatrixLayout_t *, int, uint64_t, uint64_t, int64_t))              \
  X(cublasLtMatrixLayoutDestroy, cublasStatus_t, (cublasLtMatrixLayout_t))     \
  X(cublasLtMatrixLayoutSetAttribute, cublasStatus_t,                          \
    (cublasLtMatrixLayout_t, int, const void *, size_t))                       \
  X(cublasLtMatmulPreferenceCreate, cublasStatus_t,                            \
    (cublasLtMatmulPreference_t *))                                            \
  X(cublasLtMatmulPreferenceDestroy, cublasStatus_t,                           \
    (cublasLtMatmulPreference_t))                                              \
  X(cublasLtMatmulPreferenceSetAttribute, cublasStatus_t,                      \
    (cublasLtMatmulPreference_t, int, const void *, size_t))                   \
  X(cublasLtMatmulAlgoGetHeuristic, cublasStatus_t,                            \
    (cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,           \
     cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,   \
     cublasLtMatmulPreference_t, int, cublasLtMatmulHeuristicResult_t *,       \
     int *))                                                                   \
  X(cublasLtMatmul, cublasStatus_t,                                            \
    (cublasLtHandle_t, cublasLtMatmulDesc_t, const void *, const void *,       \
     cublasLtMatrixLayout_t, const void *, cublasLtMatrixLayout_t,             \
     const void *, const void *, cublasLtMatrixLayout_t, void *,               \
     cublasLtMatrixLayout_t, const void *, void *, size_t, CUstream))

#define LOOM_CUDA_DECLARE(name, ret, params) ret(*name) params = nullptr;
#define LOOM_CUDA_DECLARE_DRIVER(name, symbol, ret, params)                    \
  ret(*name) params = nullptr;

/// One library opened with dlopen and its functions.
struct Driver {
  void *handle = nullptr;
  LOOM_CUDA_DRIVER_SYMBOLS(LOOM_CUDA_DECLARE_DRIVER)
};
struct CublasLt {
  void *handle = nullptr;
  LOOM_CUBLASLT_SYMBOLS(LOOM_CUDA_DECLARE)
};
#undef LOOM_CUDA_DECLARE
#undef LOOM_CUDA_DECLARE_DRIVER

/// The process's libraries, opened on first use (thread-safe) and kept
/// open. Each returns nullptr with `error` set when its library or one of
/// its symbols is missing: "no CUDA driver (dlopen libcuda.so.1: ...)".
/// The library names can be overridden with LOOM_LIBCUDA and
/// LOOM_LIBCUBLASLT (a path or a soname), which the tests use to
/// check the error paths.
const Driver *driver(std::string &error);
const CublasLt *cublasLt(std::string &error);

/// "CUDA_ERROR_OUT_OF_MEMORY (2)" for a driver result.
std::string resultName(const Driver &driver, CUresult result);
/// "CUBLAS_STATUS_NOT_SUPPORTED (15)" for a cuBLASLt status.
std::string statusName(const CublasLt &lt, cublasStatus_t status);

} // namespace loom::cuda

#endif // LOOM_RUNTIME_CUDA_CUDAAPI_H
