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

std::string header() {
  std::string h(kMagic, sizeof(kMagic));
  for (int i = 0; i < 4; ++i)
    h.push_back(static_cast<char>((kFormatVersion >> (8 * i)) & 0xff));
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
  if (size < kHeaderSize || std::memcmp(bytes, kMagic, sizeof(kMagic)) != 0) {
    error = "not a Loom artifact (no LOOMARTF header)";
    return false;
  }
  uint32_t version = 0;
  for (int i = 0; i < 4; ++i)
    version |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[8 + i]))
               << (8 * i);
  if (version != kFormatVersion) {
    error = "artifact format version " + std::to_string(version) +
            " is not supported by this runtime (it reads version " +
            std::to_string(kFormatVersion) + "); recompile the model";
    return false;
  }
  size_t body = size - kHeaderSize;
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
