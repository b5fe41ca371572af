//===- SimDriver.cpp - the driver and cuBLASLt tables on the host ---------===//
//
// The functions of CudaApi.h's tables, for the CUDA simulator (CudaSim.h).
// One operation at a time (a process-wide lock): the compiled kernels keep
// their scheduler in globals, and streams run what is issued at once.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/cuda/sim/CudaSim.h"

#include <cblas.h>

#include <chrono>
#include <cmath>
#include <csetjmp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <pthread.h>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

// The opaque handles of CudaApi.h, defined here.
namespace loom::cuda {
struct CUctx_st {};
struct CUmod_st {
  void *handle = nullptr;
};
struct CUfunc_st {
  int (*entry)(void **, const unsigned *, const unsigned *) = nullptr;
  const char *(*error)() = nullptr;
  std::string name;
};
struct CUstream_st {
  bool capturing = false;
  std::vector<std::function<int()>> captured;
};
struct CUevent_st {
  std::chrono::steady_clock::time_point at;
  bool recorded = false;
};
struct CUgraph_st {
  std::vector<std::function<int()>> ops;
};
struct CUgraphExec_st {
  std::vector<std::function<int()>> ops;
};
struct cublasLtContext {};
struct LtMatmulDesc {
  int compute = 0, scale = 0;
  int32_t transA = 0, transB = 0;
  uint32_t epilogue = 1;
  const void *bias = nullptr;
};
struct LtMatrixLayout {
  int type = 0;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
  int32_t batch = 1;
  int64_t stride = 0;
};
struct LtMatmulPreference {};

} // namespace loom::cuda

namespace loom::cuda::sim {
namespace {

// Results (cuda.h).
constexpr CUresult kInvalidValue = 1, kOutOfMemory = 2, kInvalidImage = 200,
                   kInvalidHandle = 400, kIllegalAddress = 700,
                   kLaunchFailed = 719;
constexpr cublasStatus_t kNotSupported = 15, kInvalid = 7;

std::mutex lock;
/// The message of the last failure, returned by cuGetErrorName.
std::string lastMessage;
CUctx_st context;

/// What the process asked of the simulator (printed at exit with
/// LOOM_CUDA_SIM_STATS=1): a test counts a training step's copies.
struct Stats {
  uint64_t launches = 0, matmuls = 0;
  uint64_t copies[3] = {0, 0, 0}, bytes[3] = {0, 0, 0}; // HtoD, DtoH, DtoD
} stats;

void printStats() {
  std::fprintf(
      stderr,
      "cuda-sim: %llu kernel launches, %llu matmuls; host to device "
      "%llu copies %llu bytes; device to host %llu copies %llu "
      "bytes; device to device %llu copies %llu bytes\n",
      (unsigned long long)stats.launches, (unsigned long long)stats.matmuls,
      (unsigned long long)stats.copies[0], (unsigned long long)stats.bytes[0],
      (unsigned long long)stats.copies[1], (unsigned long long)stats.bytes[1],
      (unsigned long long)stats.copies[2], (unsigned long long)stats.bytes[2]);
}

CUresult failWith(CUresult code, const std::string &message) {
  lastMessage = message;
  return code;
}

// ---- memory ----------------------------------------------------------------

/// A device allocation: `bytes` at `data`, which ends at an unmapped page.
struct Allocation {
  char *base = nullptr; // the mapping
  size_t mapped = 0;
  char *data = nullptr;
  size_t bytes = 0;
};
std::map<uintptr_t, Allocation> allocations; // by data

CUresult memAlloc(CUdeviceptr *out, size_t bytes) {
  std::lock_guard<std::mutex> g(lock);
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t rounded = (bytes + 255) / 256 * 256;
  size_t body = (rounded + page - 1) / page * page;
  size_t mapped = body + page;
  void *p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return failWith(kOutOfMemory, "CUDA_ERROR_OUT_OF_MEMORY: the simulator "
                                  "cannot map " +
                                      std::to_string(bytes) + " bytes");
  char *base = static_cast<char *>(p);
  mprotect(base + body, page, PROT_NONE);
  Allocation a{base, mapped, base + body - rounded, bytes};
  // Never written: 0xff bytes, NaN in every float type.
  std::memset(a.data, 0xff, rounded);
  allocations[reinterpret_cast<uintptr_t>(a.data)] = a;
  *out = reinterpret_cast<CUdeviceptr>(a.data);
  return 0;
}

CUresult memFree(CUdeviceptr p) {
  std::lock_guard<std::mutex> g(lock);
  auto it = allocations.find(static_cast<uintptr_t>(p));
  if (it == allocations.end())
    return failWith(kInvalidValue, "CUDA_ERROR_INVALID_VALUE: cuMemFree of "
                                   "an address the simulator did not give");
  munmap(it->second.base, it->second.mapped);
  allocations.erase(it);
  return 0;
}

/// "N bytes past the end of a device allocation of M bytes" for `address`.
std::string describe(uintptr_t address) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "0x%llx",
                static_cast<unsigned long long>(address));
  std::string text = buf;
  for (const auto &[start, a] : allocations) {
    uintptr_t base = reinterpret_cast<uintptr_t>(a.base), end = base + a.mapped;
    if (address >= base && address < end) {
      if (address >= start + a.bytes)
        return text + ", " + std::to_string(address - start - a.bytes) +
               " bytes past the end of a device allocation of " +
               std::to_string(a.bytes) + " bytes";
      return text + ", before a device allocation of " +
             std::to_string(a.bytes) + " bytes";
    }
  }
  return text + ", outside every device allocation (or a thread's stack "
                "overflowed)";
}

