//===- loom-nvrtc-check.cpp - compile generated CUDA sources with NVRTC ---===//
//
//   loom-nvrtc-check [--arch sm_80,sm_90] [--jobs J] [--kernels-per-program K]
//                    [--cache DIR] [--no-spills] [--check-geometry]
//                    FILE.cu|FILE.loom...
//
// Compiles every kernel of the given files (sources from `loomc --emit
// cuda`, or the CUDA source inside `.loom` artifacts) with NVRTC for each
// arch, as CI's check that the CUDA emitter's output compiles (no GPU
// needed). The files' kernels are put into C programs per arch: the
// prelude once, then each file's kernels in a namespace of its own (so
// that kernel names of different models do not collide), compiled in
// parallel; a region whose text another file already had is compiled
// once. Prints "N kernels compiled (F files, A archs, S s)"; exit 1 on
// any compile error (with NVRTC's log naming the file), 77 when NVRTC is
// not available (CTest skips).
//
// --no-spills: ptxas reports each kernel's registers and spills
// (--ptxas-options=-v, no cache); a kernel that spills is an error, named
// with its bytes of spill stores and loads.
// --check-geometry (artifacts): a kernel whose largest buffer has more
// than 1M elements and whose grid has fewer than 132 blocks (an H100's
// SMs) leaves most of a GPU idle: an error naming it, its grid and the
// buffer. Both checks print one line per kernel they refuse, then exit 1.
//
//===----------------------------------------------------------------------===//

#include "common/schema/loom_artifact.pb.h"
#include "loom/common/Artifact.h"
#include "loom/common/FileIO.h"
#include "loom/common/Nvrtc.h"
#include "loom/common/SourceChunks.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace {

std::vector<std::string> split(const std::string &s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string::npos)
      end = s.size();
    if (end > start)
      out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

/// The kernels of `a` that touch more than 1M elements of one buffer on
/// fewer than 132 blocks: "fusion_3 (description): grid 1 block 256, buffer
/// 'x' of 6291456 elements".
std::vector<std::string> smallGrids(const loom::artifact::Artifact &a) {
  constexpr int64_t kElements = int64_t(1) << 20, kBlocks = 132;
  std::vector<std::string> out;
  const auto &c = a.cuda();
  for (const auto &k : c.kernels()) {
    int64_t largest = 0;
    std::string name;
    for (int b : k.args()) {
      if (b < 0 || b >= c.buffers_size())
        continue;
      const auto &buf = c.buffers(b);
      int64_t size =
          static_cast<int64_t>(loom::artifact::dtypeSize(buf.dtype()));
      int64_t n = size ? buf.bytes() / size : 0;
      if (n > largest)
        largest = n, name = buf.name();
    }
    if (largest > kElements && k.grid() < kBlocks)
      out.push_back(k.name() + " (" + k.description() + "): grid " +
                    std::to_string(k.grid()) + " block " +
                    std::to_string(k.block()) + ", buffer '" + name + "' of " +
                    std::to_string(largest) + " elements");
  }
  return out;
}

/// The kernels ptxas says spill, from NVRTC's log with -v: "NAME: 24 bytes
/// spill stores, 24 bytes spill loads (sm_90)".
std::vector<std::string> spills(const std::string &log,
                                const std::string &arch) {
  std::vector<std::string> out;
  std::string function;
  size_t at = 0;
  while (at < log.size()) {
    size_t end = log.find('\n', at);
    if (end == std::string::npos)
      end = log.size();
    std::string line = log.substr(at, end - at);
    at = end + 1;
    const char *props = "Function properties for ";
    if (size_t p = line.find(props); p != std::string::npos) {
      function = line.substr(p + std::strlen(props));
      continue;
    }
    long stores = 0, loads = 0;
    if (const char *s = std::strstr(line.c_str(), "bytes spill stores")) {
      // "    0 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads"
      const char *comma = line.c_str();
      for (const char *c = s; c > line.c_str(); --c)
        if (*c == ',') {
          comma = c + 1;
          break;
        }
      stores = std::strtol(comma, nullptr, 10);
      const char *l = std::strstr(s, ",");
      loads = l ? std::strtol(l + 1, nullptr, 10) : 0;
      if (stores || loads)
        out.push_back(function + ": " + std::to_string(stores) +
                      " bytes spill stores, " + std::to_string(loads) +
                      " bytes spill loads (" + arch + ")");
    }
  }
  return out;
}

