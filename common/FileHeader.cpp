//===- FileHeader.cpp - the header scheme of Loom's files -----------------===//

#include "loom/common/FileHeader.h"

#include <algorithm>
#include <cstring>

namespace loom::artifact {

static uint64_t fnv1a(const char *data, size_t size) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < size; ++i) {
    h ^= static_cast<unsigned char>(data[i]);
    h *= 1099511628211ull;
  }
  return h;
}

static void putLE(std::string &out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

static uint64_t getLE(const char *p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

std::string header(const std::string &body, const FileKind &kind) {
  std::string h(kind.magic, sizeof(kind.magic));
  putLE(h, kind.version, 4);
  putLE(h, body.size(), 8);
  putLE(h, fnv1a(body.data(), body.size()), 8);
  return h;
}

bool checkHeader(const void *data, size_t size, const FileKind &kind,
                 const char *&body, size_t &bodySize, std::string &error,
                 uint64_t maxBytes) {
  const char *bytes = static_cast<const char *>(data);
  std::string noun = kind.noun;
  if (size < 12 || std::memcmp(bytes, kind.magic, sizeof(kind.magic)) != 0) {
    error = std::string("not a ") + kind.title + " (no " +
            std::string(kind.magic, sizeof(kind.magic)) + " header)";
    return false;
  }
  uint64_t version = getLE(bytes + 8, 4);
  if (version != kind.version) {
    error = noun + " format version " + std::to_string(version) +
            " is not supported by this runtime (it reads version " +
            std::to_string(kind.version) + "); " + kind.remedy;
    return false;
  }
  if (size < kHeaderSize) {
    error = noun + " is truncated (" + std::to_string(size) +
            " bytes, shorter than its header)";
    return false;
  }
  maxBytes = std::min(maxBytes, Limits::kMaxFileBytes);
  if (size > maxBytes) {
    error = noun + " is too large (" + std::to_string(size) +
            " bytes; the limit is " + std::to_string(maxBytes) + ")";
    return false;
  }
  bodySize = size - kHeaderSize;
  uint64_t declared = getLE(bytes + 12, 8);
  if (declared != bodySize) {
    error = noun + " is truncated or corrupt (its header says " +
            std::to_string(declared) + " bytes follow, the file has " +
            std::to_string(bodySize) + ")";
    return false;
  }
  if (getLE(bytes + 20, 8) != fnv1a(bytes + kHeaderSize, bodySize)) {
    error = noun + " is corrupt (checksum mismatch)";
    return false;
  }
  body = bytes + kHeaderSize;
  return true;
}

} // namespace loom::artifact