// ---- streams ---------------------------------------------------------------

/// Runs `op` now, or records it when `stream` is capturing.
CUresult submit(CUstream stream, std::function<int()> op) {
  if (stream && stream->capturing) {
    stream->captured.push_back(std::move(op));
    return 0;
  }
  return op();
}

// ---- kernels ---------------------------------------------------------------

// A kernel reading or writing an unmapped page: the handler jumps back to
// the launch, which names the kernel and the address.
// One launch at a time (the lock); `kernelThread` is the one running it:
// a fault on another thread is not the kernel's.
sigjmp_buf faultJump;
volatile sig_atomic_t inKernel = 0;
pthread_t kernelThread;
volatile uintptr_t faultAddress = 0;

void onFault(int sig, siginfo_t *info, void *) {
  if (!inKernel || !pthread_equal(pthread_self(), kernelThread)) {
    signal(sig, SIG_DFL); // not ours: the default action, on return
    return;
  }
  faultAddress = reinterpret_cast<uintptr_t>(info->si_addr);
  inKernel = 0;
  siglongjmp(faultJump, 1);
}

int runKernel(CUfunction f, const unsigned grid[3], const unsigned block[3],
              void **params) {
  thread_local std::vector<char> altStack(1 << 16);
  stack_t alt{}, oldAlt{};
  alt.ss_sp = altStack.data();
  alt.ss_size = altStack.size();
  sigaltstack(&alt, &oldAlt);
  struct sigaction action {
  }, oldSegv{}, oldBus{};
  action.sa_sigaction = onFault;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  sigaction(SIGSEGV, &action, &oldSegv);
  sigaction(SIGBUS, &action, &oldBus);
  int rc = 0;
  if (sigsetjmp(faultJump, 1) == 0) {
    kernelThread = pthread_self();
    inKernel = 1;
    rc = f->entry(params, grid, block) == 0 ? 0 : kLaunchFailed;
    inKernel = 0;
    if (rc)
      lastMessage = std::string("CUDA_ERROR_LAUNCH_FAILED: ") + f->error();
  } else {
    rc = kIllegalAddress;
    lastMessage = "CUDA_ERROR_ILLEGAL_ADDRESS: kernel " + f->name +
                  " read or wrote address " + describe(faultAddress);
  }
  sigaction(SIGSEGV, &oldSegv, nullptr);
  sigaction(SIGBUS, &oldBus, nullptr);
  sigaltstack(&oldAlt, nullptr);
  return rc;
}

// ---- the driver's functions ------------------------------------------------

