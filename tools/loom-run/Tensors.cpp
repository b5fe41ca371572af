//===- Tensors.cpp - loom-run's tensor files as runtime tensors -----------===//

#include "tools/loom-run/Tensors.h"

#include <cstring>

namespace loom::tools {

using files::HostTensor;
using files::TensorView;

/// `t` as a new runtime tensor, or null with `error` starting with `where`.
static loom_tensor *toTensor(const HostTensor &t, const std::string &where,
                             std::string &error) {
  loom_tensor *out = nullptr;
  if (loom_status s =
          loom_tensor_create(static_cast<loom_dtype>(t.dtype), t.shape.size(),
                             t.shape.data(), &out)) {
    error = where + ": " + loom_status_message(s);
    loom_status_free(s);
    return nullptr;
  }
  std::memcpy(loom_tensor_data(out), t.bytes.data(), t.bytes.size());
  return out;
}

static TensorView viewOf(const loom_tensor *t) {
  return {static_cast<int32_t>(loom_tensor_dtype(t)), loom_tensor_shape(t),
          loom_tensor_rank(t), loom_tensor_data_const(t)};
}

loom_tensor *readNpy(const std::string &path, std::string &error) {
  HostTensor t;
  if (!files::readNpy(path, t, error))
    return nullptr;
  return toTensor(t, "'" + path + "'", error);
}

bool writeNpy(const std::string &path, const loom_tensor *t,
              std::string &error) {
  return files::writeNpy(path, viewOf(t), error);
}

loom_tensor *convertBf16(const loom_tensor *t, std::string &error) {
  HostTensor out;
  if (!files::convertBf16(viewOf(t), out, error))
    return nullptr;
  return toTensor(out, "bf16 conversion", error);
}

bool readNpz(const std::string &path,
             std::vector<std::pair<std::string, loom_tensor *>> &arrays,
             std::string &error) {
  arrays.clear();
  std::vector<std::pair<std::string, HostTensor>> read;
  if (!files::readNpz(path, read, error))
    return false;
  for (auto &[key, host] : read) {
    loom_tensor *t =
        toTensor(host, "'" + path + "' array '" + key + "'", error);
    if (!t) {
      for (auto &entry : arrays)
        loom_tensor_release(entry.second);
      arrays.clear();
      return false;
    }
    host = HostTensor(); // one copy of the data at a time
    arrays.emplace_back(key, t);
  }
  return true;
}

loom_tensor *readTensorProto(const std::string &path, std::string &name,
                             std::string &error, loom_dtype expected) {
  HostTensor t;
  if (!files::readTensorProto(path, name, t, error, expected))
    return nullptr;
  return toTensor(t, path, error);
}

bool writeTensorProto(const std::string &path, const std::string &name,
                      const loom_tensor *t, std::string &error) {
  return files::writeTensorProto(path, name, viewOf(t), error);
}

bool readValueProto(const std::string &path, ValueTensors &out, bool &isValue,
                    std::string &error) {
  files::ValueProto value;
  if (!files::readValueProto(path, value, isValue, error))
    return false;
  if (!isValue)
    return true;
  out = ValueTensors();
  out.name = value.name;
  out.elemType = value.elemType;
  out.nested = value.nested;
  for (size_t k = 0; k < value.tensors.size(); ++k) {
    loom_tensor *t = toTensor(
        value.tensors[k], "'" + path + "' element " + std::to_string(k), error);
    if (!t)
      return false;
    value.tensors[k] = HostTensor(); // one copy of the data at a time
    out.tensors.emplace_back(t);
  }
  return true;
}

bool writeSequenceProto(const std::string &path, const std::string &name,
                        const std::vector<const loom_tensor *> &tensors,
                        std::string &error) {
  std::vector<TensorView> views;
  for (const loom_tensor *t : tensors)
    views.push_back(viewOf(t));
  return files::writeSequenceProto(path, name, views, error);
}

} // namespace loom::tools
