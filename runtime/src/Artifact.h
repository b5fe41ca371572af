//===- Artifact.h - reading .loom files -----------------------------------===//
//
// The runtime owns the artifact format (runtime/artifact/loom_artifact.proto);
// this is its reader. The compiler writes the same header through
// loom::artifact::kMagic and kFormatVersion.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_ARTIFACT_H
#define LOOM_RUNTIME_ARTIFACT_H

#include "runtime/artifact/loom_artifact.pb.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace loom::artifact {

/// The file starts with these 8 bytes, then the format version (uint32),
/// the message's length and its FNV-1a 64-bit checksum (uint64 each, all
/// little endian), then the Artifact message.
inline constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'A', 'R', 'T', 'F'};
/// Bump on every change a reader of the previous version cannot read.
/// 2: length and checksum in the header.
inline constexpr uint32_t kFormatVersion = 2;
inline constexpr size_t kHeaderSize = 28;

/// The header for a serialized Artifact `body`.
std::string header(const std::string &body);

/// Parses and validates a whole file's bytes into `out`. On failure
/// returns false and a message naming what is wrong (foreign file, version,
/// truncated file, checksum, inconsistent signature or weights).
bool parse(const void *data, size_t size, Artifact &out, std::string &error);

/// Bytes per element of `dtype`, 0 when unknown.
size_t dtypeSize(int dtype);

} // namespace loom::artifact

#endif // LOOM_RUNTIME_ARTIFACT_H
