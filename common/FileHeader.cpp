//===- FileHeader.cpp - the header scheme of Loom's files -----------------===//

#include "loom/common/FileHeader.h"
#include "loom/common/Hash.h"

#include <algorithm>
#include <cstring>

namespace loom::artifact {

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
  putLE(h, fnv1a(body), 8);
  return h;
}

uint64_t segmentChecksum(const char *data, size_t size) {
  constexpr uint64_t k1 = 0x9E3779B185EBCA87ull, k2 = 0xC2B2AE3D27D4EB4Full,
                     k3 = 0x165667B19E3779F9ull;
  auto rotl = [](uint64_t x, int r) { return (x << r) | (x >> (64 - r)); };
  auto round = [&](uint64_t lane, uint64_t word) {
    return rotl(lane + word * k2, 31) * k1;
  };
  auto word = [](const char *p) {
    uint64_t w;
    std::memcpy(&w, p, 8); // little endian on every host Loom runs on
    return w;
  };
  uint64_t lanes[4] = {k1 + k2, k2, 0, 0 - k1};
  size_t i = 0;
  for (; i + 32 <= size; i += 32)
    for (int l = 0; l < 4; ++l)
      lanes[l] = round(lanes[l], word(data + i + 8 * l));
  uint64_t h = rotl(lanes[0], 1) + rotl(lanes[1], 7) + rotl(lanes[2], 12) +
               rotl(lanes[3], 18) + size;
  for (; i + 8 <= size; i += 8)
    h = rotl(h ^ round(0, word(data + i)), 27) * k1 + k3;
  for (; i < size; ++i)
    h = rotl(h ^ (static_cast<unsigned char>(data[i]) * k3), 11) * k1;
  h ^= h >> 33;
  h *= k2;
  h ^= h >> 29;
  h *= k3;
  return h ^ (h >> 32);
}

bool checkFile(const void *data, size_t size, const FileKind &kind,
               FileParts &parts, std::string &error, uint64_t maxBytes) {
  const char *bytes = static_cast<const char *>(data);
  std::string noun = kind.noun;
  if (size < 12 || std::memcmp(bytes, kind.magic, sizeof(kind.magic)) != 0) {
    error = std::string("not a ") + kind.title + " (no " +
            std::string(kind.magic, sizeof(kind.magic)) + " header)";
    return false;
  }
  uint64_t version = getLE(bytes + 8, 4);
  if (version < kind.oldest || version > kind.version) {
    error = noun + " format version " + std::to_string(version) +
            " is not supported by this runtime (it reads version" +
            (kind.oldest == kind.version
                 ? " " + std::to_string(kind.version)
                 : "s " + std::to_string(kind.oldest) + " to " +
                       std::to_string(kind.version)) +
            "); " + kind.remedy;
    return false;
  }
  if (size < kHeaderSize) {
    error = noun + " is truncated (" + std::to_string(size) +
            " bytes, shorter than its header)";
    return false;
  }
  if (size > maxBytes) {
    error = noun + " is too large (" + std::to_string(size) +
            " bytes; the limit is " + std::to_string(maxBytes) + ")";
    return false;
  }
  uint64_t rest = size - kHeaderSize;
  uint64_t declared = getLE(bytes + 12, 8);
  bool segments = kind.segmentsSince && version >= kind.segmentsSince;
  // Without a data section the message is the rest of the file; with one,
  // it is followed by the padding up to the section, then the section.
  if (segments ? declared > rest : declared != rest) {
    error = noun + " is truncated or corrupt (its header says " +
            std::to_string(declared) + " bytes of message follow, the file " +
            "has " + std::to_string(rest) + (segments ? " in all" : "") + ")";
    return false;
  }
  if (declared > Limits::kMaxMessageBytes) {
    error = noun + " is too large (a " + std::to_string(declared) +
            "-byte message; protobuf reads at most " +
            std::to_string(Limits::kMaxMessageBytes) + ")";
    return false;
  }
  if (getLE(bytes + 20, 8) !=
      fnv1a(std::string_view(bytes + kHeaderSize, declared))) {
    error = noun + " is corrupt (checksum mismatch)";
    return false;
  }
  parts.version = static_cast<uint32_t>(version);
  parts.body = bytes + kHeaderSize;
  parts.bodySize = declared;
  uint64_t section = dataSectionOffset(declared);
  parts.data = bytes + std::min<uint64_t>(section, size);
  parts.dataSize = size > section ? size - section : 0;
  return true;
}

bool checkHeader(const void *data, size_t size, const FileKind &kind,
                 const char *&body, size_t &bodySize, std::string &error,
                 uint64_t maxBytes) {
  FileParts parts;
  if (!checkFile(data, size, kind, parts, error, maxBytes))
    return false;
  if (parts.dataSize != 0) {
    error = std::string(kind.noun) + " has a data section where none is read";
    return false;
  }
  body = parts.body;
  bodySize = parts.bodySize;
  return true;
}

} // namespace loom::artifact
