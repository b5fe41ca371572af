//===- FileIO.h - reading files whole, writing them atomically ------------===//
//
// The one file reader and atomic writer of the runtime and its tools
// (artifacts, checkpoints, traces, loom-run's outputs, loomc's artifacts).
// No protobuf, MLIR or LLVM: a static library that the runtime and the
// tools both link.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMMON_FILEIO_H
#define LOOM_COMMON_FILEIO_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loom::files {

/// Reads the whole file at `path` into `bytes`. On failure returns false
/// with `error` naming the file and the reason: "cannot open WHAT 'PATH':
/// No such file or directory" (`what` may be empty: "cannot open 'PATH'...").
/// A file of more than `maxBytes` (a regular file by its size, anything
/// else, like a device or a pipe, as it is read) is refused:
/// "WHAT 'PATH' is too large (more than N bytes)".
bool readFile(const std::string &path, std::string &bytes, std::string &error,
              const std::string &what = "", uint64_t maxBytes = UINT64_MAX);

/// A file mapped read-only into memory (mmap): its pages are read from
/// the file when touched and shared with every process mapping the same
/// file, so data of any size costs address space, not memory. Movable,
/// not copyable; unmapped on destruction.
class MappedFile {
public:
  MappedFile() = default;
  MappedFile(MappedFile &&other) noexcept;
  MappedFile &operator=(MappedFile &&other) noexcept;
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  ~MappedFile();

  /// Maps the whole file at `path`; false with `error` as readFile's
  /// ("cannot open WHAT 'PATH': ..."). An empty file maps to no bytes.
  bool open(const std::string &path, std::string &error,
            const std::string &what = "");

  const char *data() const { return data_; }
  uint64_t size() const { return size_; }
  const std::string &path() const { return path_; }

  /// Drops the pages holding [offset, offset + length) from this
  /// process's memory (madvise DONTNEED, whole pages around the range): a
  /// reader that streams through the file keeps its resident set small.
  /// The bytes stay readable; touching them again reads them from the
  /// file (or the page cache), so a neighbour on a shared page loses
  /// nothing.
  void release(uint64_t offset, uint64_t length) const;

private:
  void unmap();
  const char *data_ = nullptr;
  uint64_t size_ = 0;
  std::string path_;
};

/// Writes `bytes` to `path` so that a reader (or a crash at any point)
/// sees the old file or the whole new one, never a part: a temporary file
/// beside it (unique per process and call), written, fsynced, renamed over
/// `path`, then the directory fsynced so the rename itself is durable.
/// Safe to call from several threads (for different paths).
bool writeFileAtomically(const std::string &path, const std::string &bytes,
                         std::string &error);

/// The same for a file made of `pieces`, written one after the other (a
/// file larger than memory need never be assembled).
bool writeFileAtomically(const std::string &path,
                         const std::vector<std::string_view> &pieces,
                         std::string &error);

/// Creates the directory `path` unless it exists (one level; its parent
/// must exist). False with `error` when it cannot, or when `path` is a
/// file.
bool makeDirectory(const std::string &path, std::string &error);

/// `mkdir -p path`: every missing directory of `path` (no shell). False
/// with `error` when one cannot be made or a file stands in the way.
bool makeDirectories(const std::string &path, std::string &error);

} // namespace loom::files

#endif // LOOM_COMMON_FILEIO_H
