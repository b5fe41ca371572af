//===- Nccl.cpp - NCCL, loaded with dlopen --------------------------------===//

#include "runtime/src/collectives/Nccl.h"

#include <dlfcn.h>

#include <climits>
#include <cstddef>
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
#define LOOM_NCCL_RESOLVE_OPTIONAL(name, ret, params)                          \
  l.library.name = reinterpret_cast<ret(*) params>(dlsym(handle, #name));
  LOOM_NCCL_OPTIONAL_SYMBOLS(LOOM_NCCL_RESOLVE_OPTIONAL)
#undef LOOM_NCCL_RESOLVE_OPTIONAL
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

// nccl.h's layout on LP64 (checked against NCCL 2.28.9's nccl.h with
// offsetof on every field when it was written).
static_assert(sizeof(Config) == 80 && offsetof(Config, blocking) == 16 &&
                  offsetof(Config, netName) == 32 &&
                  offsetof(Config, commName) == 48 &&
                  offsetof(Config, nvlinkCentricSched) == 76,
              "ncclConfig_t's layout");

Config configInitializer() {
  constexpr int undefined = INT_MIN; // NCCL_CONFIG_UNDEF_INT
  Config c;
  c.size = sizeof(Config);
  c.magic = 0xcafebeef;
  c.version = 22800; // the layout above: NCCL_VERSION(2, 28, 0)
  c.blocking = c.cgaClusterSize = c.minCTAs = c.maxCTAs = undefined;
  c.netName = nullptr;
  c.splitShare = c.trafficClass = undefined;
  c.commName = nullptr;
  c.collnetEnable = c.CTAPolicy = c.shrinkShare = c.nvlsCTAs =
      c.nChannelsPerNetPeer = c.nvlinkCentricSched = undefined;
  return c;
}

std::string versionString(int version) {
  // NCCL >= 2.9: major * 10000 + minor * 100 + patch.
  return std::to_string(version / 10000) + "." +
         std::to_string(version / 100 % 100) + "." +
         std::to_string(version % 100);
}

} // namespace loom::runtime::nccl
