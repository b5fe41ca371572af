//===- CudaApi.cpp - libcuda and cuBLASLt through dlopen ------------------===//

#include "runtime/src/cuda/CudaApi.h"

#include "loom/common/DynamicLibrary.h"

#include <mutex>
#include <utility>

namespace loom::cuda {

namespace {

/// The symbols a driver older than the headers' may export under the
/// unversioned name only (cuEventElapsedTime_v2 came with CUDA 12.8):
/// `name` then, clearing `error`.
template <class F>
bool olderSymbol(void *handle, const char *name, const char *symbol, F &slot,
                 std::string &error) {
  if (std::string(symbol) != "cuEventElapsedTime_v2" ||
      !dl::lookup(handle, name, slot, "libcuda.so.1", error))
    return false;
  error.clear();
  return true;
}

} // namespace

const Driver *driver(std::string &error) {
  static Driver d;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string why;
    void *h = dl::openFirst("LOOM_LIBCUDA", {"libcuda.so.1"}, why);
    if (!h) {
      failure = "no CUDA driver (" + why + ")";
      return;
    }
#define LOOM_LOOKUP(name, symbol, ret, params)                                 \
  if (!dl::lookup(h, #symbol, d.name, "libcuda.so.1", failure) &&              \
      !olderSymbol(h, #name, #symbol, d.name, failure))                        \
    return;
    LOOM_CUDA_DRIVER_SYMBOLS(LOOM_LOOKUP)
#undef LOOM_LOOKUP
    d.handle = h;
  });
  error = failure;
  return d.handle ? &d : nullptr;
}

const CublasLt *cublasLt(std::string &error) {
  static CublasLt c;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string why;
    void *h = dl::openFirst("LOOM_LIBCUBLASLT",
                            {"libcublasLt.so.13", "libcublasLt.so.12",
                             "libcublasLt.so",
                             "/usr/local/cuda/lib64/libcublasLt.so"},
                            why);
    if (!h) {
      failure = "no cuBLASLt (" + why + ")";
      return;
    }
#define LOOM_LOOKUP(name, ret, params)                                         \
  if (!dl::lookup(h, #name, c.name, "libcublasLt", failure))                   \
    return;
    LOOM_CUBLASLT_SYMBOLS(LOOM_LOOKUP)
#undef LOOM_LOOKUP
    c.handle = h;
  });
  error = failure;
  return c.handle ? &c : nullptr;
}

std::string resultName(const Driver &driver, CUresult result) {
  const char *name = nullptr;
  if (driver.cuGetErrorName(result, &name) != 0 || !name) {
    // The driver could not say (the stub library answers nothing): the
    // names of the results a load or a launch usually meets.
    static const std::pair<CUresult, const char *> known[] = {
        {1, "CUDA_ERROR_INVALID_VALUE"},
        {2, "CUDA_ERROR_OUT_OF_MEMORY"},
        {3, "CUDA_ERROR_NOT_INITIALIZED"},
        {34, "CUDA_ERROR_STUB_LIBRARY"},
        {35, "CUDA_ERROR_INSUFFICIENT_DRIVER"},
        {100, "CUDA_ERROR_NO_DEVICE"},
        {209, "CUDA_ERROR_NO_BINARY_FOR_GPU"},
        {218, "CUDA_ERROR_INVALID_PTX"},
        {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"},
        {500, "CUDA_ERROR_NOT_FOUND"},
        {700, "CUDA_ERROR_ILLEGAL_ADDRESS"},
        {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"}};
    name = "CUDA_ERROR_UNKNOWN";
    for (const auto &[code, text] : known)
      if (code == result)
        name = text;
  }
  return std::string(name) + " (" + std::to_string(result) + ")";
}

std::string statusName(const CublasLt &lt, cublasStatus_t status) {
  const char *name = lt.cublasLtGetStatusName(status);
  return std::string(name ? name : "CUBLAS_STATUS_UNKNOWN") + " (" +
         std::to_string(status) + ")";
}

} // namespace loom::cuda
