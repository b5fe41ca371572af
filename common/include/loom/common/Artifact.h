//===- Artifact.h - reading .loom files -----------------------------------===//
//
// The artifact format (common/schema/loom_artifact.proto) and its reader:
// the runtime loads artifacts with it; the compiler writes the same header
// (loom/common/FileHeader.h) through kArtifactFile.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMMON_ARTIFACT_H
#define LOOM_COMMON_ARTIFACT_H

#include "common/schema/loom_artifact.pb.h"
#include "loom/common/FileHeader.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace loom::artifact {

/// Parses and validates a whole file's bytes into `out`. On failure
/// returns false and a message naming what is wrong (foreign file, version,
/// truncated file, checksum, inconsistent signature or weights).
bool parse(const void *data, size_t size, Artifact &out, std::string &error,
           const Limits &limits = {});

/// Bytes per element of `dtype`, 0 when unknown.
size_t dtypeSize(int dtype);

/// The bytes of a dense tensor of `dtype` and `dims` in `bytes` when it
/// is a known dtype, at most 16 dims, none negative, and at most
/// `maxBytes` (no overflow); otherwise false with `error`, starting with
/// `where`.
bool tensorBytes(int dtype, const int64_t *dims, size_t rank, uint64_t maxBytes,
                 const std::string &where, uint64_t &bytes, std::string &error);

/// Whether `bytes` bytes are the dense data of a tensor of `dtype` and
/// `dims` (tensorBytes' checks, and exactly that size); sets `error`,
/// starting with `where`, otherwise.
bool checkTensorData(int dtype, const int64_t *dims, size_t rank, size_t bytes,
                     const std::string &where, std::string &error,
                     uint64_t maxBytes = UINT64_MAX);

/// "f32", "i64", ...; "undefined" for an unknown dtype.
const char *dtypeName(int dtype);

/// "f32[4, 2]": a dtype and dims for messages.
std::string typeString(int dtype, const int64_t *dims, size_t rank);

} // namespace loom::artifact

#endif // LOOM_COMMON_ARTIFACT_H
