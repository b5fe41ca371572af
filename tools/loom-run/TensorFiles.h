//===- TensorFiles.h - tensors from and to .npy and ONNX .pb files --------===//
//
// The file formats loom-run reads and writes: NumPy .npy (v1-v3, C order),
// .npz archives of them (read only; deflate through zlib) and ONNX
// TensorProto (.pb, the backend test layout). Runtime-only code:
// no MLIR or LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_LOOMRUN_TENSORFILES_H
#define LOOM_TOOLS_LOOMRUN_TENSORFILES_H

#include "loom/runtime.h"
#include "runtime/src/FileIO.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace loom::tools {

struct TensorDeleter {
  void operator()(loom_tensor *t) const { loom_tensor_release(t); }
};
/// An owned tensor.
using TensorPtr = std::unique_ptr<loom_tensor, TensorDeleter>;

/// A tensor owned by the caller (loom_tensor_release), or null with
/// `error` set, naming the file.
loom_tensor *readNpy(const std::string &path, std::string &error);
/// NumPy has no bfloat16: a bf16 tensor is written as float32 (exactly).
/// f16 is written as float16 ('<f2').
bool writeNpy(const std::string &path, const loom_tensor *t,
              std::string &error);

/// `t` (f32 or bf16) as a new tensor of the other type: f32 -> bf16 rounds
/// to nearest even (NaN stays NaN, overflow gives infinity), bf16 -> f32
/// is exact. The convention for .npy files, which cannot hold bf16: loom-run
/// reads a float32 .npy given for a bf16 input this way.
loom_tensor *convertBf16(const loom_tensor *t, std::string &error);

/// The arrays of a NumPy .npz archive (numpy.savez: stored members, or
/// numpy.savez_compressed: deflated), in archive order, keyed by member
/// name without ".npy". The caller owns the tensors. On failure returns
/// false, holding nothing, with `error` naming the file and the array.
bool readNpz(const std::string &path,
             std::vector<std::pair<std::string, loom_tensor *>> &arrays,
             std::string &error);

/// Reads a TensorProto; `name` receives its name (may be empty). A UINT16
/// tensor is read as `expected` when that is BF16 or F16: older ONNX test
/// data stores bfloat16 tensors as uint16 bits.
loom_tensor *readTensorProto(const std::string &path, std::string &name,
                             std::string &error,
                             loom_dtype expected = LOOM_DTYPE_UNDEFINED);
bool writeTensorProto(const std::string &path, const std::string &name,
                      const loom_tensor *t, std::string &error);
/// `t` as a serialized TensorProto named `name`.
std::string tensorProtoBytes(const std::string &name, const loom_tensor *t);

/// Reads FILE.npy or FILE.pb (a TensorProto), by extension.
loom_tensor *readTensorFile(const std::string &path, std::string &error);

/// Writes `path` through a temporary file beside it, fsynced and renamed,
/// so a reader never sees a half-written file (loom-run's outputs, loomc's
/// artifacts): the runtime's writer (runtime/src/FileIO.h).
using files::writeFileAtomically;

} // namespace loom::tools

#endif // LOOM_TOOLS_LOOMRUN_TENSORFILES_H
