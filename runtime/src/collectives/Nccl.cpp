//===- Nccl.cpp - NCCL, loaded with dlopen --------------------------------===//

#include "runtime/src/collectives/Nccl.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <vector>

namespace loom::runtime::nccl {

namespace {

struct Loaded {
  Library library;
  std::string error;
  bool ok = false;
};

Loaded loadOnce() {
  Loaded l;
  std::vector<std::string> candidates = {"libnccl.so.2"};
  if (const char *home = std::getenv("CUDA_HOME"); home && *home) {
    candidates.push_back(std::string(home) + "/lib64/libnccl.so.2");
    candidates.push_back(std::string(home) + "/lib/libnccl.so.2");
  }
  candidates.push_back("/usr/local/cuda/lib64/libnccl.so.2");
  candidates.push_back("/usr/local/cuda/lib/libnccl.so.2");
  void *handle = nullptr;
  std::string first;
  for (const std::string &c : candidates) {
    handle = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle)
      break;
    if (first.empty()) {
      const char *e = dlerror();
      first = e ? e : c + ": cannot be loaded";
    }
  }
  if (!handle) {
    l.error = "NCCL not available: " + first +
              " (set CUDA_HOME or LD_LIBRARY_PATH to the NCCL library)";
    return l;
  }
  // The handle stays open for the life of the process, as the library's
  // symbols do.
#define LOOM_NCCL_RESOLVE(name, ret, params)                                   \
  l.library.name = reinterpret_cast<ret(*) params>(dlsym(handle, #name));      \
  if (!l.library.name) {                                                       \
    l.error = "NCCL not available: the loaded libnccl.so.2 has no " #name;     \
    return l;                                                                  \
  }
  LOOM_NCCL_SYMBOLS(LOOM_NCCL_RESOLVE)
#undef LOOM_NCCL_RESOLVE
  if (l.library.ncclGetVersion(&l.library.version) != 0) {
    l.error = "NCCL not available: ncclGetVersion failed";
    return l;
  }
  l.ok = true;
  return l;
}

} // namespace

const Library *load(std::string &error) {
  static const Loaded loaded = loadOnce();
  if (!loaded.ok) {
    error = loaded.error;
    return nullptr;
  }
  return &loaded.library;
}

std::string versionString(int version) {
  // NCCL >= 2.9: major * 10000 + minor * 100 + patch.
  return std::to_string(version / 10000) + "." +
         std::to_string(version / 100 % 100) + "." +
         std::to_string(version % 100);
}

} // namespace loom::runtime::nccl
