//===- SimCompiler.cpp - a generated CUDA source as host C++ --------------===//
//
// Each program (the prelude and whole regions) becomes one shared library:
// the source, then one entry per kernel, `loom_sim_entry_NAME(params,
// grid, block)`, which unpacks cuLaunchKernel's parameters by the kernel's
// own parameter types and runs its grid (loom_sim.h). Kernels whose text
// synchronizes (__syncthreads, a shuffle, a warp or block reduction) run
// their threads on fibers; the others call each thread in turn, and a
// barrier reached there is reported, not ignored.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/cuda/sim/CudaSim.h"

#include "loom/common/FileIO.h"
#include "loom/common/Hash.h"
#include "loom/common/SourceChunks.h"
#include "runtime/src/cuda/sim/SimHeaders.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char **environ;

namespace loom::cuda::sim {
namespace {

/// The host C++ compiler: $LOOM_SIM_CXX, else c++, g++ or clang++ on PATH.
std::string findCompiler(std::string &why) {
  if (const char *cxx = std::getenv("LOOM_SIM_CXX"); cxx && *cxx)
    return cxx;
  const char *path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (const char *name : {"c++", "g++", "clang++"}) {
    size_t start = 0;
    while (start <= dirs.size()) {
      size_t end = dirs.find(':', start);
      if (end == std::string::npos)
        end = dirs.size();
      std::string candidate =
          (end > start ? dirs.substr(start, end - start) : ".") + "/" + name;
      if (access(candidate.c_str(), X_OK) == 0)
        return candidate;
      start = end + 1;
    }
  }
  why = "no host C++ compiler for the CUDA simulator (none of c++, g++, "
        "clang++ on PATH; set LOOM_SIM_CXX)";
  return "";
}

/// Runs `argv` with its output in `log`; its exit status, or -1.
int runProcess(const std::vector<std::string> &argv, const std::string &log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char *> args;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// Whether the kernel text `body` synchronizes its threads.
bool synchronizes(const std::string &body) {
  for (const char *token :
       {"__syncthreads", "shfl", "block_reduce", "warp_reduce"})
    if (body.find(token) != std::string::npos)
      return true;
  return false;
}

/// `program` followed by the entries of its kernels.
std::string withEntries(const std::string &program) {
  std::string text = program;
  text += "\n// ---- entries of the CUDA simulator\n";
  std::string decl = kKernelDecl;
  for (size_t at = program.find(decl); at != std::string::npos;) {
    size_t nameStart = at + decl.size();
    size_t nameEnd = program.find('(', nameStart);
    size_t next = program.find(decl, nameStart);
    if (nameEnd == std::string::npos)
      break;
    std::string name = program.substr(nameStart, nameEnd - nameStart);
    std::string body = program.substr(
        at, (next == std::string::npos ? program.size() : next) - at);
    text += "extern \"C\" __attribute__((visibility(\"default\"))) int "
            "loom_sim_entry_" +
            name +
            "(void **p, const unsigned *g, const unsigned *b) { return "
            "loom_sim::run(" +
            name + ", p, g, b, " + (synchronizes(body) ? "true" : "false") +
            ", \"" + name + "\"); }\n";
    at = next;
  }
  return text;
}

const char *const kFlags[] = {
    "-std=c++17",           "-O1", "-fPIC", "-shared", "-fvisibility=hidden",
    "-fno-strict-aliasing", "-w"};

} // namespace

bool supported(std::string &why) {
#if defined(__x86_64__) && defined(__linux__)
  (void)why;
  return true;
#else
  why = "the CUDA simulator runs on x86-64 Linux only";
  return false;
#endif
}

bool compile(const std::vector<std::string> &programs,
             const std::string &cacheDir, std::vector<std::string> &images,
             std::string &how, std::string &error) {
  if (!supported(error))
    return false;
  std::string cxx = findCompiler(error);
  if (cxx.empty())
    return false;
  auto started = std::chrono::steady_clock::now();
  // The work directory: the cache's, or a new temporary one.
  std::string dir = cacheDir.empty() ? "" : cacheDir + "/sim";
  bool temporary = dir.empty();
  if (temporary) {
    const char *tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp && *tmp ? tmp : "/tmp") + "/loom-sim-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back(0);
    if (!mkdtemp(buf.data())) {
      error = "the CUDA simulator cannot make a directory under " + pattern;
      return false;
    }
    dir = buf.data();
  } else if (!files::makeDirectories(dir, error)) {
    error = "the CUDA simulator cannot make its cache directory: " + error;
    return false;
  }
  // The headers, named by their contents (a changed header is a new key).
  std::string headerKey =
      hex16(fnv1a(std::string(kSimHeader) + kFp16Header + kBf16Header + cxx));
  std::string include = dir + "/include-" + headerKey;
  for (auto [name, text] : {std::pair{"loom_sim.h", kSimHeader},
                            std::pair{"cuda_fp16.h", kFp16Header},
                            std::pair{"cuda_bf16.h", kBf16Header}}) {
    std::string path = include + "/" + name, existing, ignored;
    if (files::readFile(path, existing, ignored) && existing == text)
      continue;
    if (!files::makeDirectories(include, error) ||
        !files::writeFileAtomically(path, text, error)) {
      error = "the CUDA simulator cannot write " + path +
              (error.empty() ? "" : ": " + error);
      return false;
    }
  }

