//===- Checkpoint.cpp - reading and writing .loomckpt files ---------------===//

#include "runtime/src/Checkpoint.h"

#include "runtime/src/FileIO.h"

namespace loom::artifact {

bool serializeCheckpoint(const Checkpoint &checkpoint, std::string &bytes,
                         std::string &error) {
  std::string body;
  if (!checkpoint.SerializeToString(&body)) {
    error = "serializing the checkpoint failed (over 2 GiB?)";
    return false;
  }
  bytes = header(body, kCheckpointFile) + body;
  return true;
}

bool parseCheckpoint(const void *data, size_t size, Checkpoint &out,
                     std::string &error) {
  const char *body = nullptr;
  size_t bodySize = 0;
  if (!checkHeader(data, size, kCheckpointFile, body, bodySize, error))
    return false;
  if (!out.ParseFromArray(body, static_cast<int>(bodySize))) {
    error = "checkpoint is truncated or corrupt (its message does not parse)";
    return false;
  }
  if (out.micro_step() < 0 || out.total_steps() < 0 || out.accumulate() < 1) {
    error = "checkpoint is corrupt (micro_step " +
            std::to_string(out.micro_step()) + ", total_steps " +
            std::to_string(out.total_steps()) + ", accumulate " +
            std::to_string(out.accumulate()) + ")";
    return false;
  }
  std::map<std::string, int> seen;
  for (int i = 0; i < out.state_size(); ++i) {
    const CheckpointTensor &t = out.state(i);
    std::string where = "checkpoint state '" + t.name() + "'";
    if (t.name().empty()) {
      error = "checkpoint state " + std::to_string(i) + " has no name";
      return false;
    }
    if (!seen.emplace(t.name(), i).second) {
      error = where + " appears twice";
      return false;
    }
    if (!checkTensorData(t.dtype(), t.dims().data(),
                         static_cast<size_t>(t.dims_size()), t.data().size(),
                         where, error))
      return false;
  }
  return true;
}

bool readCheckpoint(const std::string &path, Checkpoint &out,
                    std::string &error) {
  std::string bytes;
  if (!files::readFile(path, bytes, error, "checkpoint"))
    return false;
  if (!parseCheckpoint(bytes.data(), bytes.size(), out, error)) {
    error = path + ": " + error;
    return false;
  }
  return true;
}

std::map<std::string, const CheckpointTensor *>
stateByName(const Checkpoint &checkpoint) {
  std::map<std::string, const CheckpointTensor *> state;
  for (const CheckpointTensor &t : checkpoint.state())
    state.emplace(t.name(), &t);
  return state;
}

} // namespace loom::artifact