CUresult init(unsigned) { return 0; }
CUresult driverGetVersion(int *v) {
  *v = 13000;
  return 0;
}
CUresult deviceGetCount(int *n) {
  *n = 1;
  return 0;
}
CUresult deviceGet(CUdevice *d, int ordinal) {
  if (ordinal != 0)
    return failWith(kInvalidValue, "CUDA_ERROR_INVALID_DEVICE: the simulator "
                                   "has device 0 only");
  *d = 0;
  return 0;
}
CUresult deviceGetAttribute(int *v, int attr, CUdevice) {
  // An sm_90 device: the arch the artifacts are compiled for by default.
  *v = attr == api::kAttrComputeCapabilityMajor   ? 9
       : attr == api::kAttrComputeCapabilityMinor ? 0
       : attr == api::kAttrMaxSharedPerBlockOptin ? 232448
                                                  : 0;
  return 0;
}
CUresult deviceGetName(char *name, int size, CUdevice) {
  std::snprintf(name, static_cast<size_t>(size), "%s",
                "Loom CUDA simulator (the host)");
  return 0;
}
CUresult primaryCtxRetain(CUcontext *c, CUdevice) {
  *c = &context;
  return 0;
}
CUresult primaryCtxRelease(CUdevice) { return 0; }
CUresult ctxSetCurrent(CUcontext) { return 0; }
CUresult getErrorName(CUresult r, const char **name) {
  std::lock_guard<std::mutex> g(lock);
  thread_local std::string copy;
  copy = r == 0 ? "CUDA_SUCCESS" : lastMessage;
  if (copy.empty())
    return kInvalidValue;
  *name = copy.c_str();
  return 0;
}
CUresult streamCreate(CUstream *s, unsigned) {
  *s = new CUstream_st;
  return 0;
}
CUresult streamDestroy(CUstream s) {
  delete s;
  return 0;
}
CUresult streamSynchronize(CUstream) { return 0; }
CUresult streamQuery(CUstream) { return 0; }
CUresult memAllocHost(void **p, size_t bytes) {
  *p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  return *p ? 0 : kOutOfMemory;
}
CUresult memFreeHost(void *p) {
  std::free(p);
  return 0;
}
CUresult copy(int kind, void *to, const void *from, size_t bytes, CUstream s) {
  std::lock_guard<std::mutex> g(lock);
  return submit(s, [=] {
    ++stats.copies[kind];
    stats.bytes[kind] += bytes;
    std::memmove(to, from, bytes);
    return 0;
  });
}
CUresult memcpyHtoD(CUdeviceptr to, const void *from, size_t n, CUstream s) {
  return copy(0, reinterpret_cast<void *>(to), from, n, s);
}
CUresult memcpyDtoH(void *to, CUdeviceptr from, size_t n, CUstream s) {
  return copy(1, to, reinterpret_cast<const void *>(from), n, s);
}
CUresult memcpyDtoD(CUdeviceptr to, CUdeviceptr from, size_t n, CUstream s) {
  return copy(2, reinterpret_cast<void *>(to),
              reinterpret_cast<const void *>(from), n, s);
}
CUresult memsetD8(CUdeviceptr p, unsigned char v, size_t n, CUstream s) {
  std::lock_guard<std::mutex> g(lock);
  return submit(s, [=] {
    std::memset(reinterpret_cast<void *>(p), v, n);
    return 0;
  });
}
CUresult eventCreate(CUevent *e, unsigned) {
  *e = new CUevent_st;
  return 0;
}
CUresult eventDestroy(CUevent e) {
  delete e;
  return 0;
}
CUresult eventRecord(CUevent e, CUstream s) {
  std::lock_guard<std::mutex> g(lock);
  return submit(s, [e] {
    e->at = std::chrono::steady_clock::now();
    e->recorded = true;
    return 0;
  });
}
CUresult eventSynchronize(CUevent) { return 0; }
CUresult eventElapsedTime(float *ms, CUevent a, CUevent b) {
  if (!a->recorded || !b->recorded)
    return failWith(kInvalidHandle, "CUDA_ERROR_INVALID_HANDLE: an event "
                                    "not recorded");
  *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
  return 0;
}
CUresult funcSetAttribute(CUfunction, int, int) { return 0; }
CUresult moduleLoadData(CUmodule *m, const void *image) {
  std::lock_guard<std::mutex> g(lock);
  const char *path = static_cast<const char *>(image);
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return failWith(kInvalidImage,
                    std::string("CUDA_ERROR_INVALID_IMAGE: the simulator "
                                "cannot load ") +
                        path + ": " + dlerror());
  // A temporary directory's library (no cache) goes once loaded.
  std::string p = path;
  size_t slash = p.rfind('/');
  if (slash != std::string::npos &&
      p.find("/loom-sim-", slash == 0 ? 0 : p.rfind('/', slash - 1)) !=
          std::string::npos) {
    std::remove(path);
  }
  *m = new CUmod_st{h};
  return 0;
}
CUresult moduleUnload(CUmodule m) {
  // The library stays loaded: a function of it may still be referenced
  // by a captured graph until the executor destroys that.
  delete m;
  return 0;
}
CUresult moduleGetFunction(CUfunction *f, CUmodule m, const char *name) {
  std::lock_guard<std::mutex> g(lock);
  void *entry =
      dlsym(m->handle, ("loom_sim_entry_" + std::string(name)).c_str());
  void *error = dlsym(m->handle, "loom_sim_error");
  if (!entry || !error)
    return api::kErrorNotFound;
  static std::vector<std::unique_ptr<CUfunc_st>> functions;
  auto fn = std::make_unique<CUfunc_st>();
  fn->entry =
      reinterpret_cast<int (*)(void **, const unsigned *, const unsigned *)>(
          entry);
  fn->error = reinterpret_cast<const char *(*)()>(error);
  fn->name = name;
  *f = fn.get();
  functions.push_back(std::move(fn));
  return 0;
}
CUresult launchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                      unsigned bx, unsigned by, unsigned bz, unsigned,
                      CUstream s, void **params, void **extra) {
  std::lock_guard<std::mutex> g(lock);
  if (extra)
    return failWith(kInvalidValue, "CUDA_ERROR_INVALID_VALUE: the simulator "
                                   "takes kernelParams, not extra");
  if (!gx || !gy || !gz || !bx || !by || !bz || uint64_t(bx) * by * bz > 1024)
    return failWith(kInvalidValue,
                    "CUDA_ERROR_INVALID_VALUE: kernel " + f->name +
                        " launched with an empty grid or more than 1024 "
                        "threads a block");
  unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  // Captured launches keep the parameters' addresses: the executor's
  // kernelParams live as long as the slot whose graph replays them.
  return submit(s, [=] {
    unsigned gr[3] = {grid[0], grid[1], grid[2]},
             bl[3] = {block[0], block[1], block[2]};
    ++stats.launches;
    return runKernel(f, gr, bl, params);
  });
}
CUresult streamBeginCapture(CUstream s, int) {
  std::lock_guard<std::mutex> g(lock);
  s->capturing = true;
  s->captured.clear();
  return 0;
}
CUresult streamEndCapture(CUstream s, CUgraph *graph) {
  std::lock_guard<std::mutex> g(lock);
  s->capturing = false;
  *graph = new CUgraph_st{std::move(s->captured)};
  s->captured.clear();
  return 0;
}
CUresult graphInstantiate(CUgraphExec *exec, CUgraph graph,
                          unsigned long long) {
  *exec = new CUgraphExec_st{graph->ops};
  return 0;
}
CUresult graphLaunch(CUgraphExec exec, CUstream) {
  std::lock_guard<std::mutex> g(lock);
  for (auto &op : exec->ops)
    if (int rc = op())
      return rc;
  return 0;
}
CUresult graphExecDestroy(CUgraphExec e) {
  delete e;
  return 0;
}
CUresult graphDestroy(CUgraph g) {
  delete g;
  return 0;
}
CUresult pointerGetAttribute(void *, int, CUdeviceptr) {
  return failWith(kInvalidValue, "CUDA_ERROR_INVALID_VALUE: the simulator "
                                 "answers no pointer attributes");
}

