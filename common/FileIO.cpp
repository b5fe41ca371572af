//===- FileIO.cpp - reading files whole, writing them atomically ----------===//

#include "loom/common/FileIO.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

namespace loom::files {

namespace {

/// Closes a descriptor when it goes out of scope.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0)
      ::close(fd);
  }
  /// Closes now; false (errno set) when close reports an error.
  bool close() {
    int f = fd;
    fd = -1;
    return f < 0 || ::close(f) == 0;
  }
};

std::string reason() { return std::strerror(errno); }

/// "WHAT 'PATH'" (or "'PATH'"), as messages name a file.
std::string quoted(const std::string &path, const std::string &what) {
  return (what.empty() ? "" : what + " ") + "'" + path + "'";
}

/// Opens `path` read-only into `f` and stats it; false with "cannot open
/// WHAT 'PATH': reason" in `error`.
bool openAndStat(const std::string &path, const std::string &what, Fd &f,
                 struct stat &st, std::string &error) {
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0 || ::fstat(f.fd, &st) != 0) {
    error = "cannot open " + quoted(path, what) + ": " + reason();
    return false;
  }
  return true;
}

} // namespace

MappedFile::MappedFile(MappedFile &&other) noexcept
    : data_(other.data_), size_(other.size_), path_(std::move(other.path_)) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile &MappedFile::operator=(MappedFile &&other) noexcept {
  if (this != &other) {
    unmap();
    data_ = other.data_;
    size_ = other.size_;
    path_ = std::move(other.path_);
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() { unmap(); }

void MappedFile::unmap() {
  if (data_ && size_)
    ::munmap(const_cast<char *>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

bool MappedFile::open(const std::string &path, std::string &error,
                      const std::string &what) {
  unmap();
  path_ = path;
  Fd f;
  struct stat st;
  if (!openAndStat(path, what, f, st, error))
    return false;
  if (!S_ISREG(st.st_mode)) {
    error = "cannot map " + quoted(path, what) + ": " +
            (S_ISDIR(st.st_mode) ? "it is a directory" : "not a regular file");
    return false;
  }
  if (st.st_size == 0)
    return true;
  void *p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ,
                   MAP_PRIVATE, f.fd, 0);
  if (p == MAP_FAILED) {
    error = "cannot map " + quoted(path, what) + ": " + reason();
    return false;
  }
  data_ = static_cast<const char *>(p);
  size_ = static_cast<uint64_t>(st.st_size);
  return true;
}

void MappedFile::release(uint64_t offset, uint64_t length) const {
  if (!data_ || offset >= size_)
    return;
  length = std::min(length, size_ - offset);
  // Whole pages around the range (the mapping covers the last page whole).
  static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  uint64_t first = offset / page * page;
  uint64_t last = (offset + length + page - 1) / page * page;
  if (last > first)
    ::madvise(const_cast<char *>(data_) + first, last - first, MADV_DONTNEED);
}

bool readFile(const std::string &path, std::string &bytes, std::string &error,
              const std::string &what, uint64_t maxBytes) {
  Fd f;
  struct stat st;
  if (!openAndStat(path, what, f, st, error))
    return false;
  std::string named = quoted(path, what);
  if (S_ISDIR(st.st_mode)) {
    error = "cannot read " + named + ": it is a directory";
    return false;
  }
  auto tooLarge = [&] {
    error = named + " is too large (more than " + std::to_string(maxBytes) +
            " bytes)";
    bytes.clear();
    return false;
  };
  if (st.st_size > 0 && static_cast<uint64_t>(st.st_size) > maxBytes)
    return tooLarge();
  bytes.clear();
  if (st.st_size > 0)
    bytes.reserve(static_cast<size_t>(st.st_size));
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(f.fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      error = "cannot read " + named + ": " + reason();
      return false;
    }
    if (n == 0)
      return true;
    if (static_cast<uint64_t>(n) > maxBytes - bytes.size())
      return tooLarge();
    bytes.append(buffer, static_cast<size_t>(n));
  }
}

static bool writeAll(int fd, std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

bool writeFileAtomically(const std::string &path, const std::string &bytes,
                         std::string &error) {
  return writeFileAtomically(path, std::vector<std::string_view>{bytes}, error);
}

bool writeFileAtomically(const std::string &path,
                         const std::vector<std::string_view> &pieces,
                         std::string &error) {
  static std::atomic<unsigned> counter{0};
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "."
                    : slash == 0               ? "/"
                                               : path.substr(0, slash);
  // A name no other process or call uses; O_EXCL makes sure.
  std::string temp;
  Fd f;
  for (int attempt = 0; attempt < 100 && f.fd < 0; ++attempt) {
    temp = path + ".tmp-" + std::to_string(::getpid()) + "-" +
           std::to_string(counter++);
    f.fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (f.fd < 0 && errno != EEXIST)
      break;
  }
  if (f.fd < 0) {
    error = "cannot create '" + temp + "': " + reason();
    return false;
  }
  bool ok = true;
  for (std::string_view piece : pieces)
    ok = ok && writeAll(f.fd, piece);
  ok = ok && ::fsync(f.fd) == 0;
  ok = f.close() && ok;
  if (!ok || ::rename(temp.c_str(), path.c_str()) != 0) {
    error = "writing '" + path + "' failed: " + reason();
    ::unlink(temp.c_str());
    return false;
  }
  // The rename is durable once the directory is on disk.
  Fd d;
  d.fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d.fd < 0 || ::fsync(d.fd) != 0) {
    error = "'" + path + "' was written, but syncing its directory '" + dir +
            "' failed: " + reason();
    return false;
  }
  return true;
}

bool makeDirectory(const std::string &path, std::string &error) {
  if (::mkdir(path.c_str(), 0777) == 0)
    return true;
  int err = errno;
  struct stat st;
  if (err == EEXIST && ::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode))
      return true;
    error = "cannot create the directory '" + path +
            "': a file of that name exists";
    return false;
  }
  error = "cannot create the directory '" + path + "': " + std::strerror(err);
  return false;
}

bool makeDirectories(const std::string &path, std::string &error) {
  for (size_t pos = 1; pos <= path.size(); ++pos)
    if ((pos == path.size() || path[pos] == '/') && path[pos - 1] != '/' &&
        !makeDirectory(path.substr(0, pos), error))
      return false;
  return true;
}

} // namespace loom::files