int usage() {
  std::fprintf(stderr, "usage: loom-nvrtc-check [--arch sm_80,sm_90] "
                       "[--jobs J] [--kernels-per-program K] [--cache DIR] "
                       "[--no-spills] [--check-geometry] FILE...\n");
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> archs = {"sm_80", "sm_90"}, paths;
  unsigned jobs = 0;
  size_t perChunk = 24;
  std::string cache;
  bool noSpills = false, checkGeometry = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--arch")
      archs = split(value(), ',');
    else if (a == "--jobs")
      jobs = static_cast<unsigned>(std::atoi(value().c_str()));
    else if (a == "--kernels-per-program")
      perChunk = std::max(1, std::atoi(value().c_str()));
    else if (a == "--cache")
      cache = value();
    else if (a == "--no-spills")
      noSpills = true;
    else if (a == "--check-geometry")
      checkGeometry = true;
    else if (a.rfind("--", 0) == 0)
      return usage();
    else
      paths.push_back(a);
  }
  if (paths.empty() || archs.empty())
    return usage();
  std::string why;
  if (!loom::cuda::nvrtc(why)) {
    std::printf("skipped: %s\n", why.c_str());
    return 77;
  }

  // The prelude once, each file's regions in a namespace of the file.
  std::string prelude;
  std::vector<std::string> regions;
  std::set<std::string> unique;
  size_t kernels = 0;
  std::vector<std::string> refused;
  for (size_t f = 0; f < paths.size(); ++f) {
    const std::string &path = paths[f];
    std::string bytes, error;
    if (!loom::files::readFile(path, bytes, error)) {
      std::fprintf(stderr, "error: %s\n", error.c_str());
      return 1;
    }
    std::string source = bytes;
    if (path.size() > 5 && path.compare(path.size() - 5, 5, ".loom") == 0) {
      loom::artifact::Artifact artifact;
      if (!loom::artifact::parse(bytes.data(), bytes.size(), artifact, error)) {
        std::fprintf(stderr, "error: %s: %s\n", path.c_str(), error.c_str());
        return 1;
      }
      if (!artifact.has_cuda()) {
        std::fprintf(stderr,
                     "error: %s has no CUDA code (compile it with "
                     "--target cuda)\n",
                     path.c_str());
        return 1;
      }
      source = artifact.cuda().source();
      if (checkGeometry)
        for (const std::string &k : smallGrids(artifact))
          refused.push_back(path + ": " + k);
    } else if (checkGeometry) {
      std::fprintf(stderr,
                   "error: --check-geometry reads artifacts (.loom), not %s\n",
                   path.c_str());
      return 1;
    }
    std::string filePrelude;
    std::vector<std::string> fileRegions;
    if (!loom::cuda::splitRegions(source, filePrelude, fileRegions)) {
      std::fprintf(stderr,
                   "error: %s is not a loomc CUDA source (no "
                   "prelude)\n",
                   path.c_str());
      return 1;
    }
    if (prelude.empty())
      prelude =
          filePrelude + "#undef LOOM_KERNEL\n#define LOOM_KERNEL __global__\n";
    if (fileRegions.empty() && loom::cuda::countKernels(source) > 0) {
      std::fprintf(stderr, "error: %s has kernels outside regions\n",
                   path.c_str());
      return 1;
    }
    kernels += loom::cuda::countKernels(source);
    std::string ns = "loom_file_" + std::to_string(f);
    for (const std::string &region : fileRegions)
      // A region of the same text (same kernel names and code) as one
      // already taken compiles to the same code: compiled once.
      if (unique.insert(region).second)
        regions.push_back("\n// " + path + "\nnamespace " + ns + " {" + region +
                          "\n} // namespace " + ns + "\n");
  }
  std::vector<std::string> programs =
      loom::cuda::chunkSource(prelude, regions, perChunk);
  std::vector<loom::cuda::CompileRequest> requests;
  std::vector<std::string> options;
  if (noSpills)
    options.push_back("--ptxas-options=-v");
  for (const std::string &arch : archs)
    for (const std::string &p : programs)
      requests.push_back({p, arch, options});
  auto started = std::chrono::steady_clock::now();
  // ptxas's report comes with a compile, not with a cached cubin.
  loom::cuda::NvrtcCompiler compiler(noSpills ? "" : cache);
  std::vector<loom::cuda::CompileResult> results =
      compiler.compileAll(requests, jobs);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  int failures = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].ok)
      continue;
    ++failures;
    std::fprintf(stderr, "error: %s\n", results[i].error.c_str());
  }
  if (failures) {
    std::fprintf(stderr, "%d of %zu NVRTC programs failed\n", failures,
                 results.size());
    return 1;
  }
  if (noSpills)
    for (size_t i = 0; i < results.size(); ++i)
      for (const std::string &k : spills(results[i].log, requests[i].arch))
        refused.push_back("spills: " + k);
  for (const std::string &r : refused)
    std::fprintf(stderr, "error: %s\n", r.c_str());
  if (!refused.empty()) {
    std::fprintf(stderr, "%zu kernels refused (%s%s%s)\n", refused.size(),
                 checkGeometry ? "fewer than 132 blocks for more than 1M "
                                 "elements"
                               : "",
                 checkGeometry && noSpills ? "; " : "",
                 noSpills ? "spills" : "");
    return 1;
  }
  std::printf("%zu kernels compiled (%zu files, %zu archs: ", kernels,
              paths.size(), archs.size());
  for (size_t i = 0; i < archs.size(); ++i)
    std::printf("%s%s", i ? "," : "", archs[i].c_str());
  std::printf("; %zu distinct regions in %zu NVRTC programs, %.1f s)%s%s\n",
              regions.size(), requests.size(), seconds,
              noSpills ? "; no spills" : "",
              checkGeometry ? "; every kernel over 1M elements on 132 blocks "
                              "or more"
                            : "");
  return 0;
}
