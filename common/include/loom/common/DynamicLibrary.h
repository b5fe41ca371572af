//===- DynamicLibrary.h - opening a library with dlopen ---------*- C++ -*-===//
//
// The CUDA libraries are never linked: each is opened with dlopen and its
// functions looked up by name, so that what links them builds and runs on
// machines without them. The NVRTC loader (loom/common/Nvrtc.h) and the
// runtime's loaders of libcuda and cuBLASLt (runtime/src/cuda/CudaApi.h)
// open and look up with these. Header only.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMMON_DYNAMICLIBRARY_H
#define LOOM_COMMON_DYNAMICLIBRARY_H

#include <cstdlib>
#include <dlfcn.h>
#include <initializer_list>
#include <string>

namespace loom::dl {

/// dlopen (RTLD_NOW | RTLD_LOCAL) of the first of `names` that opens, or
/// of $`env` alone when it is set; nullptr with `error` naming the first
/// failure ("dlopen NAME: why") otherwise.
inline void *openFirst(const char *env,
                       std::initializer_list<const char *> names,
                       std::string &error) {
  if (const char *override = std::getenv(env)) {
    if (void *h = dlopen(override, RTLD_NOW | RTLD_LOCAL))
      return h;
    const char *why = dlerror();
    error = std::string("dlopen ") + override + ": " + (why ? why : "failed");
    return nullptr;
  }
  for (const char *name : names) {
    if (void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL))
      return h;
    const char *why = dlerror();
    if (error.empty())
      error = std::string("dlopen ") + name + ": " + (why ? why : "failed");
  }
  return nullptr;
}

/// Sets `slot` to `symbol` of `handle`; false with `error` ("LIBRARY has
/// no symbol SYMBOL") when it is missing.
template <class F>
bool lookup(void *handle, const char *symbol, F &slot, const char *library,
            std::string &error) {
  slot = reinterpret_cast<F>(dlsym(handle, symbol));
  if (!slot)
    error = std::string(library) + " has no symbol " + symbol;
  return slot != nullptr;
}

} // namespace loom::dl

#endif // LOOM_COMMON_DYNAMICLIBRARY_H
