//===- TensorFiles.cpp - tensors from and to .npy and ONNX .pb files ------===//

#include "loom/common/TensorFiles.h"

#include "loom/common/DType.h"
#include "loom/common/FileIO.h"
#include "loom/common/Float16.h"

#include <onnx/onnx-data_pb.h>
#include <onnx/onnx_pb.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <sstream>
#include <string_view>
#include <vector>

namespace loom::files {

using dtypes::nameOf;
using dtypes::sizeOf;

static size_t elementCount(const int64_t *shape, size_t rank) {
  size_t n = 1;
  for (size_t i = 0; i < rank; ++i)
    n *= static_cast<size_t>(shape[i]);
  return n;
}

static size_t sizeBytes(const TensorView &t) {
  return sizeOf(t.dtype) * elementCount(t.shape, t.rank);
}

/// Whether `available` data bytes are exactly what `shape` of `dtype`
/// needs (overflow-checked); sets `error` otherwise.
static bool fitsData(const std::vector<int64_t> &shape, int32_t dtype,
                     size_t available, const std::string &where,
                     std::string &error) {
  uint64_t need = sizeOf(dtype);
  for (int64_t d : shape) {
    if (d < 0 || (d && need > std::numeric_limits<uint64_t>::max() /
                                  static_cast<uint64_t>(d))) {
      error = where + " has an impossible shape";
      return false;
    }
    need *= static_cast<uint64_t>(d);
  }
  if (need != available) {
    error = where + " holds " + std::to_string(available) +
            " data bytes, its shape needs " + std::to_string(need);
    return false;
  }
  return true;
}

// ---- .npy ----

struct NpyType {
  const char *descr;
  int32_t dtype;
};
static const NpyType kNpyTypes[] = {
    {"<f4", dtypes::kF32}, {"<f8", dtypes::kF64}, {"<f2", dtypes::kF16},
    {"<i4", dtypes::kI32}, {"<i8", dtypes::kI64}, {"<i2", dtypes::kI16},
    {"|i1", dtypes::kI8},  {"|u1", dtypes::kU8},  {"|b1", dtypes::kBool},
    {"<u2", dtypes::kU16}, {"<u4", dtypes::kU32}, {"<u8", dtypes::kU64},
};

/// The dtype, shape and data offset of the .npy file in `bytes`, whose
/// data must be exactly what the shape needs; `where` names it in
/// messages ("'x.npy'", "'data.npz' array 'x'").
static bool parseNpyHeader(std::string_view bytes, const std::string &where,
                           int32_t &dtypeOut, std::vector<int64_t> &shapeOut,
                           size_t &dataOut, std::string &error) {
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) {
    error = where + " is not a .npy file";
    return false;
  }
  unsigned major = static_cast<unsigned char>(bytes[6]);
  size_t headerLen, start;
  if (major == 1) {
    headerLen = static_cast<unsigned char>(bytes[8]) |
                (static_cast<unsigned char>(bytes[9]) << 8);
    start = 10;
  } else {
    if (bytes.size() < 12) {
      error = where + " is truncated";
      return false;
    }
    headerLen = 0;
    for (int i = 0; i < 4; ++i)
      headerLen |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i]))
                   << (8 * i);
    start = 12;
  }
  if (start + headerLen > bytes.size()) {
    error = where + " is truncated";
    return false;
  }
  std::string header(bytes.substr(start, headerLen));
  auto field = [&](const char *key) -> std::string {
    size_t k = header.find(std::string("'") + key + "'");
    if (k == std::string::npos)
      return "";
    size_t colon = header.find(':', k);
    return colon == std::string::npos ? "" : header.substr(colon + 1);
  };
  std::string descr = field("descr"), order = field("fortran_order"),
              shapeText = field("shape");
  if (order.find("True") != std::string::npos &&
      order.find("True") < order.find(',')) {
    error = where + " is in Fortran order (save it C-contiguous)";
    return false;
  }
  int32_t dtype = dtypes::kUndefined;
  for (const NpyType &t : kNpyTypes)
    if (descr.find(std::string("'") + t.descr + "'") < descr.find(','))
      dtype = t.dtype;
  if (dtype == dtypes::kUndefined) {
    error =
        where + " has an unsupported dtype " + descr.substr(0, descr.find(','));
    return false;
  }
  std::vector<int64_t> shape;
  size_t open = shapeText.find('('), close = shapeText.find(')');
  if (open == std::string::npos || close == std::string::npos) {
    error = where + " has no shape in its header";
    return false;
  }
  std::stringstream dims(shapeText.substr(open + 1, close - open - 1));
  std::string item;
  while (std::getline(dims, item, ',')) {
    if (item.find_first_not_of(" ") == std::string::npos)
      continue;
    char *end = nullptr;
    errno = 0;
    long long d = std::strtoll(item.c_str(), &end, 10);
    while (end && *end == ' ')
      ++end;
    if (errno || !end || *end || d < 0) {
      error = where + " has a bad dim '" + item + "' in its shape";
      return false;
    }
    shape.push_back(d);
  }
  // Check the file holds the data before allocating for it.
  size_t data = start + headerLen;
  if (!fitsData(shape, dtype, bytes.size() - data, where, error))
    return false;
  dtypeOut = dtype;
  shapeOut = std::move(shape);
  dataOut = data;
  return true;
}

