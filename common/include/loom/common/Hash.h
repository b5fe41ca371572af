//===- Hash.h - content hashes for cache keys and checksums -----*- C++ -*-===//
//
// FNV-1a (64 bits): the file header's checksum and the compile caches'
// content keys (NVRTC's cubins, the CUDA simulator's libraries,
// loom-run's compiled artifacts). Not cryptographic: the caches key on
// two independent hashes and the length.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMMON_HASH_H
#define LOOM_COMMON_HASH_H

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace loom {

inline constexpr uint64_t kFnvOffset = 1469598103934665603ull;

/// FNV-1a of `bytes`, continuing from `h`.
inline uint64_t fnv1a(std::string_view bytes, uint64_t h = kFnvOffset) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

/// `v` as 16 lowercase hex digits.
inline std::string hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx",
                static_cast<unsigned long long>(v));
  return buf;
}

} // namespace loom

#endif // LOOM_COMMON_HASH_H
