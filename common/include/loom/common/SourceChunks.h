//===- SourceChunks.h - a generated CUDA source in NVRTC programs -*- C++
//-*-===//
//
// NVRTC's time grows faster than linearly with a program's size, so a
// generated source (loomc --target cuda) is compiled as several programs
// compiled in parallel: the prelude, then the text of a few regions each
// (every region's text starts with "// ---- region NAME" and holds its
// constants and kernels, so a chunk is self-contained).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMMON_SOURCECHUNKS_H
#define LOOM_COMMON_SOURCECHUNKS_H

#include <string>
#include <vector>

namespace loom::cuda {

inline constexpr const char *kPreludeEnd = "// ---- end of the loom prelude";
inline constexpr const char *kRegionMarker = "\n// ---- region ";
/// Starts every kernel's definition (`LOOM_KERNEL void NAME(...)`):
/// the runtime finds a kernel's parameters after it.
inline constexpr const char *kKernelDecl = "LOOM_KERNEL void ";

/// The prelude (up to and including its end marker) and the regions'
/// texts of a generated source; false when `source` has no prelude.
bool splitRegions(const std::string &source, std::string &prelude,
                  std::vector<std::string> &regions);

/// The number of kernels (`LOOM_KERNEL void`) in `text`.
size_t countKernels(const std::string &text);

/// Programs of about `kernelsPerChunk` kernels each: the prelude and whole
/// regions, in order.
std::vector<std::string> chunkSource(const std::string &prelude,
                                     const std::vector<std::string> &regions,
                                     size_t kernelsPerChunk);

} // namespace loom::cuda

#endif // LOOM_COMMON_SOURCECHUNKS_H