/// The tensor in the bytes of a .npy file, which it takes over (the data
/// is moved to the front, not copied).
static bool parseNpy(std::string bytes, const std::string &where,
                     HostTensor &out, std::string &error) {
  size_t data = 0;
  if (!parseNpyHeader(bytes, where, out.dtype, out.shape, data, error))
    return false;
  bytes.erase(0, data);
  out.bytes = std::move(bytes);
  return true;
}

bool readNpy(const std::string &path, HostTensor &out, std::string &error) {
  std::string bytes;
  if (!readFile(path, bytes, error))
    return false;
  return parseNpy(std::move(bytes), "'" + path + "'", out, error);
}

bool convertBf16(const TensorView &t, HostTensor &out, std::string &error) {
  int32_t from = t.dtype;
  if (from != dtypes::kF32 && from != dtypes::kBF16) {
    error = std::string("cannot convert a ") + nameOf(from) +
            " tensor to or from bf16";
    return false;
  }
  size_t count = elementCount(t.shape, t.rank);
  out.dtype = from == dtypes::kF32 ? dtypes::kBF16 : dtypes::kF32;
  out.shape.assign(t.shape, t.shape + t.rank);
  out.bytes.assign(count * sizeOf(out.dtype), '\0');
  const char *in = static_cast<const char *>(t.data);
  char *dst = out.bytes.data();
  for (size_t i = 0; i < count; ++i) {
    if (from == dtypes::kBF16) {
      uint16_t b;
      std::memcpy(&b, in + 2 * i, 2);
      float f = runtime::bf16ToFloat(b);
      std::memcpy(dst + 4 * i, &f, 4);
      continue;
    }
    float f;
    std::memcpy(&f, in + 4 * i, 4);
    uint16_t b = runtime::floatToBf16(f);
    std::memcpy(dst + 2 * i, &b, 2);
  }
  return true;
}

bool writeNpy(const std::string &path, const TensorView &t,
              std::string &error) {
  if (t.dtype == dtypes::kBF16) {
    HostTensor f32;
    return convertBf16(t, f32, error) && writeNpy(path, viewOf(f32), error);
  }
  const char *descr = nullptr;
  for (const NpyType &n : kNpyTypes)
    if (n.dtype == t.dtype)
      descr = n.descr;
  if (!descr) {
    error =
        std::string("cannot write a ") + nameOf(t.dtype) + " tensor as .npy";
    return false;
  }
  std::string shape = "(";
  for (size_t i = 0; i < t.rank; ++i)
    shape += std::to_string(t.shape[i]) + ",";
  if (t.rank > 1)
    shape.pop_back();
  shape += ")";
  std::string header = std::string("{'descr': '") + descr +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64)
    header += ' ';
  header += '\n';
  std::string bytes = "\x93NUMPY\x01";
  bytes.push_back('\0');
  bytes.push_back(static_cast<char>(header.size() & 0xff));
  bytes.push_back(static_cast<char>(header.size() >> 8));
  bytes += header;
  bytes.append(static_cast<const char *>(t.data), sizeBytes(t));
  return writeFileAtomically(path, bytes, error);
}

// ---- .npz (a zip archive of .npy files) ----

namespace {

/// Little-endian fields of a zip archive, bounds-checked by the caller.
uint64_t le(std::string_view b, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(b[at + i]))
         << (8 * i);
  return v;
}

constexpr uint32_t kEndOfCentralDir = 0x06054b50;
constexpr uint32_t kZip64Locator = 0x07064b50;
constexpr uint32_t kZip64EndOfCentralDir = 0x06064b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kLocalHeader = 0x04034b50;

