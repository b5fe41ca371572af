//===- FileHeader.h - the header scheme of Loom's files ---------*- C++ -*-===//
//
// Artifacts, checkpoints and the NVRTC cache's entries start with one
// header: magic, format version, the message's length and its checksum,
// checked before anything in the file is trusted. No protobuf: tools that
// only check a file (loom-run's compile cache) link LoomFileIO alone.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMMON_FILEHEADER_H
#define LOOM_COMMON_FILEHEADER_H

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

/// Limits on what a file (an artifact, a checkpoint) may make the loader
/// read or allocate, checked before anything is trusted. The runtime's
/// come from loom_instance_options (max_file_bytes, max_tensor_bytes);
/// docs/hardening.md.
struct Limits {
  /// protobuf reads at most 2 GiB - 1 bytes in one message.
  static constexpr uint64_t kMaxFileBytes = (uint64_t(1) << 31) - 1;
  static constexpr uint64_t kDefaultMaxTensorBytes = uint64_t(8) << 30;
  /// Bytes of a whole file; at most kMaxFileBytes.
  uint64_t maxFileBytes = kMaxFileBytes;
  /// Bytes of one tensor a file holds or has the runtime allocate: a
  /// weight, a training state (zero-filled ones too), a checkpoint tensor,
  /// a sharded one merged.
  uint64_t maxTensorBytes = kDefaultMaxTensorBytes;
};

/// A kind of file in the header scheme: artifacts (kMagic, kFormatVersion)
/// and checkpoints (loom/common/Checkpoint.h). `noun` ("artifact") and
/// `title` ("Loom artifact") name it in messages; `remedy` says what to do
/// about another format version.
struct FileKind {
  const char (&magic)[8];
  uint32_t version;
  const char *noun;
  const char *title;
  const char *remedy;
};
inline constexpr FileKind kArtifactFile = {
    kMagic, kFormatVersion, "artifact", "Loom artifact", "recompile the model"};

/// The header for a serialized message `body` of a file of `kind`.
std::string header(const std::string &body,
                   const FileKind &kind = kArtifactFile);

/// Checks the header of a whole file's bytes (magic, version, length,
/// checksum) and sets `body`, `bodySize` to the message after it. On
/// failure returns false with a message naming what is wrong.
/// A file larger than `maxBytes` is refused.
bool checkHeader(const void *data, size_t size, const FileKind &kind,
                 const char *&body, size_t &bodySize, std::string &error,
                 uint64_t maxBytes = Limits::kMaxFileBytes);

} // namespace loom::artifact

#endif // LOOM_COMMON_FILEHEADER_H
