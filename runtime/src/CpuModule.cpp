//===- CpuModule.cpp - loading an artifact's CPU code ---------------------===//

#include "runtime/src/CpuModule.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace loom::runtime {

/// Whether this CPU has the LLVM feature `name` ("avx2"). Features the
/// check does not know are assumed present: the loader then fails or the
/// code runs, as with any shared library.
static bool cpuHas(const std::string &name) {
#if defined(__x86_64__)
  __builtin_cpu_init();
#define LOOM_CHECK(feature)                                                    \
  if (name == feature)                                                         \
    return __builtin_cpu_supports(feature);
  LOOM_CHECK("sse4.2")
  LOOM_CHECK("avx")
  LOOM_CHECK("avx2")
  LOOM_CHECK("fma")
  LOOM_CHECK("bmi2")
  LOOM_CHECK("avx512f")
  LOOM_CHECK("avx512bw")
  LOOM_CHECK("avx512dq")
  LOOM_CHECK("avx512vl")
  LOOM_CHECK("avx512vnni")
  LOOM_CHECK("avx512bf16")
  LOOM_CHECK("f16c")
#undef LOOM_CHECK
#endif
  return true;
}

static bool tripleMatches(const std::string &triple) {
#if defined(__x86_64__)
  return triple.rfind("x86_64", 0) == 0;
#elif defined(__aarch64__)
  return triple.rfind("aarch64", 0) == 0;
#else
  return true;
#endif
}

std::unique_ptr<CpuModule> CpuModule::load(const std::string &sharedObject,
                                           const std::string &entrySymbol,
                                           const std::string &triple,
                                           const std::string &features,
                                           std::string &error) {
  if (!tripleMatches(triple)) {
    error = "the artifact's CPU code is for " + triple +
            ", not this machine's architecture";
    return nullptr;
  }
  std::string missing;
  size_t pos = 0;
  while (pos < features.size()) {
    size_t end = features.find(',', pos);
    if (end == std::string::npos)
      end = features.size();
    std::string f = features.substr(pos, end - pos);
    pos = end + 1;
    if (f.size() > 1 && f[0] == '+' && !cpuHas(f.substr(1)))
      missing += (missing.empty() ? "" : ", ") + f.substr(1);
  }
  if (!missing.empty()) {
    error = "this CPU lacks features the artifact's code uses (" + missing +
            "); recompile with loomc --cpu for this machine";
    return nullptr;
  }

  // The code calls library kernels (runtime/src/cpu/Kernels.cpp) that this
  // library exports: make sure its symbols are in the global scope even
  // when the runtime itself was dlopen'ed with RTLD_LOCAL.
  // (The promotion outlives the handle, which is closed at once.)
  Dl_info self;
  if (dladdr(reinterpret_cast<void *>(&CpuModule::load), &self) &&
      self.dli_fname)
    if (void *h = dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL))
      dlclose(h);

  // dlopen needs a file: an anonymous in-memory one.
  int fd = memfd_create("loom-cpu-code", MFD_CLOEXEC);
  if (fd < 0) {
    error = std::string("memfd_create failed: ") + std::strerror(errno);
    return nullptr;
  }
  size_t written = 0;
  while (written < sharedObject.size()) {
    ssize_t n =
        write(fd, sharedObject.data() + written, sharedObject.size() - written);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      error =
          std::string("writing the CPU code failed: ") + std::strerror(errno);
      close(fd);
      return nullptr;
    }
    written += static_cast<size_t>(n);
  }
  // The loader knows objects by name, and /proc/self/fd/N names repeat
  // when fds are reused: a name it already knows would hand back another
  // model's code. The fd stays open while the module lives (so no live
  // module shares it), and a name still known from an unloaded module is
  // skipped by moving to another fd.
  std::vector<int> skipped;
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  for (int tries = 0; tries < 64; ++tries) {
    void *stale = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (!stale)
      break;
    dlclose(stale);
    skipped.push_back(fd);
    fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
      break;
    path = "/proc/self/fd/" + std::to_string(fd);
  }
  for (int old : skipped)
    close(old);
  if (fd < 0) {
    error = std::string("cannot duplicate the CPU code's fd: ") +
            std::strerror(errno);
    return nullptr;
  }
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *msg = dlerror();
    error = std::string("loading the CPU code failed: ") +
            (msg ? msg : "unknown dlopen error");
    close(fd);
    return nullptr;
  }
  void *sym = dlsym(handle, entrySymbol.c_str());
  if (!sym) {
    error = "the CPU code has no entry '" + entrySymbol + "'";
    dlclose(handle);
    close(fd);
    return nullptr;
  }
  std::unique_ptr<CpuModule> module(new CpuModule());
  module->handle_ = handle;
  module->fd_ = fd;
  module->entry_ = reinterpret_cast<CpuEntry>(sym);
  return module;
}

CpuModule::~CpuModule() {
  if (handle_)
    dlclose(handle_);
  if (fd_ >= 0)
    close(fd_);
}

} // namespace loom::runtime