/// One member of the archive, from its central directory entry.
struct ZipMember {
  std::string name;
  unsigned method = 0, flags = 0;
  uint32_t crc = 0;
  uint64_t compressed = 0, size = 0, offset = 0;
};

/// The members listed by the central directory of `b`; false with `error`
/// (which the caller prefixes with the file) on a malformed archive.
bool listMembers(std::string_view b, std::vector<ZipMember> &members,
                 std::string &error) {
  // The end record is in the last 22 + 65535 (comment) bytes.
  if (b.size() < 22) {
    error = "is not a .npz file (too short for a zip archive)";
    return false;
  }
  size_t end = std::string::npos;
  size_t lowest = b.size() > 22 + 65535 ? b.size() - 22 - 65535 : 0;
  for (size_t at = b.size() - 22 + 1; at-- > lowest;)
    if (le(b, at, 4) == kEndOfCentralDir) {
      end = at;
      break;
    }
  if (end == std::string::npos) {
    error = "is not a .npz file (no zip end-of-directory record; truncated?)";
    return false;
  }
  uint64_t count = le(b, end + 10, 2), dirSize = le(b, end + 12, 4),
           dirOffset = le(b, end + 16, 4);
  // Zip64: the real values are in the zip64 end record.
  if (end >= 20 && le(b, end - 20, 4) == kZip64Locator) {
    uint64_t at = le(b, end - 20 + 8, 8);
    if (at > b.size() || b.size() - at < 56 ||
        le(b, at, 4) != kZip64EndOfCentralDir) {
      error = "is a corrupt zip archive (bad zip64 end record)";
      return false;
    }
    count = le(b, at + 32, 8);
    dirSize = le(b, at + 40, 8);
    dirOffset = le(b, at + 48, 8);
  }
  if (dirOffset > b.size() || dirSize > b.size() - dirOffset) {
    error = "is a corrupt zip archive (its directory lies outside the file)";
    return false;
  }
  size_t at = dirOffset, dirEnd = dirOffset + dirSize;
  for (uint64_t i = 0; i < count; ++i) {
    if (dirEnd - at < 46 || le(b, at, 4) != kCentralHeader) {
      error = "is a corrupt zip archive (bad directory entry " +
              std::to_string(i) + ")";
      return false;
    }
    ZipMember m;
    m.flags = le(b, at + 8, 2);
    m.method = le(b, at + 10, 2);
    m.crc = le(b, at + 16, 4);
    m.compressed = le(b, at + 20, 4);
    m.size = le(b, at + 24, 4);
    m.offset = le(b, at + 42, 4);
    size_t nameLen = le(b, at + 28, 2), extraLen = le(b, at + 30, 2),
           commentLen = le(b, at + 32, 2);
    if (dirEnd - at - 46 < nameLen + extraLen + commentLen) {
      error = "is a corrupt zip archive (bad directory entry " +
              std::to_string(i) + ")";
      return false;
    }
    m.name = std::string(b.substr(at + 46, nameLen));
    // A zip64 extra field holds, in order, the fields saturated above.
    size_t extra = at + 46 + nameLen, extraEnd = extra + extraLen;
    while (extraEnd - extra >= 4) {
      size_t id = le(b, extra, 2), len = le(b, extra + 2, 2);
      size_t field = extra + 4;
      if (len > extraEnd - field)
        break;
      if (id == 1) {
        size_t fieldEnd = field + len;
        for (uint64_t *v : {&m.size, &m.compressed, &m.offset}) {
          if (*v != 0xffffffffu)
            continue;
          if (fieldEnd - field < 8) {
            error = "is a corrupt zip archive (short zip64 field of '" +
                    m.name + "')";
            return false;
          }
          *v = le(b, field, 8);
          field += 8;
        }
      }
      extra += 4 + len;
    }
    members.push_back(std::move(m));
    at += 46 + nameLen + extraLen + commentLen;
  }
  return true;
}