  images.assign(programs.size(), "");
  std::vector<std::string> errors(programs.size());
  std::vector<char> cached(programs.size(), 0);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < programs.size();) {
      std::string source = withEntries(programs[i]);
      std::string key = headerKey;
      for (const char *f : kFlags)
        key += std::string(" ") + f;
      std::string stem =
          dir + "/" +
          hex16(fnv1a(key + source) ^ std::hash<std::string>()(source)) + "-" +
          std::to_string(source.size());
      std::string so = stem + ".so";
      if (access(so.c_str(), R_OK) == 0) {
        images[i] = so;
        cached[i] = 1;
        continue;
      }
      std::string unique =
          "." + std::to_string(getpid()) + "-" + std::to_string(i) + ".tmp";
      std::string cpp = stem + unique + ".cpp", out = stem + unique + ".so",
                  log = stem + unique + ".log";
      if (!files::writeFileAtomically(cpp, source, errors[i]))
        continue;
      std::vector<std::string> argv = {cxx};
      for (const char *f : kFlags)
        argv.push_back(f);
      argv.insert(argv.end(), {"-I" + include, "-include", "loom_sim.h", "-x",
                               "c++", cpp, "-o", out});
      int rc = runProcess(argv, log);
      std::string text, ignored;
      files::readFile(log, text, ignored);
      if (rc != 0) {
        if (text.size() > 4000)
          text = text.substr(0, 4000) + "\n...";
        errors[i] = rc < 0 ? "cannot run " + cxx
                           : cxx + " failed (exit " + std::to_string(rc) +
                                 "):\n" + text;
      } else if (std::rename(out.c_str(), so.c_str()) != 0) {
        errors[i] = "cannot rename " + out + " to " + so;
      } else {
        images[i] = so;
      }
      std::remove(cpp.c_str());
      std::remove(log.c_str());
      std::remove(out.c_str());
    }
  };
  unsigned threads = std::min<unsigned>(
      std::max(1u, std::thread::hardware_concurrency()), programs.size());
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back(work);
  work();
  for (std::thread &t : pool)
    t.join();
  for (const std::string &e : errors)
    if (!e.empty()) {
      error = "compiling the CUDA source as host C++ for the simulator: " + e;
      return false;
    }
  // A temporary directory goes once loaded: the caller loads right away
  // (dlopen keeps a removed file mapped), so only the headers go now.
  if (temporary)
    for (const char *name : {"loom_sim.h", "cuda_fp16.h", "cuda_bf16.h"})
      std::remove((include + "/" + name).c_str());
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f", seconds);
  how = "host C++ (" + cxx + "), " + std::to_string(programs.size()) +
        " programs (" +
        std::to_string(std::count(cached.begin(), cached.end(), 1)) +
        " from the cache) in " + buf + " s";
  return true;
}

} // namespace loom::cuda::sim
