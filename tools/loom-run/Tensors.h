//===- Tensors.h - loom-run's tensor files as runtime tensors ---*- C++ -*-===//
//
// The .npy, .npz and ONNX .pb files of loom/common/TensorFiles.h read into
// and written from the runtime's loom_tensor (one copy between the file's
// bytes and the tensor), for loom-run's inputs, outputs and training data.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_LOOMRUN_TENSORS_H
#define LOOM_TOOLS_LOOMRUN_TENSORS_H

#include "loom/common/TensorFiles.h"
#include "loom/runtime.h"

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

/// The message of a failed status, which it frees.
inline std::string takeMessage(loom_status s) {
  std::string message = loom_status_message(s);
  loom_status_free(s);
  return message;
}

/// A tensor owned by the caller (loom_tensor_release), or null with
/// `error` set, naming the file.
loom_tensor *readNpy(const std::string &path, std::string &error);
/// A bf16 tensor is written as float32 (files::writeNpy).
bool writeNpy(const std::string &path, const loom_tensor *t,
              std::string &error);

/// `t` (f32 or bf16) as a new tensor of the other type (files::convertBf16).
loom_tensor *convertBf16(const loom_tensor *t, std::string &error);

/// The arrays of a .npz archive (files::readNpz); the caller owns the
/// tensors. On failure returns false, holding nothing.
bool readNpz(const std::string &path,
             std::vector<std::pair<std::string, loom_tensor *>> &arrays,
             std::string &error);

/// Reads a TensorProto (files::readTensorProto).
loom_tensor *readTensorProto(const std::string &path, std::string &name,
                             std::string &error,
                             loom_dtype expected = LOOM_DTYPE_UNDEFINED);
bool writeTensorProto(const std::string &path, const std::string &name,
                      const loom_tensor *t, std::string &error);

/// An ONNX SequenceProto or OptionalProto of tensors
/// (files::readValueProto), its tensors as runtime tensors.
struct ValueTensors {
  std::string name;
  int32_t elemType = 0;
  bool nested = false;
  std::vector<TensorPtr> tensors;
};
/// Reads `path` as a SequenceProto or OptionalProto; `isValue` false (and
/// true returned) when it holds a TensorProto instead.
bool readValueProto(const std::string &path, ValueTensors &out, bool &isValue,
                    std::string &error);
/// Writes `tensors` as a SequenceProto named `name`.
bool writeSequenceProto(const std::string &path, const std::string &name,
                        const std::vector<const loom_tensor *> &tensors,
                        std::string &error);

} // namespace loom::tools

#endif // LOOM_TOOLS_LOOMRUN_TENSORS_H