/// The uncompressed bytes of member `m` of archive `b`: a view into `b`
/// for a stored member, else decompressed into `owned`. The CRC is checked
/// in chunks, each released after (`release(offset, length)` of `b`), so a
/// stored member of a mapped file is not all resident at once.
bool memberBytes(std::string_view b, const ZipMember &m, std::string_view &out,
                 std::string &owned, std::string &error,
                 const std::function<void(uint64_t, uint64_t)> &release) {
  if (m.flags & 1) {
    error = "is encrypted";
    return false;
  }
  if (m.offset > b.size() || b.size() - m.offset < 30 ||
      le(b, m.offset, 4) != kLocalHeader) {
    error = "is corrupt (bad local header)";
    return false;
  }
  uint64_t data =
      m.offset + 30 + le(b, m.offset + 26, 2) + le(b, m.offset + 28, 2);
  if (data > b.size() || m.compressed > b.size() - data) {
    error = "is truncated (its data runs past the end of the file)";
    return false;
  }
  const char *in = b.data() + data;
  if (m.method == 0) {
    if (m.compressed != m.size) {
      error = "is corrupt (stored with two different sizes)";
      return false;
    }
    out = std::string_view(in, m.size);
  } else if (m.method == 8) {
    // Deflate expands at most ~1032:1; a larger claim is corrupt (and
    // must not make us allocate it).
    if (m.size / 1032 > m.compressed + 1) {
      error = "is corrupt (it claims " + std::to_string(m.size) +
              " bytes from " + std::to_string(m.compressed) + " compressed)";
      return false;
    }
    owned.assign(m.size, '\0');
    z_stream z = {};
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK) {
      error = "cannot be decompressed (zlib failed to start)";
      return false;
    }
    uint64_t inLeft = m.compressed, outLeft = m.size;
    z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(in));
    z.next_out = reinterpret_cast<Bytef *>(owned.data());
    int rc = Z_OK;
    while (rc == Z_OK) {
      // zlib counts in uInt: feed at most 1 GiB at a time.
      uInt inChunk = static_cast<uInt>(std::min<uint64_t>(inLeft, 1u << 30));
      uInt outChunk = static_cast<uInt>(std::min<uint64_t>(outLeft, 1u << 30));
      z.avail_in = inChunk;
      z.avail_out = outChunk;
      rc = inflate(&z, Z_NO_FLUSH);
      inLeft -= inChunk - z.avail_in;
      outLeft -= outChunk - z.avail_out;
      if (rc == Z_OK && inChunk == z.avail_in && outChunk == z.avail_out)
        rc = Z_BUF_ERROR; // no progress
    }
    inflateEnd(&z);
    if (rc != Z_STREAM_END || outLeft != 0) {
      error = "is corrupt (its deflate stream does not decompress to " +
              std::to_string(m.size) + " bytes)";
      return false;
    }
    release(data, m.compressed);
    out = owned;
  } else {
    error = "uses zip compression method " + std::to_string(m.method) +
            " (numpy.savez stores, savez_compressed deflates; nothing else "
            "is read)";
    return false;
  }
  // In 64 MiB pieces: a stored member's pages are dropped once checked.
  constexpr size_t kChunk = size_t(64) << 20;
  uLong crc = crc32_z(0, nullptr, 0);
  for (size_t at = 0; at < out.size(); at += kChunk) {
    size_t n = std::min(kChunk, out.size() - at);
    crc = crc32_z(crc, reinterpret_cast<const Bytef *>(out.data() + at), n);
    if (m.method == 0)
      release(data + at, n);
  }
  if (crc != m.crc) {
    error = "is corrupt (CRC mismatch)";
    return false;
  }
  return true;
}

} // namespace

bool mapNpy(const std::string &path, MappedTensor &out, std::string &error) {
  auto file = std::make_shared<MappedFile>();
  if (!file->open(path, error))
    return false;
  std::string_view bytes(file->data(), file->size());
  size_t data = 0;
  if (!parseNpyHeader(bytes, "'" + path + "'", out.dtype, out.shape, data,
                      error))
    return false;
  out.data = file->data() + data;
  out.bytes = file->size() - data;
  out.file = std::move(file);
  out.owned.reset();
  return true;
}

