//===- CudaApi.h - libcuda, libnvrtc and cuBLASLt through dlopen -*- C++
//-*-===//
//
// The CUDA libraries are never linked: each is opened with dlopen and its
// functions are looked up by name from one X-macro table per library, so
// the runtime builds, loads and runs its CPU path on machines without
// them, and says which library or symbol is missing when they are absent.
// The types are the few the runtime passes (opaque handles, enums as int),
// declared here so that no CUDA header is needed to build.
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
// NVRTC (nvrtc.h).
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram *;
// cuBLASLt (cublasLt.h).
using cublasStatus_t = int;
using cublasLtHandle_t = struct cublasLtContext *;
using cublasLtMatmulDesc_t = struct cublasLtMatmulDescOpaque_t *;
using cublasLtMatrixLayout_t = struct cublasLtMatrixLayoutOpaque_t *;
using cublasLtMatmulPreference_t = struct cublasLtMatmulPreferenceOpaque_t *;
/// cublasLtMatmulHeuristicResult_t: the algorithm (64 bytes), workspace
/// size, status, waves count, 4 reserved ints.
struct cublasLtMatmulHeuristicResult_t {
  uint64_t algo[8];
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
};

// X(name, return type, parameters); the driver's table also names the
// exported symbol (cuda.h maps cuMemAlloc to cuMemAlloc_v2, ...).
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
  X(cuMemsetD8Async, cuMemsetD8Async, CUresult,                                \
    (CUdeviceptr, unsigned char, size_t, CUstream))                            \
  X(cuModuleLoadData, cuModuleLoadData, CUresult, (CUmodule *, const void *))  \
  X(cuModuleUnload, cuModuleUnload, CUresult, (CUmodule))                      \
  X(cuModuleGetFunction, cuModuleGetFunction, CUresult,                        \
    (CUfunction *, CUmodule, const char *))                                    \
  X(cuLaunchKernel, cuLaunchKernel, CUresult,                                  \
    (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,   \
     unsigned, CUstream, void **, void **))                                    \
  X(cuStreamQuery, cuStreamQuery, CUresult, (CUstream))                        \
  X(cuPointerGetAttribute, cuPointerGetAttribute, CUresult,                    \
    (void *, int, CUdeviceptr))

#define LOOM_NVRTC_SYMBOLS(X)                                                  \
  X(nvrtcVersion, nvrtcResult, (int *, int *))                                 \
  X(nvrtcGetErrorString, const char *, (nvrtcResult))                          \
  X(nvrtcCreateProgram, nvrtcResult,                                           \
    (nvrtcProgram *, const char *, const char *, int, const char *const *,     \
     const char *const *))                                                     \
  X(nvrtcDestroyProgram, nvrtcResult, (nvrtcProgram *))                        \
  X(nvrtcCompileProgram, nvrtcResult,                                          \
    (nvrtcProgram, int, const char *const *))                                  \
  X(nvrtcGetProgramLogSize, nvrtcResult, (nvrtcProgram, size_t *))             \
  X(nvrtcGetProgramLog, nvrtcResult, (nvrtcProgram, char *))                   \
  X(nvrtcGetCUBINSize, nvrtcResult, (nvrtcProgram, size_t *))                  \
  X(nvrtcGetCUBIN, nvrtcResult, (nvrtcProgram, char *))

#define LOOM_CUBLASLT_SYMBOLS(X)                                               \
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
struct Nvrtc {
  void *handle = nullptr;
  LOOM_NVRTC_SYMBOLS(LOOM_CUDA_DECLARE)
  /// major * 1000 + minor * 10, as CUDA numbers versions.
  int version = 0;
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
/// The library names can be overridden with LOOM_LIBCUDA, LOOM_LIBNVRTC
/// and LOOM_LIBCUBLASLT (a path or a soname), which the tests use to
/// check the error paths.
const Driver *driver(std::string &error);
const Nvrtc *nvrtc(std::string &error);
const CublasLt *cublasLt(std::string &error);

/// "CUDA_ERROR_OUT_OF_MEMORY (2)" for a driver result.
std::string resultName(const Driver &driver, CUresult result);

} // namespace loom::cuda

#endif // LOOM_RUNTIME_CUDA_CUDAAPI_H
