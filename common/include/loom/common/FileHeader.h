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
/// little endian), then the Artifact message, then (from version 3) the
/// data section: the tensor data the message indexes (Segment), starting
/// at the first multiple of kSegmentAlign after the message.
inline constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'A', 'R', 'T', 'F'};
/// Bump on every change a reader of the previous version cannot read.
/// 2: length and checksum in the header. 3: tensor data in segments after
/// the message (no 2 GiB cap; mapped without copies). Version 2 files
/// still load (their data is inline).
inline constexpr uint32_t kFormatVersion = 3;
inline constexpr size_t kHeaderSize = 28;
/// The data section and every segment in it start at a multiple of this
/// (a cache line, the widest vector load), relative to the file's start.
inline constexpr uint64_t kSegmentAlign = 64;

/// Limits on what a file (an artifact, a checkpoint) may make the loader
/// read or allocate, checked before anything is trusted. The runtime's
/// come from loom_instance_options (max_file_bytes, max_tensor_bytes);
/// docs/hardening.md.
struct Limits {
  /// protobuf reads at most 2 GiB - 1 bytes in one message; a file's
  /// tensor data lies outside it (segments), so the file has no such cap.
  static constexpr uint64_t kMaxMessageBytes = (uint64_t(1) << 31) - 1;
  static constexpr uint64_t kDefaultMaxTensorBytes = uint64_t(8) << 30;
  /// Bytes of a whole file (message and data section); none by default.
  uint64_t maxFileBytes = UINT64_MAX;
  /// Bytes of one tensor a file holds or has the runtime allocate: a
  /// weight, a training state (zero-filled ones too), a checkpoint tensor,
  /// a sharded one merged.
  uint64_t maxTensorBytes = kDefaultMaxTensorBytes;
};

/// A kind of file in the header scheme: artifacts (kMagic, kFormatVersion)
/// and checkpoints (loom/common/Checkpoint.h). `noun` ("artifact") and
/// `title` ("Loom artifact") name it in messages; `remedy` says what to do
/// about another format version. Versions `oldest` to `version` are read;
/// from `segmentsSince` (0: never) a data section may follow the message.
struct FileKind {
  const char (&magic)[8];
  uint32_t version;
  const char *noun;
  const char *title;
  const char *remedy;
  uint32_t oldest = version;
  uint32_t segmentsSince = 0;
};
inline constexpr FileKind kArtifactFile = {
    kMagic,          kFormatVersion,        "artifact",
    "Loom artifact", "recompile the model",
    /*oldest=*/2,    /*segmentsSince=*/3};

/// The parts of a checked file: its message, and its data section (empty
/// when the file has none) where the message's segments point.
struct FileParts {
  uint32_t version = 0;
  const char *body = nullptr;
  size_t bodySize = 0;
  const char *data = nullptr;
  uint64_t dataSize = 0;
};

/// Where the data section of a file whose message has `bodySize` bytes
/// starts (from the file's start).
inline uint64_t dataSectionOffset(uint64_t bodySize) {
  return (kHeaderSize + bodySize + kSegmentAlign - 1) / kSegmentAlign *
         kSegmentAlign;
}

/// The checksum of a segment's bytes: 64 bits, several GB/s (four
/// independent multiply-rotate lanes), so that checking every tensor of a
/// large file at load costs about as much as reading it.
uint64_t segmentChecksum(const char *data, size_t size);

/// The header for a serialized message `body` of a file of `kind`.
std::string header(const std::string &body,
                   const FileKind &kind = kArtifactFile);

/// Checks the header of a whole file's bytes (magic, version, length,
/// checksum) and sets `parts` to the message after it and the data
/// section after that. On failure returns false with a message naming
/// what is wrong. A file larger than `maxBytes` is refused.
bool checkFile(const void *data, size_t size, const FileKind &kind,
               FileParts &parts, std::string &error,
               uint64_t maxBytes = UINT64_MAX);

/// checkFile for a kind without a data section: `body`, `bodySize`.
bool checkHeader(const void *data, size_t size, const FileKind &kind,
                 const char *&body, size_t &bodySize, std::string &error,
                 uint64_t maxBytes = UINT64_MAX);

} // namespace loom::artifact

#endif // LOOM_COMMON_FILEHEADER_H
