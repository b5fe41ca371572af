//===- Nvrtc.cpp - CUDA C++ to cubin with NVRTC, cached -------------------===//

#include "loom/common/Nvrtc.h"

#include "loom/common/DynamicLibrary.h"
#include "loom/common/FileHeader.h"
#include "loom/common/FileIO.h"
#include "loom/common/Hash.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <functional>
#include <mutex>
#include <sys/stat.h>
#include <thread>

namespace loom::cuda {
namespace {

constexpr char kCacheMagic[8] = {'L', 'O', 'O', 'M', 'C', 'U', 'B', 'N'};
constexpr artifact::FileKind kCacheFile = {
    kCacheMagic, 1, "cache entry", "Loom cubin cache entry", "recompile"};

} // namespace

const Nvrtc *nvrtc(std::string &error) {
  static Nvrtc n;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string why;
    void *h = dl::openFirst("LOOM_LIBNVRTC",
                            {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
                             "/usr/local/cuda/lib64/libnvrtc.so"},
                            why);
    if (!h) {
      failure = "no NVRTC (" + why + ")";
      return;
    }
#define LOOM_LOOKUP(name, ret, params)                                         \
  if (!dl::lookup(h, #name, n.name, "libnvrtc", failure))                      \
    return;
    LOOM_NVRTC_SYMBOLS(LOOM_LOOKUP)
#undef LOOM_LOOKUP
    int major = 0, minor = 0;
    if (n.nvrtcVersion(&major, &minor) != 0) {
      failure = "nvrtcVersion failed";
      return;
    }
    n.version = major * 1000 + minor * 10;
    n.handle = h;
  });
  error = failure;
  return n.handle ? &n : nullptr;
}

std::string defaultCacheDir() {
  if (const char *dir = std::getenv("LOOM_CUDA_CACHE"))
    return dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/loom/cuda";
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/loom/cuda";
  return "";
}

std::string cudaIncludeDir() {
  static std::string dir = [] {
    auto has = [](const std::string &d) {
      struct stat st;
      return stat((d + "/cuda_fp16.h").c_str(), &st) == 0 &&
             stat((d + "/cuda_bf16.h").c_str(), &st) == 0;
    };
    std::vector<std::string> candidates;
    for (const char *var : {"CUDA_HOME", "CUDA_PATH"})
      if (const char *home = std::getenv(var); home && *home)
        candidates.push_back(std::string(home) + "/include");
    // Beside the NVRTC that was loaded: <toolkit>/lib64/libnvrtc.so ->
    // <toolkit>/include; a pip wheel's nvidia/cuda_nvrtc/lib ->
    // nvidia/cuda_runtime/include.
    std::string ignored;
    if (const Nvrtc *api = nvrtc(ignored)) {
      Dl_info info;
      if (dladdr(reinterpret_cast<void *>(api->nvrtcVersion), &info) &&
          info.dli_fname) {
        std::string lib = info.dli_fname;
        std::string libDir = lib.substr(0, lib.rfind('/'));
        std::string up = libDir.substr(0, libDir.rfind('/'));
        candidates.push_back(up + "/include");
        candidates.push_back(up.substr(0, up.rfind('/')) + "/include");
        candidates.push_back(up.substr(0, up.rfind('/')) +
                             "/cuda_runtime/include");
      }
    }
    candidates.push_back("/usr/local/cuda/include");
    candidates.push_back("/usr/include"); // Debian's nvidia-cuda-toolkit
    for (const std::string &d : candidates)
      if (has(d))
        return d;
    return candidates.front();
  }();
  return dir;
}

namespace {

/// What the compiled code depends on besides the source: the include
/// directory and the contents of the headers the prelude includes.
const std::string &headersKey() {
  static std::string key = [] {
    std::string dir = cudaIncludeDir(), k = "include " + dir;
    for (const char *name :
         {"cuda_fp16.h", "cuda_fp16.hpp", "cuda_bf16.h", "cuda_bf16.hpp"}) {
      std::string bytes, error;
      files::readFile(dir + "/" + name, bytes, error);
      k += std::string(" ") + name + " " + hex16(fnv1a(bytes)) + " " +
           std::to_string(bytes.size());
    }
    return k;
  }();
  return key;
}

} // namespace

NvrtcCompiler::NvrtcCompiler(std::string cacheDir)
    : cacheDir(std::move(cacheDir)) {}

std::string NvrtcCompiler::key(const CompileRequest &request) const {
  std::string error;
  const Nvrtc *api = nvrtc(error);
  std::string k = "nvrtc " + std::to_string(api ? api->version : 0) + " arch " +
                  request.arch + " options";
  for (const std::string &o : request.options)
    k += " " + o;
  k += " " + headersKey();
  // Two independent hashes and the length of the source.
  k += " source " + hex16(fnv1a(request.source)) + " " +
       hex16(std::hash<std::string>()(request.source)) + " " +
       std::to_string(request.source.size());
  return k;
}

std::string NvrtcCompiler::cachePath(const CompileRequest &request) const {
  if (cacheDir.empty())
    return "";
  return cacheDir + "/" + hex16(fnv1a(key(request))) + "-" + request.arch +
         ".cubin";
}

bool NvrtcCompiler::readCache(const std::string &path, const std::string &key,
                              std::string &cubin) const {
  std::string bytes, error;
  if (!files::readFile(path, bytes, error))
    return false;
  const char *body = nullptr;
  size_t size = 0;
  if (!artifact::checkHeader(bytes.data(), bytes.size(), kCacheFile, body, size,
                             error) ||
      size < 4)
    return false;
  uint32_t keySize = 0;
  std::memcpy(&keySize, body, 4);
  if (size - 4 < keySize || std::string(body + 4, keySize) != key)
    return false;
  cubin.assign(body + 4 + keySize, size - 4 - keySize);
  return !cubin.empty();
}

void NvrtcCompiler::writeCache(const std::string &path, const std::string &key,
                               const std::string &cubin) const {
  std::string ignored;
  if (!files::makeDirectories(cacheDir, ignored))
    return; // no cache: compile every time
  std::string body(4, '\0');
  uint32_t keySize = static_cast<uint32_t>(key.size());
  std::memcpy(body.data(), &keySize, 4);
  body += key;
  body += cubin;
  std::string error;
  (void)files::writeFileAtomically(
      path, artifact::header(body, kCacheFile) + body, error);
}

CompileResult NvrtcCompiler::compile(const CompileRequest &request) const {
  auto started = std::chrono::steady_clock::now();
  CompileResult result;
  auto done = [&]() -> CompileResult {
    result.seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - started)
                         .count();
    return result;
  };
  const Nvrtc *api = nvrtc(result.error);
  if (!api)
    return done();
  std::string k = key(request), path = cachePath(request);
  if (!path.empty() && readCache(path, k, result.cubin)) {
    result.ok = result.cached = true;
    return done();
  }
  nvrtcProgram program = nullptr;
  nvrtcResult rc = api->nvrtcCreateProgram(&program, request.source.c_str(),
                                           "loom.cu", 0, nullptr, nullptr);
  if (rc != 0) {
    result.error =
        std::string("nvrtcCreateProgram: ") + api->nvrtcGetErrorString(rc);
    return done();
  }
  std::vector<std::string> options = {"--gpu-architecture=" + request.arch,
                                      "-std=c++17", "-I" + cudaIncludeDir()};
  options.insert(options.end(), request.options.begin(), request.options.end());
  std::vector<const char *> argv;
  for (const std::string &o : options)
    argv.push_back(o.c_str());
  rc = api->nvrtcCompileProgram(program, static_cast<int>(argv.size()),
                                argv.data());
  size_t logSize = 0;
  std::string log;
  if (api->nvrtcGetProgramLogSize(program, &logSize) == 0 && logSize > 1) {
    log.resize(logSize);
    api->nvrtcGetProgramLog(program, log.data());
    log.resize(std::strlen(log.c_str()));
  }
  if (rc != 0) {
    result.error = std::string("nvrtcCompileProgram for ") + request.arch +
                   ": " + api->nvrtcGetErrorString(rc) + "\n" + log;
    api->nvrtcDestroyProgram(&program);
    return done();
  }
  size_t size = 0;
  if (api->nvrtcGetCUBINSize(program, &size) != 0 || size == 0) {
    result.error = "NVRTC produced no cubin for " + request.arch +
                   " (a compute_XX arch gives PTX only; name an sm_XX)";
    api->nvrtcDestroyProgram(&program);
    return done();
  }
  result.cubin.resize(size);
  api->nvrtcGetCUBIN(program, result.cubin.data());
  api->nvrtcDestroyProgram(&program);
  result.ok = true;
  result.log = std::move(log);
  if (!path.empty())
    writeCache(path, k, result.cubin);
  return done();
}

std::vector<CompileResult>
NvrtcCompiler::compileAll(const std::vector<CompileRequest> &requests,
                          unsigned threads) const {
  std::vector<CompileResult> results(requests.size());
  if (threads == 0)
    threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min<unsigned>(threads, requests.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < requests.size();)
      results[i] = compile(requests[i]);
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back(work);
  work();
  for (std::thread &t : pool)
    t.join();
  return results;
}

} // namespace loom::cuda
