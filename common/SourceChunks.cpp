//===- SourceChunks.cpp - a generated CUDA source in NVRTC programs -------===//

#include "loom/common/SourceChunks.h"

#include <cstring>

namespace loom::cuda {

bool splitRegions(const std::string &source, std::string &prelude,
                  std::vector<std::string> &regions) {
  size_t end = source.find(kPreludeEnd);
  if (end == std::string::npos)
    return false;
  end += std::strlen(kPreludeEnd);
  prelude = source.substr(0, end) + "\n";
  size_t at = source.find(kRegionMarker, end);
  while (at != std::string::npos) {
    size_t next = source.find(kRegionMarker, at + 1);
    regions.push_back(source.substr(
        at, next == std::string::npos ? std::string::npos : next - at));
    at = next;
  }
  return true;
}

size_t countKernels(const std::string &text) {
  size_t n = 0;
  for (size_t at = 0; (at = text.find(kKernelDecl, at)) != std::string::npos;
       ++at)
    ++n;
  return n;
}

std::vector<std::string> chunkSource(const std::string &prelude,
                                     const std::vector<std::string> &regions,
                                     size_t kernelsPerChunk) {
  std::vector<std::string> chunks;
  size_t kernels = 0;
  for (const std::string &region : regions) {
    if (chunks.empty() || kernels >= kernelsPerChunk) {
      chunks.push_back(prelude);
      kernels = 0;
    }
    chunks.back() += region;
    kernels += countKernels(region);
  }
  return chunks;
}

} // namespace loom::cuda
