//===- CompileCache.cpp - loomc's cache of compiled outputs ---------------===//

#include "compiler/CompileCache.h"

#include "loom/common/FileIO.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Chrono.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#if defined(__linux__)
#include <link.h>
#endif

using llvm::StringRef;
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

namespace loom::cache {
namespace {

constexpr StringRef kMagic = "loom-compile-cache 1\n";
/// Bytes of a mapped file read between releases of its pages: hashing or
/// copying an output of gigabytes keeps the resident set small.
constexpr uint64_t kChunk = uint64_t(64) << 20;

/// The BLAKE3 of `size` bytes of `file` from `offset`, as 64 hex digits.
std::string hashMapped(const files::MappedFile &file, uint64_t offset,
                       uint64_t size) {
  llvm::BLAKE3 hasher;
  for (uint64_t at = offset, end = offset + size; at < end; at += kChunk) {
    uint64_t n = std::min(kChunk, end - at);
    hasher.update(StringRef(file.data() + at, n));
    file.release(at, n);
  }
  return llvm::toHex(hasher.final(), /*LowerCase=*/true);
}

std::string joinPath(StringRef dir, StringRef name) {
  llvm::SmallString<256> p(dir);
  path::append(p, name);
  return std::string(p);
}

/// The file's contents, mapped when large (no null terminator needed).
llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> mapFile(StringRef file) {
  return llvm::MemoryBuffer::getFile(file, /*IsText=*/false,
                                     /*RequiresNullTerminator=*/false);
}

/// Writes `head` then `body`'s bytes (if any) to `target` through a
/// temporary file in `dir` renamed over it (no fsync: a torn entry is only
/// a miss).
llvm::Error writeRenamed(StringRef dir, StringRef target, StringRef head,
                         const files::MappedFile *body = nullptr) {
  llvm::Expected<fs::TempFile> temp =
      fs::TempFile::create(joinPath(dir, "%%%%%%%%%%%%%%%%.part"));
  if (!temp)
    return temp.takeError();
  {
    llvm::raw_fd_ostream os(temp->FD, /*shouldClose=*/false);
    os << head;
    for (uint64_t at = 0; body && at < body->size() && !os.has_error();
         at += kChunk) {
      uint64_t n = std::min(kChunk, body->size() - at);
      os.write(body->data() + at, n);
      os.flush();
      body->release(at, n);
    }
    os.flush();
    if (std::error_code ec = os.error()) {
      os.clear_error();
      llvm::consumeError(temp->discard());
      return llvm::errorCodeToError(ec);
    }
  }
  return temp->keep(target);
}

/// The files holding the compiler's code (see toolVersion).
std::vector<std::string> codeFiles() {
  std::vector<std::string> files = {fs::getMainExecutable(nullptr, nullptr)};
#if defined(__linux__)
  dl_iterate_phdr(
      [](dl_phdr_info *info, size_t, void *data) {
        StringRef name = info->dlpi_name ? info->dlpi_name : "";
        StringRef file = path::filename(name);
        if (file.starts_with("libMLIR") || file.starts_with("libLLVM") ||
            file.starts_with("libLoom") || file.starts_with("_loom"))
          static_cast<std::vector<std::string> *>(data)->push_back(name.str());
        return 0;
      },
      &files);
#endif
  return files;
}

struct Dependency {
  std::string path, hash;
};

/// An entry's manifest, and its output's bytes in the entry.
struct Entry {
  std::string key, outputHash;
  uint64_t outputBytes = 0;
  std::vector<Dependency> dependencies;
  std::vector<Note> notes;
  StringRef output;
};

/// Parses an entry's bytes; false when anything is missing or malformed.
bool parseEntry(StringRef bytes, Entry &entry) {
  if (!bytes.consume_front(kMagic))
    return false;
  auto [length, rest] = bytes.split('\n');
  size_t n = 0;
  if (length.getAsInteger(10, n) || n > rest.size())
    return false;
  llvm::Expected<llvm::json::Value> value =
      llvm::json::parse(rest.take_front(n));
  if (!value) {
    llvm::consumeError(value.takeError());
    return false;
  }
  entry.output = rest.drop_front(n);
  const llvm::json::Object *o = value->getAsObject();
  if (!o)
    return false;
  std::optional<StringRef> key = o->getString("key"),
                           hash = o->getString("output_blake3");
  std::optional<int64_t> size = o->getInteger("output_bytes");
  const llvm::json::Array *deps = o->getArray("dependencies"),
                          *notes = o->getArray("diagnostics");
  if (!key || !hash || !size || *size < 0 || !deps || !notes)
    return false;
  entry.key = key->str();
  entry.outputHash = hash->str();
  entry.outputBytes = static_cast<uint64_t>(*size);
  for (const llvm::json::Value &d : *deps) {
    const llvm::json::Object *dep = d.getAsObject();
    std::optional<StringRef> p = dep ? dep->getString("path") : std::nullopt,
                             h = dep ? dep->getString("blake3") : std::nullopt;
    if (!p || !h)
      return false;
    entry.dependencies.push_back({p->str(), h->str()});
  }
  for (const llvm::json::Value &v : *notes) {
    const llvm::json::Object *d = v.getAsObject();
    if (!d)
      return false;
    Note note;
    note.severity = d->getString("severity").value_or("warning").str();
    note.file = d->getString("file").value_or("").str();
    note.line = d->getInteger("line").value_or(0);
    note.column = d->getInteger("column").value_or(0);
    note.message = d->getString("message").value_or("").str();
    entry.notes.push_back(std::move(note));
  }
  return true;
}

} // namespace

std::string defaultDirectory() {
  if (const char *dir = std::getenv("LOOM_CACHE_DIR"); dir && *dir)
    return dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/loom/compile";
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/loom/compile";
  return "";
}

bool disabledByEnvironment() {
  const char *value = std::getenv("LOOM_CACHE");
  if (!value)
    return false;
  std::string v = StringRef(value).trim().lower();
  return v == "0" || v == "false" || v == "off" || v == "no";
}

void Key::add(StringRef field, StringRef value) {
  auto length = [&](uint64_t n) {
    uint8_t bytes[8];
    for (int i = 0; i < 8; ++i)
      bytes[i] = static_cast<uint8_t>(n >> (8 * i));
    hasher.update(llvm::ArrayRef<uint8_t>(bytes));
  };
  length(field.size());
  hasher.update(field);
  length(value.size());
  hasher.update(value);
}

bool Key::addFile(StringRef field, StringRef file) {
  std::string hash = hashFile(file);
  if (hash.empty())
    return false;
  add(field, hash);
  return true;
}

std::string Key::hex() {
  return llvm::toHex(hasher.final<16>(), /*LowerCase=*/true);
}

std::string hashFile(StringRef file) {
  files::MappedFile mapped;
  std::string error;
  if (!mapped.open(file.str(), error))
    return "";
  return hashMapped(mapped, 0, mapped.size());
}

std::string CompileCache::toolVersion() {
  // DIR/versions: "HASH SIZE MTIME PATH" lines.
  struct Known {
    std::string hash;
    uint64_t size;
    int64_t mtime;
  };
  std::string memoPath = joinPath(dir, "versions");
  llvm::StringMap<Known> memo;
  if (auto buffer = mapFile(memoPath)) {
    llvm::SmallVector<StringRef> lines;
    (*buffer)->getBuffer().split(lines, '\n', -1, false);
    for (StringRef line : lines) {
      llvm::SmallVector<StringRef, 4> f;
      line.split(f, ' ', 3);
      Known k;
      if (f.size() == 4 && !f[1].getAsInteger(10, k.size) &&
          !f[2].getAsInteger(10, k.mtime)) {
        k.hash = f[0].str();
        memo[f[3]] = k;
      }
    }
  }
  Key key;
  std::string lines;
  bool changed = false;
  for (const std::string &file : codeFiles()) {
    fs::file_status status;
    if (file.empty() || fs::status(file, status)) {
      key.add("unknown code", file);
      continue;
    }
    Known now{"", status.getSize(),
              std::chrono::duration_cast<std::chrono::nanoseconds>(
                  status.getLastModificationTime().time_since_epoch())
                  .count()};
    auto it = memo.find(file);
    if (it != memo.end() && it->second.size == now.size &&
        it->second.mtime == now.mtime) {
      now.hash = it->second.hash;
    } else {
      now.hash = hashFile(file);
      changed = true;
    }
    key.add("code", now.hash);
    lines += now.hash + " " + std::to_string(now.size) + " " +
             std::to_string(now.mtime) + " " + file + "\n";
  }
  if (changed && makeDirectory())
    if (llvm::Error e = writeRenamed(dir, memoPath, lines))
      warn(llvm::toString(std::move(e)));
  return key.hex();
}

bool CompileCache::lookup(StringRef key, StringRef baseDir,
                          StringRef outputPath, std::vector<Note> &notes,
                          std::string &entryName) {
  std::string file = joinPath(dir, key.str() + ".entry"), error;
  files::MappedFile mapped;
  if (!mapped.open(file, error))
    return false;
  Entry entry;
  if (!parseEntry(StringRef(mapped.data(), mapped.size()), entry) ||
      entry.key != key || entry.output.size() != entry.outputBytes ||
      hashMapped(mapped, entry.output.data() - mapped.data(),
                 entry.output.size()) != entry.outputHash)
    return false;
  for (const Dependency &d : entry.dependencies)
    if (hashFile(joinPath(baseDir, d.path)) != d.hash)
      return false;
  // As a compile writes it: atomically, durably. When -o cannot be
  // written, the compile that follows the miss says why.
  if (!files::writeFileAtomically(
          outputPath.str(),
          {std::string_view(entry.output.data(), entry.output.size())}, error))
    return false;
  // Touched: the least recently used entries are evicted first.
  int fd = -1;
  if (!fs::openFileForRead(file, fd)) {
    (void)fs::setLastAccessAndModificationTime(
        fd, std::chrono::system_clock::now());
    fs::closeFile(fd);
  }
  notes = std::move(entry.notes);
  entryName = joinPath(dir, key.take_front(12));
  return true;
}

void CompileCache::store(StringRef key, StringRef outputPath, StringRef baseDir,
                         llvm::ArrayRef<std::string> dependencies,
                         llvm::ArrayRef<Note> notes) {
  if (!makeDirectory())
    return;
  files::MappedFile output;
  std::string error;
  if (!output.open(outputPath.str(), error))
    return warn(error);
  llvm::json::Array deps, diagnostics;
  for (const std::string &d : dependencies) {
    std::string hash = hashFile(joinPath(baseDir, d));
    // Gone since the compile read it: nothing to key the entry on.
    if (hash.empty())
      return;
    deps.push_back(llvm::json::Object{{"path", d}, {"blake3", hash}});
  }
  for (const Note &n : notes)
    diagnostics.push_back(llvm::json::Object{{"severity", n.severity},
                                             {"file", n.file},
                                             {"line", n.line},
                                             {"column", n.column},
                                             {"message", n.message}});
  llvm::json::Object manifest{
      {"key", key},
      {"output_bytes", int64_t(output.size())},
      {"output_blake3", hashMapped(output, 0, output.size())},
      {"dependencies", std::move(deps)},
      {"diagnostics", std::move(diagnostics)}};
  std::string text;
  llvm::raw_string_ostream(text) << llvm::json::Value(std::move(manifest));
  std::string header = kMagic.str() + std::to_string(text.size()) + "\n" + text;
  if (llvm::Error e = writeRenamed(dir, joinPath(dir, key.str() + ".entry"),
                                   header, &output))
    return warn("cannot store an entry: " + llvm::toString(std::move(e)));
  evict();
}

bool CompileCache::makeDirectory() {
  if (std::error_code ec = fs::create_directories(dir)) {
    warn("cannot make it: " + ec.message());
    return false;
  }
  return true;
}

void CompileCache::warn(const llvm::Twine &why) {
  if (warned)
    return;
  warned = true;
  llvm::errs() << "loomc: warning: compile cache '" << dir << "' not used ("
               << why << "); compiling without it\n";
}

void CompileCache::evict() {
  struct Item {
    std::string path;
    uint64_t size;
    llvm::sys::TimePoint<> used;
  };
  std::vector<Item> items;
  uint64_t total = 0;
  auto now = std::chrono::system_clock::now();
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    StringRef name = path::filename(it->path());
    fs::file_status status;
    if (fs::status(it->path(), status))
      continue;
    // A temporary file a killed loomc left: gone after a day.
    if (name.ends_with(".part")) {
      if (now - status.getLastModificationTime() > std::chrono::hours(24))
        (void)fs::remove(it->path());
      continue;
    }
    if (!name.ends_with(".entry"))
      continue;
    items.push_back(
        {it->path(), status.getSize(), status.getLastModificationTime()});
    total += status.getSize();
  }
  if (total <= maxBytes)
    return;
  llvm::sort(items,
             [](const Item &a, const Item &b) { return a.used < b.used; });
  for (const Item &item : items) {
    if (total <= maxBytes)
      break;
    if (!fs::remove(item.path))
      total -= item.size;
  }
}

} // namespace loom::cache