bool mapNpz(const std::string &path,
            std::vector<std::pair<std::string, MappedTensor>> &arrays,
            std::string &error) {
  arrays.clear();
  auto file = std::make_shared<MappedFile>();
  if (!file->open(path, error))
    return false;
  std::string_view bytes(file->data(), file->size());
  std::vector<ZipMember> members;
  if (!listMembers(bytes, members, error)) {
    error = "'" + path + "' " + error;
    return false;
  }
  auto fail = [&](const std::string &message) {
    arrays.clear();
    error = message;
    return false;
  };
  auto release = [&](uint64_t offset, uint64_t length) {
    file->release(offset, length);
  };
  for (const ZipMember &m : members) {
    std::string key = m.name;
    if (key.size() < 4 || key.compare(key.size() - 4, 4, ".npy") != 0)
      return fail("'" + path + "' holds '" + m.name +
                  "', which is not a .npy array");
    key.resize(key.size() - 4);
    std::string where = "'" + path + "' array '" + key + "'";
    for (const auto &entry : arrays)
      if (entry.first == key)
        return fail(where + " appears twice");
    std::string_view npy;
    auto owned = std::make_shared<std::string>();
    if (!memberBytes(bytes, m, npy, *owned, error, release))
      return fail(where + " " + error);
    MappedTensor t;
    size_t data = 0;
    if (!parseNpyHeader(npy, where, t.dtype, t.shape, data, error))
      return fail(error);
    t.data = npy.data() + data;
    t.bytes = npy.size() - data;
    if (owned->empty())
      t.file = file;
    else
      t.owned = std::move(owned);
    arrays.emplace_back(std::move(key), std::move(t));
  }
  return true;
}

bool readNpz(const std::string &path,
             std::vector<std::pair<std::string, HostTensor>> &arrays,
             std::string &error) {
  arrays.clear();
  std::vector<std::pair<std::string, MappedTensor>> mapped;
  if (!mapNpz(path, mapped, error))
    return false;
  for (auto &[key, m] : mapped) {
    HostTensor t;
    t.dtype = m.dtype;
    t.shape = m.shape;
    t.bytes.assign(m.data, m.bytes);
    m = MappedTensor(); // the mapping or decompressed bytes, freed now
    arrays.emplace_back(key, std::move(t));
  }
  return true;
}

// ---- ONNX TensorProto ----

/// Copies the typed field's values (as many as `t` has elements, checked
/// by the caller) into `t`.
template <typename Field>
static void copyTyped(const Field &field, HostTensor &t, size_t elem) {
  char *out = t.bytes.data();
  size_t count = t.bytes.size() / elem;
  for (size_t i = 0; i < count; ++i) {
    auto v = field.Get(static_cast<int>(i));
    // Little endian: the low `elem` bytes of the stored value (int32_data
    // holds bool, int8, int16, f16 and bf16 bits this way).
    std::memcpy(out + i * elem, &v, elem);
  }
}

/// How many values the typed field that holds `dtype` has.
static size_t typedValues(const onnx::TensorProto &proto, int32_t dtype) {
  switch (dtype) {
  case dtypes::kF32:
    return static_cast<size_t>(proto.float_data_size());
  case dtypes::kF64:
    return static_cast<size_t>(proto.double_data_size());
  case dtypes::kI64:
    return static_cast<size_t>(proto.int64_data_size());
  default:
    return static_cast<size_t>(proto.int32_data_size());
  }
}

/// `proto`'s tensor as `out`, its type and dims checked against its data
/// before anything is allocated; messages name `where`.
static bool tensorOfProto(onnx::TensorProto &proto, HostTensor &out,
                          const std::string &where, std::string &error,
                          int32_t expected) {
  int32_t dtype = proto.data_type();
  if (dtype == onnx::TensorProto::UINT16 &&
      (expected == dtypes::kBF16 || expected == dtypes::kF16))
    dtype = expected;
  size_t elem = sizeOf(dtype);
  if (!elem) {
    error = where + " has data type " + std::to_string(proto.data_type()) +
            ", which the runtime does not support";
    return false;
  }
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    error = where + " keeps its data in an external file";
    return false;
  }
  std::vector<int64_t> shape(proto.dims().begin(), proto.dims().end());
  // The data must fit the dims before anything is allocated: raw bytes,
  // or one typed value per element (checked as bytes of `elem` each).
  size_t available = proto.has_raw_data() ? proto.raw_data().size()
                                          : typedValues(proto, dtype) * elem;
  if (!fitsData(shape, dtype, available, where, error))
    return false;
  out.dtype = dtype;
  out.shape = std::move(shape);
  if (proto.has_raw_data()) {
    out.bytes = std::move(*proto.mutable_raw_data());
    return true;
  }
  out.bytes.assign(available, '\0');
  if (dtype == dtypes::kF32)
    copyTyped(proto.float_data(), out, elem);
  else if (dtype == dtypes::kF64)
    copyTyped(proto.double_data(), out, elem);
  else if (dtype == dtypes::kI64)
    copyTyped(proto.int64_data(), out, elem);
  else
    copyTyped(proto.int32_data(), out, elem);
  return true;
}

