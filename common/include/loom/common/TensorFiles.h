//===- TensorFiles.h - tensors from and to .npy and ONNX .pb files --------===//
//
// The tensor file formats of the tools: NumPy .npy (v1-v3, C order), .npz
// archives of them (read only; deflate through zlib) and ONNX TensorProto
// (.pb, the backend test layout). Tensors are plain bytes here (HostTensor
// to read, TensorView to write), not runtime tensors: loom-run wraps them
// in loom_tensor (tools/loom-run/Tensors.h), loomc binds them as
// TensorProto bytes. No MLIR, LLVM or runtime.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMMON_TENSORFILES_H
#define LOOM_COMMON_TENSORFILES_H

#include "loom/common/FileIO.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace loom::files {

/// A tensor read from a file: its dtype (loom/common/DType.h numbering),
/// dims and dense row-major bytes (exactly what the dims need).
struct HostTensor {
  int32_t dtype = 0;
  std::vector<int64_t> shape;
  std::string bytes;
};

/// A tensor someone else owns, to write: `data` holds its dense row-major
/// bytes, as many as `dtype` and `shape` need.
struct TensorView {
  int32_t dtype = 0;
  const int64_t *shape = nullptr;
  size_t rank = 0;
  const void *data = nullptr;
};

inline TensorView viewOf(const HostTensor &t) {
  return {t.dtype, t.shape.data(), t.shape.size(), t.bytes.data()};
}

/// Reads a .npy file into `out`; false with `error` naming the file.
bool readNpy(const std::string &path, HostTensor &out, std::string &error);
/// NumPy has no bfloat16: a bf16 tensor is written as float32 (exactly).
/// f16 is written as float16 ('<f2').
bool writeNpy(const std::string &path, const TensorView &t, std::string &error);

/// `t` (f32 or bf16) as a tensor of the other type: f32 -> bf16 rounds to
/// nearest even (NaN stays NaN, overflow gives infinity), bf16 -> f32 is
/// exact. The convention for .npy files, which cannot hold bf16: loom-run
/// reads a float32 .npy given for a bf16 input this way.
bool convertBf16(const TensorView &t, HostTensor &out, std::string &error);

/// The arrays of a NumPy .npz archive (numpy.savez: stored members, or
/// numpy.savez_compressed: deflated), in archive order, keyed by member
/// name without ".npy". On failure returns false, holding nothing, with
/// `error` naming the file and the array.
bool readNpz(const std::string &path,
             std::vector<std::pair<std::string, HostTensor>> &arrays,
             std::string &error);

/// A tensor read in place: `data` points at its `bytes` dense row-major
/// bytes inside a mapped file (a .npy file, or a stored member of a .npz
/// archive), which `file` keeps mapped, or inside `owned` (a deflated
/// member, decompressed). Copies share the mapping.
struct MappedTensor {
  int32_t dtype = 0;
  std::vector<int64_t> shape;
  const char *data = nullptr;
  uint64_t bytes = 0;
  std::shared_ptr<const MappedFile> file;
  std::shared_ptr<const std::string> owned;
};

/// Maps a .npy file; false with `error` naming the file.
bool mapNpy(const std::string &path, MappedTensor &out, std::string &error);

/// The arrays of a .npz archive as readNpz gives them, without reading
/// the file: stored members (numpy.savez) are views of the mapped file,
/// whose pages are read when touched and dropped again after their CRC is
/// checked; deflated members (savez_compressed) are decompressed. So a
/// training set far larger than memory can be read in place.
bool mapNpz(const std::string &path,
            std::vector<std::pair<std::string, MappedTensor>> &arrays,
            std::string &error);

/// Reads a TensorProto; `name` receives its name (may be empty). A UINT16
/// tensor is read as `expected` when that is BF16 or F16: older ONNX test
/// data stores bfloat16 tensors as uint16 bits.
bool readTensorProto(const std::string &path, std::string &name,
                     HostTensor &out, std::string &error, int32_t expected = 0);
bool writeTensorProto(const std::string &path, const std::string &name,
                      const TensorView &t, std::string &error);
/// `t` as a serialized TensorProto named `name`.
std::string tensorProtoBytes(const std::string &name, const TensorView &t);

/// An ONNX SequenceProto or OptionalProto of tensors read from a .pb file
/// (the backend test layout of sequence and optional values). The two
/// share one wire layout (name, elem_type, the tensor or tensors in field
/// 3, a sequence in field 5), so a one-tensor sequence and an optional
/// holding a tensor read alike: the model says which it is.
struct ValueProto {
  std::string name;
  /// ONNX's elem_type: 0 none (an empty optional), 1 tensors, 3 a
  /// sequence (an optional holding one).
  int32_t elemType = 0;
  /// The tensors: a sequence's, an optional's one, or the tensors of the
  /// sequence an optional holds (`nested`).
  std::vector<HostTensor> tensors;
  bool nested = false;
};

/// Reads a SequenceProto or OptionalProto of tensors. Returns true with
/// `isValue` false, reading nothing, when the file holds a TensorProto
/// instead (readTensorProto reads that); false with `error` naming the
/// file for a malformed one, one of sparse tensors or maps, or a
/// sequence whose tensors differ in element type. A UINT16 tensor is read
/// as `expected` when that is BF16 or F16 (readTensorProto).
bool readValueProto(const std::string &path, ValueProto &out, bool &isValue,
                    std::string &error, int32_t expected = 0);
/// Writes `tensors` as a SequenceProto named `name`.
bool writeSequenceProto(const std::string &path, const std::string &name,
                        const std::vector<TensorView> &tensors,
                        std::string &error);

/// Reads FILE.npy or FILE.pb (a TensorProto), by extension.
bool readTensorFile(const std::string &path, HostTensor &out,
                    std::string &error);

} // namespace loom::files

#endif // LOOM_COMMON_TENSORFILES_H