// ---- cuBLASLt
// ----------------------------------------------------------------

const char *statusName(cublasStatus_t s) {
  switch (s) {
  case 0:
    return "CUBLAS_STATUS_SUCCESS";
  case kInvalid:
    return "CUBLAS_STATUS_INVALID_VALUE";
  case kNotSupported:
    return "CUBLAS_STATUS_NOT_SUPPORTED";
  default:
    return "CUBLAS_STATUS_INTERNAL_ERROR";
  }
}
cublasStatus_t ltCreate(cublasLtHandle_t *h) {
  *h = new cublasLtContext;
  return 0;
}
cublasStatus_t ltDestroy(cublasLtHandle_t h) {
  delete h;
  return 0;
}
cublasStatus_t descCreate(cublasLtMatmulDesc_t *d, int compute, int scale) {
  if (compute != api::kComputeF32 && compute != api::kComputeF64 &&
      compute != api::kComputeF32FastTf32 && compute != api::kComputeI32)
    return kNotSupported;
  // CUBLAS_COMPUTE_32I scales in int32 (or f32, which Loom does not use).
  if (compute == api::kComputeI32 && scale != api::kR32I)
    return kNotSupported;
  *d = new LtMatmulDesc{compute, scale};
  return 0;
}
cublasStatus_t descDestroy(cublasLtMatmulDesc_t d) {
  delete d;
  return 0;
}
template <class T> bool take(const void *value, size_t size, T &out) {
  if (size != sizeof(T))
    return false;
  std::memcpy(&out, value, sizeof(T));
  return true;
}
cublasStatus_t descSet(cublasLtMatmulDesc_t d, int attr, const void *v,
                       size_t size) {
  bool ok = attr == api::kDescTransA        ? take(v, size, d->transA)
            : attr == api::kDescTransB      ? take(v, size, d->transB)
            : attr == api::kDescEpilogue    ? take(v, size, d->epilogue)
            : attr == api::kDescBiasPointer ? take(v, size, d->bias)
                                            : false;
  return ok ? 0 : kInvalid;
}
cublasStatus_t layoutCreate(cublasLtMatrixLayout_t *l, int type, uint64_t rows,
                            uint64_t cols, int64_t ld) {
  if (type != api::kR32F && type != api::kR64F && type != api::kR16F &&
      type != api::kR16BF && type != api::kR8I && type != api::kR32I)
    return kNotSupported;
  if (ld < static_cast<int64_t>(rows))
    return kInvalid;
  *l = new LtMatrixLayout{type, rows, cols, ld};
  return 0;
}
cublasStatus_t layoutDestroy(cublasLtMatrixLayout_t l) {
  delete l;
  return 0;
}
cublasStatus_t layoutSet(cublasLtMatrixLayout_t l, int attr, const void *v,
                         size_t size) {
  bool ok = attr == api::kLayoutBatchCount    ? take(v, size, l->batch)
            : attr == api::kLayoutBatchStride ? take(v, size, l->stride)
                                              : false;
  return ok ? 0 : kInvalid;
}
cublasStatus_t prefCreate(cublasLtMatmulPreference_t *p) {
  *p = new LtMatmulPreference;
  return 0;
}
cublasStatus_t prefDestroy(cublasLtMatmulPreference_t p) {
  delete p;
  return 0;
}
cublasStatus_t prefSet(cublasLtMatmulPreference_t, int, const void *, size_t) {
  return 0;
}
cublasStatus_t int8Supported(const LtMatmulDesc &d, const LtMatrixLayout &la,
                             const LtMatrixLayout &lb, const LtMatrixLayout &lc,
                             const LtMatrixLayout &ld);