bool readTensorProto(const std::string &path, std::string &name,
                     HostTensor &out, std::string &error, int32_t expected) {
  std::string bytes;
  if (!readFile(path, bytes, error))
    return false;
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes)) {
    error = "'" + path + "' is not a TensorProto";
    return false;
  }
  name = proto.name();
  return tensorOfProto(proto, out, "'" + path + "'", error, expected);
}

std::string tensorProtoBytes(const std::string &name, const TensorView &t) {
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(static_cast<int>(t.dtype));
  for (size_t i = 0; i < t.rank; ++i)
    proto.add_dims(t.shape[i]);
  proto.set_raw_data(t.data, sizeBytes(t));
  return proto.SerializeAsString();
}

bool writeTensorProto(const std::string &path, const std::string &name,
                      const TensorView &t, std::string &error) {
  return writeFileAtomically(path, tensorProtoBytes(name, t), error);
}

// ---- ONNX SequenceProto and OptionalProto ----

/// Whether `s` parsed as a SequenceProto of tensors without a field
/// another message would put there (a TensorProto's dims, name or data
/// are unknown fields of a SequenceProto).
static bool plainSequence(const onnx::SequenceProto &s) {
  return s.unknown_fields().empty() && s.sparse_tensor_values_size() == 0 &&
         s.map_values_size() == 0 && s.optional_values_size() == 0;
}

bool readValueProto(const std::string &path, ValueProto &out, bool &isValue,
                    std::string &error, int32_t expected) {
  isValue = false;
  std::string bytes;
  if (!readFile(path, bytes, error))
    return false;
  onnx::SequenceProto proto;
  // An OptionalProto parses as a SequenceProto: the same fields.
  if (!proto.ParseFromString(bytes) || !plainSequence(proto) ||
      (!proto.has_elem_type() && !proto.has_name()))
    return true;
  int32_t kind = proto.elem_type();
  bool nested = proto.sequence_values_size() > 0;
  if ((kind == onnx::SequenceProto::TENSOR && nested) ||
      (kind == onnx::SequenceProto::SEQUENCE &&
       proto.tensor_values_size() > 0) ||
      (kind != onnx::SequenceProto::TENSOR &&
       kind != onnx::SequenceProto::SEQUENCE &&
       kind != onnx::SequenceProto::UNDEFINED))
    return true;
  isValue = true;
  std::string where = "'" + path + "'";
  if (proto.sequence_values_size() > 1) {
    error = where + " holds a sequence of sequences, which Loom does not "
                    "support";
    return false;
  }
  onnx::SequenceProto *tensors = &proto;
  if (nested) {
    tensors = proto.mutable_sequence_values(0);
    if (!plainSequence(*tensors) || tensors->sequence_values_size() > 0) {
      error = where + " holds a sequence of other than tensors, which Loom "
                      "does not support";
      return false;
    }
  }
  out = ValueProto();
  out.name = proto.name();
  out.elemType = kind;
  out.nested = nested;
  for (int k = 0; k < tensors->tensor_values_size(); ++k) {
    HostTensor t;
    std::string element = where + " element " + std::to_string(k);
    if (!tensorOfProto(*tensors->mutable_tensor_values(k), t, element, error,
                       expected))
      return false;
    // One sequence holds one element type.
    if (k > 0 && t.dtype != out.tensors.front().dtype) {
      error = where + " ('" + out.name + "') mixes element types: element " +
              std::to_string(k) + " has data type " + std::to_string(t.dtype) +
              ", element 0 " + std::to_string(out.tensors.front().dtype) +
              " (a sequence holds one type)";
      return false;
    }
    out.tensors.push_back(std::move(t));
  }
  return true;
}

bool writeSequenceProto(const std::string &path, const std::string &name,
                        const std::vector<TensorView> &tensors,
                        std::string &error) {
  onnx::SequenceProto proto;
  proto.set_name(name);
  proto.set_elem_type(onnx::SequenceProto::TENSOR);
  for (const TensorView &t : tensors)
    if (!proto.add_tensor_values()->ParseFromString(tensorProtoBytes("", t))) {
      error = "cannot write sequence '" + name + "'";
      return false;
    }
  return writeFileAtomically(path, proto.SerializeAsString(), error);
}

bool readTensorFile(const std::string &path, HostTensor &out,
                    std::string &error) {
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".pb") == 0) {
    std::string ignored;
    return readTensorProto(path, ignored, out, error);
  }
  return readNpy(path, out, error);
}

} // namespace loom::files
