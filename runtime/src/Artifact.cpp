//===- Artifact.cpp - reading .loom files ---------------------------------===//
//
// Checks everything in a file before the runtime trusts it: magic,
// version, the protobuf, dtypes, ranks, weight sizes against their dims.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/Artifact.h"

#include <cstring>
#include <limits>

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

std::string header(const std::string &body) {
  std::string h(kMagic, sizeof(kMagic));
  putLE(h, kFormatVersion, 4);
  putLE(h, body.size(), 8);
  putLE(h, fnv1a(body.data(), body.size()), 8);
  return h;
}

size_t dtypeSize(int dtype) {
  switch (dtype) {
  case F32:
  case I32:
    return 4;
  case F64:
  case I64:
    return 8;
  case F16:
  case BF16:
  case I16:
    return 2;
  case U8:
  case I8:
  case BOOL:
    return 1;
  default:
    return 0;
  }
}

/// The largest rank a signature may have.
static constexpr int kMaxRank = 16;

static bool checkSignature(const TensorSignature &sig, const char *what,
                           int index, std::string &error) {
  std::string where = std::string(what) + " " + std::to_string(index) + " ('" +
                      sig.name() + "')";
  if (dtypeSize(sig.dtype()) == 0) {
    error = where + " has an unknown dtype " + std::to_string(sig.dtype());
    return false;
  }
  if (sig.dims_size() > kMaxRank) {
    error = where + " has rank " + std::to_string(sig.dims_size()) +
            ", more than " + std::to_string(kMaxRank);
    return false;
  }
  for (const Dim &d : sig.dims()) {
    if (d.size() < -1) {
      error = where + " has a negative dim " + std::to_string(d.size());
      return false;
    }
  }
  return true;
}

bool parse(const void *data, size_t size, Artifact &out, std::string &error) {
  const char *bytes = static_cast<const char *>(data);
  if (size < 12 || std::memcmp(bytes, kMagic, sizeof(kMagic)) != 0) {
    error = "not a Loom artifact (no LOOMARTF header)";
    return false;
  }
  uint64_t version = getLE(bytes + 8, 4);
  if (version != kFormatVersion) {
    error = "artifact format version " + std::to_string(version) +
            " is not supported by this runtime (it reads version " +
            std::to_string(kFormatVersion) + "); recompile the model";
    return false;
  }
  if (size < kHeaderSize) {
    error = "artifact is truncated (" + std::to_string(size) +
            " bytes, shorter than its header)";
    return false;
  }
  size_t body = size - kHeaderSize;
  uint64_t declared = getLE(bytes + 12, 8);
  if (declared != body) {
    error = "artifact is truncated or corrupt (its header says " +
            std::to_string(declared) + " bytes follow, the file has " +
            std::to_string(body) + ")";
    return false;
  }
  if (getLE(bytes + 20, 8) != fnv1a(bytes + kHeaderSize, body)) {
    error = "artifact is corrupt (checksum mismatch)";
    return false;
  }
  if (body > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !out.ParseFromArray(bytes + kHeaderSize, static_cast<int>(body))) {
    error = "artifact is truncated or corrupt (its message does not parse)";
    return false;
  }
  if (out.outputs_size() == 0) {
    error = "artifact has no outputs";
    return false;
  }
  for (int i = 0; i < out.inputs_size(); ++i)
    if (!checkSignature(out.inputs(i), "input", i, error))
      return false;
  for (int i = 0; i < out.outputs_size(); ++i)
    if (!checkSignature(out.outputs(i), "output", i, error))
      return false;
  for (int i = 0; i < out.weights_size(); ++i) {
    const Weight &w = out.weights(i);
    std::string where = "weight " + std::to_string(i) + " ('" + w.name() + "')";
    size_t elemSize = dtypeSize(w.dtype());
    if (elemSize == 0) {
      error = where + " has an unknown dtype";
      return false;
    }
    if (w.dims_size() > kMaxRank) {
      error = where + " has too many dims";
      return false;
    }
    // Overflow-safe element count.
    uint64_t count = 1;
    for (int64_t d : w.dims()) {
      if (d < 0 || (d != 0 && count > std::numeric_limits<uint64_t>::max() /
                                          static_cast<uint64_t>(d))) {
        error = where + " has an invalid dim " + std::to_string(d);
        return false;
      }
      count *= static_cast<uint64_t>(d);
    }
    if (count > std::numeric_limits<uint64_t>::max() / elemSize ||
        count * elemSize != w.data().size()) {
      error = where + " holds " + std::to_string(w.data().size()) +
              " bytes, its dims need " + std::to_string(count * elemSize);
      return false;
    }
  }
  if (out.cpu().shared_object().empty() || out.cpu().entry_symbol().empty()) {
    error = "artifact has no CPU code";
    return false;
  }
  return true;
}

} // namespace loom::artifact
