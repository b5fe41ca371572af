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
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace google::protobuf {
class MessageLite;
} // namespace google::protobuf

namespace loom::artifact {

/// A parsed file's data section (FileParts): where its segments point.
struct DataSection {
  const char *data = nullptr;
  uint64_t size = 0;
};

/// Parses and validates a whole file's bytes into `out`, and sets
/// `section` to its data section. On failure returns false and a message
/// naming what is wrong (foreign file, version, truncated file, checksum,
/// inconsistent signature, a weight or initial value whose segment is out
/// of the file or corrupt). The tensors' bytes are read through
/// weightData / initialData while `data` lives.
bool parse(const void *data, size_t size, Artifact &out, std::string &error,
           const Limits &limits = {}, DataSection *section = nullptr);

/// The bytes of a tensor of a parsed file: its segment in `section`, or
/// its inline data (a version 2 file, or a message built in memory).
std::string_view weightData(const DataSection &section, const Weight &w);
std::string_view initialData(const DataSection &section,
                             const TrainingState &s);
std::string_view tensorData(const DataSection &section,
                            const CheckpointTensor &t);

/// The bytes of a tensor held inline (`inlineData`) or in `segment` (null
/// when it has none) of `section`: checks that it is not both and that a
/// segment lies in the section (aligned, in range, its checksum); `where`
/// names the tensor in the message. The one check behind weights, initial
/// values and checkpoint tensors.
bool locateTensor(const DataSection &section, const std::string &inlineData,
                  const Segment *segment, const std::string &where,
                  std::string_view &bytes, std::string &error);

/// Writes a file in the header scheme with a data section: the message,
/// then the bytes of every segment added, in order, each at a multiple of
/// kSegmentAlign.
class FileWriter {
public:
  /// Places `bytes` in the next segment and describes it in `segment`
  /// (nothing for no bytes). Not copied: they must live, unchanged, until
  /// the file is written.
  void add(std::string_view bytes, Segment &segment);
  /// The same for bytes the writer takes (freed as they are written).
  void add(std::string &&bytes, Segment &segment);
  /// The whole file as one string (nested files, tests).
  bool assemble(const google::protobuf::MessageLite &message,
                const FileKind &kind, std::string &out, std::string &error);
  /// The whole file at `path`, written atomically (files::
  /// writeFileAtomically) without assembling it in memory.
  bool write(const google::protobuf::MessageLite &message, const FileKind &kind,
             const std::string &path, std::string &error);

private:
  bool pieces(const google::protobuf::MessageLite &message,
              const FileKind &kind, std::string &head,
              std::vector<std::string_view> &out, std::string &error);
  std::vector<std::string_view> segments_;
  std::deque<std::string> owned_;
  uint64_t next_ = 0;
};

/// Moves the inline data of every weight and initial value of `a` into
/// `writer`'s segments.
void moveToSegments(Artifact &a, FileWriter &writer);

/// The bytes of a .loom file holding `a` (its tensor data moved out of the
/// message into the data section: `a` keeps only the index).
bool serialize(Artifact &a, std::string &bytes, std::string &error);

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

/// locateTensor, then checkTensorData, for a message that holds a
/// tensor's dtype, dims and bytes (inline `data` or a `segment`): a
/// Weight or a CheckpointTensor.
template <class Message>
bool checkStoredTensor(const DataSection &section, const Message &t,
                       const std::string &where, uint64_t maxBytes,
                       std::string &error) {
  std::string_view bytes;
  return locateTensor(section, t.data(),
                      t.has_segment() ? &t.segment() : nullptr, where, bytes,
                      error) &&
         checkTensorData(t.dtype(), t.dims().data(),
                         static_cast<size_t>(t.dims_size()), bytes.size(),
                         where, error, maxBytes);
}

/// "f32", "i64", ...; "undefined" for an unknown dtype.
const char *dtypeName(int dtype);

/// "f32[4, 2]": a dtype and dims for messages.
std::string typeString(int dtype, const int64_t *dims, size_t rank);

} // namespace loom::artifact

#endif // LOOM_COMMON_ARTIFACT_H