cublasStatus_t heuristic(cublasLtHandle_t, cublasLtMatmulDesc_t d,
                         cublasLtMatrixLayout_t la, cublasLtMatrixLayout_t lb,
                         cublasLtMatrixLayout_t lc, cublasLtMatrixLayout_t ld,
                         cublasLtMatmulPreference_t, int requested,
                         cublasLtMatmulHeuristicResult_t *results, int *found) {
  // The int8 path's rules: no algorithm for what it does not take.
  if (d && la && lb && lc && ld && d->compute == api::kComputeI32 &&
      int8Supported(*d, *la, *lb, *lc, *ld) != 0) {
    *found = 0;
    return kNotSupported;
  }
  *found = requested > 0 ? 1 : 0;
  if (requested > 0)
    results[0] = cublasLtMatmulHeuristicResult_t{};
  return 0;
}

float halfToFloat(uint16_t h) {
  _Float16 f;
  std::memcpy(&f, &h, 2);
  return static_cast<float>(f);
}
uint16_t floatToHalf(float v) {
  _Float16 f = static_cast<_Float16>(v);
  uint16_t h;
  std::memcpy(&h, &f, 2);
  return h;
}
float bf16ToFloat(uint16_t h) {
  uint32_t b = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
uint16_t floatToBf16(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  if ((b & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((b >> 16) | 0x40u);
  return static_cast<uint16_t>((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

float roundToTf32(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  if ((b & 0x7f800000u) != 0x7f800000u) // finite: round the low 13 bits
    b = (b + 0xfffu + ((b >> 13) & 1u)) & ~0x1fffu;
  std::memcpy(&v, &b, 4);
  return v;
}

/// A column-major matrix of `l` (batch `b`) at `p` as `T` values, packed.
template <class T>
std::vector<T> load(const LtMatrixLayout &l, const void *p, int b) {
  std::vector<T> out(l.rows * l.cols);
  const char *base = static_cast<const char *>(p);
  size_t e = l.type == api::kR32F ? 4 : l.type == api::kR64F ? 8 : 2;
  for (uint64_t c = 0; c < l.cols; ++c)
    for (uint64_t r = 0; r < l.rows; ++r) {
      const char *at =
          base + (static_cast<int64_t>(b) * l.stride + c * l.ld + r) * e;
      T v;
      if (l.type == api::kR32F) {
        float f;
        std::memcpy(&f, at, 4);
        v = static_cast<T>(f);
      } else if (l.type == api::kR64F) {
        double d;
        std::memcpy(&d, at, 8);
        v = static_cast<T>(d);
      } else {
        uint16_t h;
        std::memcpy(&h, at, 2);
        v = static_cast<T>(l.type == api::kR16F ? halfToFloat(h)
                                                : bf16ToFloat(h));
      }
      out[c * l.rows + r] = v;
    }
  return out;
}

template <class T>
void store(const LtMatrixLayout &l, void *p, int b, int64_t row, int64_t col,
           T v) {
  char *at = static_cast<char *>(p);
  size_t e = l.type == api::kR32F ? 4 : l.type == api::kR64F ? 8 : 2;
  at += (static_cast<int64_t>(b) * l.stride + col * l.ld + row) * e;
  if (l.type == api::kR32F) {
    float f = static_cast<float>(v);
    std::memcpy(at, &f, 4);
  } else if (l.type == api::kR64F) {
    double d = static_cast<double>(v);
    std::memcpy(at, &d, 8);
  } else {
    uint16_t h = l.type == api::kR16F ? floatToHalf(static_cast<float>(v))
                                      : floatToBf16(static_cast<float>(v));
    std::memcpy(at, &h, 2);
  }
}

/// D = alpha op(A) op(B) + beta C, then the epilogue, in `T` (float for
/// f32 and the 16-bit floats, double for f64).
template <class T>
cublasStatus_t
gemm(const LtMatmulDesc &d, T alpha, const void *A, const LtMatrixLayout &la,
     const void *B, const LtMatrixLayout &lb, T beta, const void *C,
     const LtMatrixLayout &lc, void *D, const LtMatrixLayout &ld) {
  bool ta = d.transA == api::kOpT, tb = d.transB == api::kOpT;
  int64_t m = static_cast<int64_t>(ld.rows), n = static_cast<int64_t>(ld.cols);
  int64_t k = static_cast<int64_t>(ta ? la.rows : la.cols);
  if (static_cast<int64_t>(ta ? la.cols : la.rows) != m ||
      static_cast<int64_t>(tb ? lb.cols : lb.rows) != k ||
      static_cast<int64_t>(tb ? lb.rows : lb.cols) != n || lc.rows != ld.rows ||
      lc.cols != ld.cols)
    return kInvalid;
  int batch = std::max(1, ld.batch);
  std::vector<T> bias;
  if (d.bias) {
    LtMatrixLayout lv{ld.type, ld.rows, 1, static_cast<int64_t>(ld.rows)};
    bias = load<T>(lv, d.bias, 0);
  }
  bool relu = d.epilogue == api::kEpilogueRelu ||
              d.epilogue == api::kEpilogueReluBias,
       gelu = d.epilogue == api::kEpilogueGelu ||
              d.epilogue == api::kEpilogueGeluBias;
  for (int b = 0; b < batch; ++b) {
    std::vector<T> a = load<T>(la, A, la.batch > 1 ? b : 0),
                   bm = load<T>(lb, B, lb.batch > 1 ? b : 0);
    if (d.compute == api::kComputeF32FastTf32) {
      // Tensor cores read f32 inputs as TF32: 10 bits of mantissa, to
      // nearest even.
      for (std::vector<T> *m : {&a, &bm})
        for (T &v : *m)
          v = static_cast<T>(roundToTf32(static_cast<float>(v)));
    }
    std::vector<T> out = beta != T(0) ? load<T>(lc, C, lc.batch > 1 ? b : 0)
                                      : std::vector<T>(m * n, T(0));
    auto ta_ = ta ? CblasTrans : CblasNoTrans,
         tb_ = tb ? CblasTrans : CblasNoTrans;
    int lda = static_cast<int>(la.rows), ldb = static_cast<int>(lb.rows);
    if constexpr (sizeof(T) == 4)
      cblas_sgemm(CblasColMajor, ta_, tb_, m, n, k, alpha, a.data(), lda,
                  bm.data(), ldb, beta, out.data(), m);
    else
      cblas_dgemm(CblasColMajor, ta_, tb_, m, n, k, alpha, a.data(), lda,
                  bm.data(), ldb, beta, out.data(), m);
    for (int64_t c = 0; c < n; ++c)
      for (int64_t r = 0; r < m; ++r) {
        T v = out[c * m + r];
        if (d.bias)
          v += bias[r];
        if (relu)
          v = v > T(0) ? v : (v != v ? v : T(0));
        if (gelu)
          v = T(0.5) * v *
              (T(1) + std::tanh(T(0.7978845608028654) *
                                (v + T(0.044715) * v * v * v)));
        store<T>(ld, D, b, r, c, v);
      }
  }
  return 0;
}

/// Whether cuBLASLt's int8 path (CUBLAS_COMPUTE_32I, regular ordering)
/// takes these layouts: s8 A and B, s32 C and D, "TN" (A transposed, B
/// not), m, k and every leading dim multiples of 4, no epilogue.
cublasStatus_t int8Supported(const LtMatmulDesc &d, const LtMatrixLayout &la,
                             const LtMatrixLayout &lb, const LtMatrixLayout &lc,
                             const LtMatrixLayout &ld) {
  const int64_t q = api::kInt8Multiple;
  if (la.type != api::kR8I || lb.type != api::kR8I || lc.type != api::kR32I ||
      ld.type != api::kR32I || d.transA != api::kOpT || d.transB != api::kOpN ||
      d.bias || d.epilogue != api::kEpilogueDefault || la.ld % q || lb.ld % q ||
      lc.ld % q || ld.ld % q)
    return kNotSupported;
  int64_t m = static_cast<int64_t>(ld.rows), n = static_cast<int64_t>(ld.cols);
  int64_t k = static_cast<int64_t>(la.rows);
  if (static_cast<int64_t>(la.cols) != m ||
      static_cast<int64_t>(lb.rows) != k ||
      static_cast<int64_t>(lb.cols) != n || lc.rows != ld.rows ||
      lc.cols != ld.cols)
    return kInvalid;
  if (m % q || k % q)
    return kNotSupported;
  return 0;
}

/// D = alpha op(A) op(B) + beta C of s8 A and B, s32 C and D
/// (CUBLAS_COMPUTE_32I), exact: the sums in 64 bits, wrapped to 32 as the
/// GPU's 32-bit accumulator wraps. Only what cuBLASLt's int8 path takes
/// with the regular ordering: "TN" (A transposed, B not), m, k and every
/// leading dim multiples of 4, pointers 4-byte aligned, no epilogue;
/// anything else is CUBLAS_STATUS_NOT_SUPPORTED, as on the GPU, so that
/// the simulator catches a program the GPU would refuse.
cublasStatus_t gemmInt8(const LtMatmulDesc &d, int32_t alpha, const void *A,
                        const LtMatrixLayout &la, const void *B,
                        const LtMatrixLayout &lb, int32_t beta, const void *C,
                        const LtMatrixLayout &lc, void *D,
                        const LtMatrixLayout &ld) {
  auto aligned = [](const void *p) {
    return reinterpret_cast<uintptr_t>(p) % 4 == 0;
  };
  if (cublasStatus_t st = int8Supported(d, la, lb, lc, ld))
    return st;
  if (!aligned(A) || !aligned(B) || !aligned(C) || !aligned(D))
    return kNotSupported;
  int64_t m = static_cast<int64_t>(ld.rows), n = static_cast<int64_t>(ld.cols);
  int64_t k = static_cast<int64_t>(la.rows);
  auto s8 = static_cast<const int8_t *>(A), t8 = static_cast<const int8_t *>(B);
  auto c32 = static_cast<const int32_t *>(C);
  auto d32 = static_cast<int32_t *>(D);
  int batch = std::max(1, ld.batch);
  for (int b = 0; b < batch; ++b) {
    // Column-major: op(A) = A^T, A stored k x m (ld la.ld).
    const int8_t *a = s8 + (la.batch > 1 ? b * la.stride : 0);
    const int8_t *bm = t8 + (lb.batch > 1 ? b * lb.stride : 0);
    const int32_t *c = c32 + (lc.batch > 1 ? b * lc.stride : 0);
    int32_t *out = d32 + b * ld.stride;
    for (int64_t col = 0; col < n; ++col)
      for (int64_t row = 0; row < m; ++row) {
        int64_t sum = 0;
        const int8_t *x = a + row * la.ld, *y = bm + col * lb.ld;
        for (int64_t r = 0; r < k; ++r)
          sum += int64_t(x[r]) * int64_t(y[r]);
        uint64_t v = uint64_t(sum) * uint64_t(int64_t(alpha));
        if (beta != 0)
          v +=
              uint64_t(int64_t(c[col * lc.ld + row])) * uint64_t(int64_t(beta));
        out[col * ld.ld + row] = static_cast<int32_t>(static_cast<uint32_t>(v));
      }
  }
  return 0;
}

cublasStatus_t matmul(cublasLtHandle_t, cublasLtMatmulDesc_t d,
                      const void *alpha, const void *A,
                      cublasLtMatrixLayout_t la, const void *B,
                      cublasLtMatrixLayout_t lb, const void *beta,
                      const void *C, cublasLtMatrixLayout_t lc, void *D,
                      cublasLtMatrixLayout_t ldd, const void *, void *, size_t,
                      CUstream s) {
  std::lock_guard<std::mutex> g(lock);
  if (!d || !la || !lb || !lc || !ldd)
    return kInvalid;
  bool f64 = d->compute == api::kComputeF64;
  if (d->compute == api::kComputeI32) {
    int32_t al = 0, be = 0;
    std::memcpy(&al, alpha, 4);
    std::memcpy(&be, beta, 4);
    LtMatmulDesc desc = *d;
    LtMatrixLayout a = *la, b = *lb, c = *lc, dd = *ldd;
    return submit(s, [=] {
      ++stats.matmuls;
      return gemmInt8(desc, al, A, a, B, b, be, C, c, D, dd);
    });
  }
  // Alpha and beta are read now (host pointers), as cuBLASLt does.
  double al = 0, be = 0;
  if (f64) {
    std::memcpy(&al, alpha, 8);
    std::memcpy(&be, beta, 8);
  } else {
    float a = 0, b = 0;
    std::memcpy(&a, alpha, 4);
    std::memcpy(&b, beta, 4);
    al = a, be = b;
  }
  LtMatmulDesc desc = *d;
  LtMatrixLayout a = *la, b = *lb, c = *lc, dd = *ldd;
  int rc = submit(s, [=] {
    ++stats.matmuls;
    return f64 ? gemm<double>(desc, al, A, a, B, b, be, C, c, D, dd)
               : gemm<float>(desc, static_cast<float>(al), A, a, B, b,
                             static_cast<float>(be), C, c, D, dd);
  });
  return rc;
}

Driver makeDriver() {
  if (const char *e = std::getenv("LOOM_CUDA_SIM_STATS"); e && *e && *e != '0')
    std::atexit(printStats);
  Driver d;
  static char loaded;
  d.handle = &loaded; // non-null: loaded (never closed)
  d.cuInit = init;
  d.cuDriverGetVersion = driverGetVersion;
  d.cuDeviceGetCount = deviceGetCount;
  d.cuDeviceGet = deviceGet;
  d.cuDeviceGetAttribute = deviceGetAttribute;
  d.cuDeviceGetName = deviceGetName;
  d.cuDevicePrimaryCtxRetain = primaryCtxRetain;
  d.cuDevicePrimaryCtxRelease = primaryCtxRelease;
  d.cuCtxSetCurrent = ctxSetCurrent;
  d.cuGetErrorName = getErrorName;
  d.cuStreamCreate = streamCreate;
  d.cuStreamDestroy = streamDestroy;
  d.cuStreamSynchronize = streamSynchronize;
  d.cuMemAlloc = memAlloc;
  d.cuMemFree = memFree;
  d.cuMemAllocHost = memAllocHost;
  d.cuMemFreeHost = memFreeHost;
  d.cuMemcpyHtoDAsync = memcpyHtoD;
  d.cuMemcpyDtoHAsync = memcpyDtoH;
  d.cuMemcpyDtoDAsync = memcpyDtoD;
  d.cuMemsetD8Async = memsetD8;
  d.cuEventCreate = eventCreate;
  d.cuEventDestroy = eventDestroy;
  d.cuEventRecord = eventRecord;
  d.cuEventSynchronize = eventSynchronize;
  d.cuEventElapsedTime = eventElapsedTime;
  d.cuFuncSetAttribute = funcSetAttribute;
  d.cuModuleLoadData = moduleLoadData;
  d.cuModuleUnload = moduleUnload;
  d.cuModuleGetFunction = moduleGetFunction;
  d.cuLaunchKernel = launchKernel;
  d.cuStreamQuery = streamQuery;
  d.cuStreamBeginCapture = streamBeginCapture;
  d.cuStreamEndCapture = streamEndCapture;
  d.cuGraphInstantiate = graphInstantiate;
  d.cuGraphLaunch = graphLaunch;
  d.cuGraphExecDestroy = graphExecDestroy;
  d.cuGraphDestroy = graphDestroy;
  d.cuPointerGetAttribute = pointerGetAttribute;
  return d;
}

CublasLt makeCublasLt() {
  CublasLt c;
  static char loaded;
  c.handle = &loaded;
  c.cublasLtGetStatusName = statusName;
  c.cublasLtCreate = ltCreate;
  c.cublasLtDestroy = ltDestroy;
  c.cublasLtMatmulDescCreate = descCreate;
  c.cublasLtMatmulDescDestroy = descDestroy;
  c.cublasLtMatmulDescSetAttribute = descSet;
  c.cublasLtMatrixLayoutCreate = layoutCreate;
  c.cublasLtMatrixLayoutDestroy = layoutDestroy;
  c.cublasLtMatrixLayoutSetAttribute = layoutSet;
  c.cublasLtMatmulPreferenceCreate = prefCreate;
  c.cublasLtMatmulPreferenceDestroy = prefDestroy;
  c.cublasLtMatmulPreferenceSetAttribute = prefSet;
  c.cublasLtMatmulAlgoGetHeuristic = heuristic;
  c.cublasLtMatmul = matmul;
  return c;
}

} // namespace

const Driver *driver() {
  static Driver d = makeDriver();
  return &d;
}

const CublasLt *cublasLt() {
  static CublasLt c = makeCublasLt();
  return &c;
}

} // namespace loom::cuda::sim
