//===- FuzzHeader.h - fuzzing a file behind the header scheme ---*- C++ -*-===//
//
// Artifacts and checkpoints start with a header holding the message's
// length and checksum (loom/common/Artifact.h): almost every mutation of
// a seed fails the checksum. The fuzz targets therefore check each input
// twice: as it is (the header's checks), and with its message behind a
// fresh header (the message's own checks).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TEST_FUZZ_FUZZHEADER_H
#define LOOM_TEST_FUZZ_FUZZHEADER_H

#include "loom/common/Artifact.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace loom::fuzz {

/// The limits the targets load with: lower than the defaults, so that an
/// input cannot make a target allocate more than libFuzzer allows.
inline artifact::Limits fuzzLimits() {
  artifact::Limits limits;
  limits.maxTensorBytes = 64 << 20;
  return limits;
}

/// Calls `check(bytes, size)` on the input, then on its message (what
/// follows a header of `kind`, or the whole input) behind a fresh header.
template <typename Check>
void checkBothWays(const uint8_t *data, size_t size,
                   const artifact::FileKind &kind, Check check) {
  const char *bytes = reinterpret_cast<const char *>(data);
  check(bytes, size);
  size_t skip = size >= artifact::kHeaderSize &&
                        std::memcmp(bytes, kind.magic, sizeof(kind.magic)) == 0
                    ? artifact::kHeaderSize
                    : 0;
  std::string body(bytes + skip, size - skip);
  std::string file = artifact::header(body, kind) + body;
  check(file.data(), file.size());
}

/// A loader that fails must say why.
inline void requireReason(const std::string &error) {
  if (error.empty())
    std::abort();
}

} // namespace loom::fuzz

#endif // LOOM_TEST_FUZZ_FUZZHEADER_H
