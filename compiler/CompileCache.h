//===- CompileCache.h - loomc's cache of compiled outputs -------*- C++ -*-===//
//
// `loomc compile` and `loomc train` look their output up here before
// compiling, as ccache's direct mode does: the key is a BLAKE3 of every
// input byte the caller names (the command, the options that can change
// the output, the model's bytes, the files the options name) and of the
// compiler's own code (Key, CompileCache::toolVersion). The model is not
// parsed for a lookup: the files a compile read besides the ones in the
// key (an ONNX model's external data) are listed in the entry with their
// hashes, and the entry is a hit only while each still hashes the same.
//
// An entry is one file, DIR/KEY.entry: a line "loom-compile-cache 1", the
// manifest's length, the manifest (JSON: the output's size and hash, the
// dependencies, the diagnostics the compile emitted) and the output's
// bytes. It is written beside its name and renamed, so concurrent loomc
// runs see a whole entry or none; one that is truncated or corrupt (its
// size or hash not the manifest's) is a miss, never an error. Hits touch
// their entry; a store evicts the least recently used entries past the
// size cap. A cache that cannot be written costs one warning line, and the
// compile goes on without it. LLVM Support only, no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMPILER_COMPILECACHE_H
#define LOOM_COMPILER_COMPILECACHE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/BLAKE3.h"

#include <cstdint>
#include <string>
#include <vector>

namespace loom::cache {

/// $LOOM_CACHE_DIR, else $XDG_CACHE_HOME/loom/compile, else
/// ~/.cache/loom/compile; "" when none of them is set.
std::string defaultDirectory();

/// Whether $LOOM_CACHE turns the cache off (0, false, off or no).
bool disabledByEnvironment();

/// The default size cap ($LOOM_CACHE_MAX_SIZE overrides it).
inline constexpr uint64_t kDefaultMaxBytes = uint64_t(20) << 30;

/// A diagnostic the compile emitted (not an error: failed compiles are not
/// stored), kept with the output and emitted again on a hit.
struct Note {
  std::string severity; ///< "warning" or "remark"
  std::string file;     ///< its location's file; empty: no location
  unsigned line = 0, column = 0;
  std::string message;
};

/// A compile's key: a BLAKE3 of named fields, each length-delimited, so
/// that no two lists of fields hash alike.
class Key {
public:
  void add(llvm::StringRef field, llvm::StringRef value);
  /// Adds the bytes of the file at `path` (by their hash); false when it
  /// cannot be read.
  bool addFile(llvm::StringRef field, llvm::StringRef path);
  /// 32 hex digits: the entry's name.
  std::string hex();

private:
  llvm::BLAKE3 hasher;
};

/// The BLAKE3 of the file at `path` as 64 hex digits; "" when it cannot be
/// read.
std::string hashFile(llvm::StringRef path);

class CompileCache {
public:
  /// The cache in `dir` (made on the first store), holding at most
  /// `maxBytes` of entries.
  CompileCache(std::string dir, uint64_t maxBytes)
      : dir(std::move(dir)), maxBytes(maxBytes) {}

  /// The compiler's version for the key: the hashes of the executable (or
  /// the Python module) holding this code and of the libMLIR and libLLVM it
  /// loaded. Each file's hash is kept in DIR/versions by path, size and
  /// modification time, so a file is read again only when it changed.
  std::string toolVersion();

  /// Looks `key` up. On a hit (the entry whole, each dependency, relative
  /// to `baseDir`, hashing as stored) the output is copied to `outputPath`
  /// atomically, the entry is touched, and `notes` and `entry` (the entry's
  /// path without ".entry") are set.
  bool lookup(llvm::StringRef key, llvm::StringRef baseDir,
              llvm::StringRef outputPath, std::vector<Note> &notes,
              std::string &entry);

  /// Stores the file at `outputPath` as `key`'s output, with `dependencies`
  /// (paths relative to `baseDir`, hashed now) and `notes`, then evicts the
  /// least recently used entries past the cap. A failure warns (once) on
  /// stderr and leaves the cache as it was.
  void store(llvm::StringRef key, llvm::StringRef outputPath,
             llvm::StringRef baseDir, llvm::ArrayRef<std::string> dependencies,
             llvm::ArrayRef<Note> notes);

private:
  /// Makes the directory; false (after warning) when it cannot.
  bool makeDirectory();
  void warn(const llvm::Twine &why);
  void evict();

  std::string dir;
  uint64_t maxBytes;
  bool warned = false;
};

} // namespace loom::cache

#endif // LOOM_COMPILER_COMPILECACHE_H
