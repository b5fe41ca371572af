//===- Nvrtc.h - CUDA C++ to cubin with NVRTC, cached -----------*- C++ -*-===//
//
// Compiles a generated CUDA source for one arch ("sm_90") with NVRTC, and
// keeps the cubin in an on-disk cache keyed by the source's hash, the arch,
// the NVRTC version and the options. A cache entry is a file of
//   "LOOMCUBN" | format version (uint32) | payload length (uint64) |
//   FNV-1a 64 of the payload (uint64) | key length (uint32) | key | cubin
// written atomically; an entry that cannot be read, is truncated, fails
// its checksum or holds another key is compiled again and rewritten, never
// trusted. Several sources compile in parallel (compileAll). NVRTC is
// opened with dlopen, never linked. The runtime and loomc --arch share it.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMMON_NVRTC_H
#define LOOM_COMMON_NVRTC_H

#include <cstddef>
#include <string>
#include <vector>

namespace loom::cuda {

// NVRTC's types (nvrtc.h) and functions: X(name, return type, parameters).
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram *;
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

#define LOOM_NVRTC_DECLARE(name, ret, params) ret(*name) params = nullptr;
/// libnvrtc opened with dlopen and its functions.
struct Nvrtc {
  void *handle = nullptr;
  LOOM_NVRTC_SYMBOLS(LOOM_NVRTC_DECLARE)
  /// major * 1000 + minor * 10, as CUDA numbers versions.
  int version = 0;
};
#undef LOOM_NVRTC_DECLARE

/// NVRTC, opened on first use (thread-safe) and kept open; nullptr with
/// `error` ("no NVRTC (...)") when missing. $LOOM_LIBNVRTC overrides it.
const Nvrtc *nvrtc(std::string &error);

struct CompileRequest {
  std::string source;
  /// "sm_80", "sm_90", ...
  std::string arch;
  /// Extra NVRTC options.
  std::vector<std::string> options;
};

struct CompileResult {
  bool ok = false;
  std::string cubin;
  /// NVRTC's log on failure, or why NVRTC could not run.
  std::string error;
  /// NVRTC's log on success (warnings; ptxas's report with
  /// --ptxas-options=-v); empty for a cubin from the cache.
  std::string log;
  /// Whether the cubin came from the cache.
  bool cached = false;
  double seconds = 0;
};

/// The cache directory: $LOOM_CUDA_CACHE, else $XDG_CACHE_HOME/loom/cuda,
/// else $HOME/.cache/loom/cuda; empty when none can be named.
std::string defaultCacheDir();

/// The CUDA include directory NVRTC needs for cuda_fp16.h and
/// cuda_bf16.h: the first that has both of $CUDA_HOME/include,
/// $CUDA_PATH/include, the toolkit's (or pip wheel's) include directory
/// beside the libnvrtc that was loaded, /usr/local/cuda/include and
/// /usr/include; the cache key holds it and those headers' hashes.
std::string cudaIncludeDir();

class NvrtcCompiler {
public:
  /// `cacheDir` empty: no cache.
  explicit NvrtcCompiler(std::string cacheDir = defaultCacheDir());

  /// Compiles one source (or takes it from the cache).
  CompileResult compile(const CompileRequest &request) const;

  /// Compiles every request, `threads` at a time (0: the hardware's).
  std::vector<CompileResult> compileAll(const std::vector<CompileRequest> &,
                                        unsigned threads = 0) const;

  /// The cache file of a request (for the tests).
  std::string cachePath(const CompileRequest &request) const;

private:
  std::string cacheDir;
  std::string key(const CompileRequest &request) const;
  bool readCache(const std::string &path, const std::string &key,
                 std::string &cubin) const;
  void writeCache(const std::string &path, const std::string &key,
                  const std::string &cubin) const;
};

} // namespace loom::cuda

#endif // LOOM_COMMON_NVRTC_H
