//===- Trainer.cpp - the C API's trainer: training steps and checkpoints --===//
//
// A trainer drives a training artifact's step through loom_session_run: it
// owns the state tensors, passes the micro-step counter and the schedule
// horizon, and adopts each step's state outputs by swapping the pointers
// (no copy). Where the executor keeps state on its device (CUDA), the
// state stays there between steps: a step sends the batch and reads the
// scalars, the executor adopts the state outputs on the device, and the
// host tensors are a copy read back only when the state is read (a
// checkpoint, loom_trainer_state). Checkpoints are Checkpoint messages
// (loom/common/Checkpoint.h) written atomically.
//
//===----------------------------------------------------------------------===//

#include "loom/runtime.h"

#include "loom/common/Checkpoint.h"
#include "loom/common/FileIO.h"
#include "runtime/src/Executor.h"
#include "runtime/src/Session.h"
#include "runtime/src/Trainer.h"
#include "runtime/src/collectives/RunCollectives.h"
#include "runtime/src/pipeline/Executor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

using loom::runtime::makeStatus;
namespace artifact = loom::artifact;

namespace {

struct TensorDeleter {
  void operator()(loom_tensor *t) const { loom_tensor_release(t); }
};
using Tensor = std::unique_ptr<loom_tensor, TensorDeleter>;

/// A new tensor of `dtype` and `dims`, or a status.
loom_status newTensor(loom_dtype dtype, const std::vector<int64_t> &dims,
                      Tensor &out) {
  loom_tensor *t = nullptr;
  if (loom_status s = loom_tensor_create(dtype, dims.size(), dims.data(), &t))
    return s;
  out.reset(t);
  return nullptr;
}

std::string typeOf(const loom_tensor *t) {
  return artifact::typeString(loom_tensor_dtype(t), loom_tensor_shape(t),
                              loom_tensor_rank(t));
}

/// This rank's place among the shards of state sharded over mesh axis
/// `axis` (TrainingState.shard): its coordinate on the axis and the axis'
/// size, row-major ranks as docs/distributed.md lays them out. {0, 1}
/// without a communicator.
struct ShardPlace {
  int64_t index = 0, count = 1;
};

/// The session's mesh as the runtime lays ranks out on it, and this rank;
/// false without a communicator.
struct MeshRank {
  std::vector<int64_t> shape;
  std::vector<std::string> axes;
  int rank = 0;
};

bool meshRank(const loom_session *session, MeshRank &out) {
  loom_communicator *comm = loom::runtime::sessionCommunicator(session);
  if (!comm)
    return false;
  int64_t shape[16];
  const char *axes[16];
  size_t n = std::min<size_t>(
      loom_session_mesh(session, 16, shape, axes, nullptr), 16);
  out.shape.assign(shape, shape + n);
  out.axes.assign(axes, axes + n);
  out.rank = loom_communicator_rank(comm);
  return true;
}

ShardPlace shardPlace(const loom_session *session, const std::string &axis) {
  ShardPlace place;
  MeshRank mesh;
  if (!meshRank(session, mesh))
    return place;
  for (size_t i = 0; i < mesh.axes.size(); ++i) {
    if (axis != mesh.axes[i])
      continue;
    // The rank's place in its group over the axis: the chunk a
    // reduce-scatter over that group gives it.
    loom::runtime::collectives::Group group;
    std::string error;
    if (!loom::runtime::collectives::meshGroup(mesh.shape, mesh.rank,
                                               int64_t(1) << i, group, error))
      return place;
    place.count = static_cast<int64_t>(group.size());
    place.index =
        std::find(group.begin(), group.end(), mesh.rank) - group.begin();
    return place;
  }
  return place;
}

/// Whether this rank writes its shard of state sharded over `axis`: the
/// ranks that differ only on other axes hold the same piece, and the one
/// at coordinate 0 on those axes writes it.
bool writesShard(const loom_session *session, const std::string &axis) {
  MeshRank mesh;
  if (!meshRank(session, mesh))
    return true;
  int64_t rest = mesh.rank;
  for (size_t i = mesh.shape.size(); i-- > 0;) {
    if (axis != mesh.axes[i] && rest % mesh.shape[i] != 0)
      return false;
    rest /= mesh.shape[i];
  }
  return true;
}

/// The layout of tensor-parallel state `s` (StateShard.dim) whose piece
/// is `mine`, over `count` ranks.
artifact::SplitLayout splitLayout(const artifact::TrainingState &s,
                                  const loom_tensor *mine, int64_t count) {
  artifact::SplitLayout l;
  l.full.assign(s.shard().full_dims().begin(), s.shard().full_dims().end());
  l.dim = s.shard().dim();
  l.groups = s.shard().groups();
  l.count = count;
  l.elemBytes = artifact::dtypeSize(loom_tensor_dtype(mine));
  return l;
}

/// This rank's place among the pieces of tensor-parallel state `s`, which
/// the artifact splits in `full / local` pieces along its dim; an error
/// when the communicator does not give that many.
loom_status splitPlace(const loom_session *session,
                       const artifact::TrainingState &s,
                       const loom_tensor *mine, ShardPlace &place) {
  int dim = s.shard().dim();
  int64_t pieces = s.shard().full_dims(dim) / loom_tensor_shape(mine)[dim];
  place = shardPlace(session, s.shard().axis());
  if (place.count != pieces)
    return makeStatus(
        LOOM_UNAVAILABLE,
        "state '" + s.name() + "' is split in " + std::to_string(pieces) +
            " pieces over the '" + s.shard().axis() + "' axis, but " +
            (loom::runtime::sessionCommunicator(session)
                 ? "this rank's group on it has " +
                       std::to_string(place.count) + " rank(s)"
                 : std::string("no communicator is attached: attach one "
                               "(loom_session_attach_communicator) before "
                               "creating the trainer")));
  return nullptr;
}

float scalarOf(const loom_tensor *t) {
  float v;
  std::memcpy(&v, loom_tensor_data_const(t), sizeof(v));
  return v;
}

} // namespace

struct loom_trainer_s {
  /// Set for a pipeline artifact's trainer: every loom_trainer_* function
  /// goes to it (and the fields below are unused).
  std::unique_ptr<loom::pipeline::PipelineTrainer> pipeline;
  loom_session *session;
  const artifact::Training *training;
  /// The entry's inputs that are batch inputs, and their signatures.
  std::vector<size_t> batchInputs;
  std::vector<loom_tensor_info> batchInfo;
  /// One per training.state(i), owned.
  std::vector<Tensor> state;
  Tensor step, totalSteps;
  int64_t microStep = 0;
  int64_t horizon = 0;
  /// Set when the session's executor keeps the state on its device
  /// (claimed at create, released with the trainer): `device` says which
  /// inputs and outputs are state and whether the device holds it;
  /// `hostStale`, that the device's state is newer than `state`.
  bool keepsState = false;
  loom::runtime::DeviceState device;
  mutable bool hostStale = false;

  ~loom_trainer_s() {
    if (keepsState)
      loom::runtime::sessionExecutor(session).releaseState();
  }

  /// Brings the host tensors up to date with the device's state.
  loom_status syncHost() const {
    if (!keepsState || !hostStale)
      return nullptr;
    loom::runtime::Executor &x = loom::runtime::sessionExecutor(session);
    for (size_t i = 0; i < state.size(); ++i) {
      loom_tensor *t = state[i].get();
      if (loom_status s = x.readState(
              static_cast<size_t>(training->state(static_cast<int>(i)).input()),
              loom_tensor_data(t), loom_tensor_size_bytes(t)))
        return loom::runtime::prefixStatus(
            s, "reading the training state from the device: ");
    }
    hostStale = false;
    return nullptr;
  }
};

extern "C" {

loom_status loom_trainer_create(loom_session *session, loom_trainer **out) {
  if (!session || !out)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_trainer_create: null argument");
  *out = nullptr;
  if (loom::runtime::sessionPipeline(session)) {
    auto trainer = std::make_unique<loom_trainer_s>();
    if (loom_status s =
            loom::pipeline::PipelineTrainer::create(session, trainer->pipeline))
      return s;
    trainer->session = session;
    *out = trainer.release();
    return nullptr;
  }
  const artifact::Training *training = loom::runtime::sessionTraining(session);
  if (!training)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "the artifact of model '" +
                          loom::runtime::sessionModelName(session) +
                          "' is not a training artifact (compile one with "
                          "loomc train)");
  auto trainer = std::make_unique<loom_trainer_s>();
  trainer->session = session;
  trainer->training = training;
  trainer->horizon = training->total_steps();

  size_t numInputs = loom_session_input_count(session);
  std::vector<bool> special(numInputs, false);
  special[training->step_input()] = true;
  if (training->total_steps_input() >= 0)
    special[training->total_steps_input()] = true;
  for (const auto &s : training->state())
    special[s.input()] = true;
  for (size_t i = 0; i < numInputs; ++i) {
    if (special[i])
      continue;
    loom_tensor_info info;
    if (loom_status s = loom_session_input_info(session, i, &info))
      return s;
    trainer->batchInputs.push_back(i);
    trainer->batchInfo.push_back(info);
  }

  // The state: initial values, or zeros. Signatures are static and the
  // initial values' sizes were checked when the artifact was loaded. The
  // state is held once, here: each initial value's pages of the mapped
  // artifact are dropped once copied.
  const artifact::DataSection &section = loom::runtime::sessionData(session);
  for (const auto &s : training->state()) {
    loom_tensor_info info;
    if (loom_status st = loom_session_input_info(session, s.input(), &info))
      return st;
    Tensor t;
    if (loom_status st = newTensor(
            info.dtype, std::vector<int64_t>(info.dims, info.dims + info.rank),
            t))
      return st;
    std::string_view initial = artifact::initialData(section, s);
    if (s.has_shard() && s.shard().has_dim()) {
      // Tensor parallel: this rank's piece of the whole initial value.
      ShardPlace place;
      if (loom_status st = splitPlace(session, s, t.get(), place))
        return st;
      if (!initial.empty())
        splitLayout(s, t.get(), place.count)
            .cut(initial.data(), place.index,
                 static_cast<char *>(loom_tensor_data(t.get())));
    } else if (s.has_shard() && !initial.empty() &&
               initial.size() != loom_tensor_size_bytes(t.get())) {
      // ZeRO-3: this rank's chunk of the whole initial value, flattened
      // and padded with zeros.
      ShardPlace place = shardPlace(session, s.shard().axis());
      size_t chunk = loom_tensor_size_bytes(t.get());
      if (static_cast<uint64_t>(place.count) * chunk < initial.size() ||
          static_cast<uint64_t>(place.count - 1) * chunk >= initial.size())
        return makeStatus(
            LOOM_UNAVAILABLE,
            "state '" + s.name() + "' is a chunk of " + std::to_string(chunk) +
                " bytes of a tensor of " + std::to_string(initial.size()) +
                " bytes, which " + std::to_string(place.count) +
                " rank(s) on the '" + s.shard().axis() + "' axis do not cut " +
                "into such chunks" +
                (loom::runtime::sessionCommunicator(session)
                     ? std::string()
                     : std::string(" (no communicator is attached: attach "
                                   "one before creating the trainer)")));
      size_t begin = static_cast<size_t>(place.index) * chunk;
      char *dst = static_cast<char *>(loom_tensor_data(t.get()));
      std::memset(dst, 0, chunk);
      if (begin < initial.size())
        std::memcpy(dst, initial.data() + begin,
                    std::min(chunk, initial.size() - begin));
    } else if (!initial.empty()) {
      std::memcpy(loom_tensor_data(t.get()), initial.data(), initial.size());
    }
    loom::runtime::sessionReleaseData(session, initial);
    trainer->state.push_back(std::move(t));
  }
  if (loom_status s = newTensor(LOOM_DTYPE_I64, {}, trainer->step))
    return s;
  if (loom_status s = newTensor(LOOM_DTYPE_I64, {}, trainer->totalSteps))
    return s;
  // State on the device, where the executor keeps it (one trainer per
  // session).
  // A step that updates its state in place writes into the trainer's
  // tensors (the CPU code); there is no next state to adopt.
  if (!training->state_in_place()) {
    for (const auto &s : training->state())
      trainer->device.pairs.emplace_back(static_cast<size_t>(s.input()),
                                         static_cast<size_t>(s.output()));
    trainer->keepsState =
        loom::runtime::sessionExecutor(session).claimState(trainer->device);
  }
  *out = trainer.release();
  return nullptr;
}

void loom_trainer_release(loom_trainer *trainer) { delete trainer; }

size_t loom_trainer_batch_input_count(const loom_trainer *trainer) {
  if (trainer && trainer->pipeline)
    return trainer->pipeline->batchInputCount();
  return trainer ? trainer->batchInputs.size() : 0;
}

loom_status loom_trainer_batch_input_info(const loom_trainer *trainer,
                                          size_t index, loom_tensor_info *out) {
  if (!trainer || !out)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_trainer_batch_input_info: null argument");
  if (trainer->pipeline)
    return trainer->pipeline->batchInputInfo(index, out);
  if (index >= trainer->batchInfo.size())
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "batch input index " + std::to_string(index) +
                          " is out of range (" +
                          std::to_string(trainer->batchInfo.size()) + ")");
  *out = trainer->batchInfo[index];
  return nullptr;
}

/// The trainer that owns the state: a pipeline trainer's update trainer.
static const loom_trainer *stateTrainer(const loom_trainer *trainer) {
  return trainer && trainer->pipeline ? trainer->pipeline->update() : trainer;
}

const char *loom_trainer_labels(const loom_trainer *trainer) {
  if (trainer && trainer->pipeline)
    return trainer->pipeline->training().labels().c_str();
  return trainer ? trainer->training->labels().c_str() : "";
}

const char *loom_trainer_description(const loom_trainer *trainer) {
  if (trainer && trainer->pipeline)
    return trainer->pipeline->training().description().c_str();
  return trainer ? trainer->training->description().c_str() : "";
}

int32_t loom_trainer_accumulate(const loom_trainer *trainer) {
  if (trainer && trainer->pipeline)
    return 1; // the micro-batches are inside each pipeline step
  return trainer ? trainer->training->accumulate() : 0;
}

int64_t loom_trainer_micro_step(const loom_trainer *trainer) {
  trainer = stateTrainer(trainer);
  return trainer ? trainer->microStep : 0;
}

loom_status loom_trainer_set_total_steps(loom_trainer *trainer,
                                         int64_t total_steps) {
  if (!trainer)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_trainer_set_total_steps: trainer is null");
  if (trainer->pipeline)
    return loom_trainer_set_total_steps(trainer->pipeline->update(),
                                        total_steps);
  if (total_steps < 1)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "the schedule horizon must be at least 1 step, not " +
                          std::to_string(total_steps));
  trainer->horizon = total_steps;
  return nullptr;
}

int64_t loom_trainer_total_steps(const loom_trainer *trainer) {
  trainer = stateTrainer(trainer);
  return trainer ? trainer->horizon : 0;
}

} // extern "C"

namespace {

/// loom_trainer_step, recording the run into `profile` when not null.
loom_status step(loom_trainer *trainer, const loom_tensor *const *batch,
                 size_t num_batch, loom_train_stats *stats,
                 loom_profile *profile) {
  if (!trainer || (num_batch && !batch))
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_trainer_step: null argument");
  if (trainer->pipeline)
    return trainer->pipeline->step(batch, num_batch, stats, profile);
  const artifact::Training &training = *trainer->training;
  if (num_batch != trainer->batchInputs.size())
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "the training step takes " +
                          std::to_string(trainer->batchInputs.size()) +
                          " batch inputs, the call gave " +
                          std::to_string(num_batch));
  if (training.total_steps_input() >= 0 && trainer->horizon < 1)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "the schedule horizon is not set (the artifact has no "
                      "total_steps; call loom_trainer_set_total_steps)");

  int64_t micro = trainer->microStep;
  *static_cast<int64_t *>(loom_tensor_data(trainer->step.get())) = micro;
  *static_cast<int64_t *>(loom_tensor_data(trainer->totalSteps.get())) =
      trainer->horizon;
  std::vector<const loom_tensor *> inputs(
      loom_session_input_count(trainer->session), nullptr);
  for (size_t i = 0; i < num_batch; ++i)
    inputs[trainer->batchInputs[i]] = batch[i];
  inputs[training.step_input()] = trainer->step.get();
  if (training.total_steps_input() >= 0)
    inputs[training.total_steps_input()] = trainer->totalSteps.get();
  for (int i = 0; i < training.state_size(); ++i)
    inputs[training.state(i).input()] = trainer->state[i].get();

  size_t numOutputs = loom_session_output_count(trainer->session);
  std::vector<loom_tensor *> raw(numOutputs, nullptr);
  if (loom_status s =
          trainer->keepsState
              ? loom::runtime::sessionRunWithState(
                    trainer->session, inputs.data(), inputs.size(), raw.data(),
                    numOutputs, profile, trainer->device)
          : profile ? loom_session_run_profiled(trainer->session, inputs.data(),
                                                inputs.size(), raw.data(),
                                                numOutputs, profile)
                    : loom_session_run(trainer->session, inputs.data(),
                                       inputs.size(), raw.data(), numOutputs))
    return s;
  std::vector<Tensor> outputs;
  for (loom_tensor *t : raw)
    outputs.emplace_back(t);

  loom_train_stats result = {};
  result.loss = scalarOf(outputs[training.loss_output()].get());
  result.grad_norm = scalarOf(outputs[training.grad_norm_output()].get());
  result.lr = scalarOf(outputs[training.lr_output()].get());
  result.micro_step = micro;
  result.optimizer_step = micro / training.accumulate();
  result.applied = (micro + 1) % training.accumulate() == 0;
  result.nonfinite =
      !std::isfinite(result.loss) || !std::isfinite(result.grad_norm);
  // A loss-scaled step skips its own update on non-finite gradients and
  // backs its scale off: its state is always the one to keep.
  bool scaled = training.has_loss_scale_output();
  if (scaled)
    result.loss_scale = scalarOf(outputs[training.loss_scale_output()].get());
  // Adopt the next state: on the device, or by swapping ownership (the
  // old tensors go with the outputs).
  if (trainer->keepsState) {
    // The run uploaded the state if the device did not hold it.
    trainer->device.onDevice = true;
    if (!result.nonfinite || scaled) {
      if (loom_status s =
              loom::runtime::sessionExecutor(trainer->session).adoptState())
        return s;
      trainer->hostStale = true;
    }
  } else if ((!result.nonfinite || scaled) && !training.state_in_place()) {
    for (int i = 0; i < training.state_size(); ++i)
      std::swap(trainer->state[i], outputs[training.state(i).output()]);
  }
  trainer->microStep = micro + 1;
  if (stats)
    *stats = result;
  return nullptr;
}

} // namespace

loom_status loom::runtime::writeCheckpoint(artifact::Checkpoint &c,
                                           artifact::FileWriter &segments,
                                           const std::string &path,
                                           loom_communicator *comm,
                                           bool directory, int fileIndex,
                                           int files) {
  int32_t rank = comm ? loom_communicator_rank(comm) : 0;
  std::string bytes, error;
  // A message that does not serialize is ours; a file not written, the
  // disk's or the path's.
  auto failed = [&](const std::string &file) {
    bool ours = error.rfind("serializing", 0) == 0;
    return makeStatus(ours ? LOOM_INTERNAL : LOOM_NOT_FOUND,
                      ours ? file + ": " + error : error);
  };
  if (!directory) {
    // One file, whole tensors: rank 0 writes it, the others wait for it.
    if (rank == 0 && !segments.write(c, artifact::kCheckpointFile, path, error))
      return failed(path);
    return comm ? loom_communicator_barrier(comm) : nullptr;
  }
  // Sharded: a directory with one file per rank, then the manifest (rank
  // 0, after every rank's file is in place), then the files of the
  // previous manifest are removed.
  std::string dir = path;
  if (rank == 0 && !loom::files::makeDirectory(dir, error))
    return makeStatus(LOOM_NOT_FOUND, error);
  if (loom_status st = loom_communicator_barrier(comm))
    return st;
  if (fileIndex >= 0) {
    std::string file =
        artifact::shardFileName(c.micro_step(), fileIndex, files);
    if (!segments.write(c, artifact::kCheckpointFile, dir + "/" + file, error))
      return failed(dir + "/" + file);
  }
  if (loom_status st = loom_communicator_barrier(comm))
    return st;
  if (rank == 0) {
    std::string manifestPath = dir + "/" + artifact::kManifestName;
    artifact::Checkpoint old;
    std::string ignored;
    bool hadOld = artifact::readCheckpointFile(manifestPath, old, ignored);
    c.clear_state();
    for (int f = 0; f < files; ++f)
      c.add_shard_files(artifact::shardFileName(c.micro_step(), f, files));
    if (!artifact::serializeCheckpoint(c, bytes, error))
      return makeStatus(LOOM_INTERNAL, manifestPath + ": " + error);
    if (!loom::files::writeFileAtomically(manifestPath, bytes, error))
      return makeStatus(LOOM_NOT_FOUND, error);
    if (hadOld)
      for (const std::string &f : old.shard_files())
        if (std::find(c.shard_files().begin(), c.shard_files().end(), f) ==
                c.shard_files().end() &&
            f.find('/') == std::string::npos)
          std::remove((dir + "/" + f).c_str());
  }
  return loom_communicator_barrier(comm);
}

extern "C" {

loom_status loom_trainer_step(loom_trainer *trainer,
                              const loom_tensor *const *batch, size_t num_batch,
                              loom_train_stats *stats) {
  return step(trainer, batch, num_batch, stats, nullptr);
}

loom_status loom_trainer_step_profiled(loom_trainer *trainer,
                                       const loom_tensor *const *batch,
                                       size_t num_batch,
                                       loom_train_stats *stats,
                                       loom_profile *profile) {
  if (!profile)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_trainer_step_profiled: profile is null");
  return step(trainer, batch, num_batch, stats, profile);
}

size_t loom_trainer_state_count(const loom_trainer *trainer) {
  trainer = stateTrainer(trainer);
  return trainer ? trainer->state.size() : 0;
}

loom_status loom_trainer_state(const loom_trainer *trainer, size_t index,
                               const char **out_name, const char **out_kind,
                               const loom_tensor **out) {
  if (!trainer || !out)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_trainer_state: null argument");
  trainer = stateTrainer(trainer);
  if (index >= trainer->state.size())
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "state index " + std::to_string(index) +
                          " is out of range (" +
                          std::to_string(trainer->state.size()) + ")");
  if (loom_status s = trainer->syncHost())
    return s;
  const auto &s = trainer->training->state(static_cast<int>(index));
  if (out_name)
    *out_name = s.name().c_str();
  if (out_kind)
    *out_kind = s.kind().c_str();
  *out = trainer->state[index].get();
  return nullptr;
}

loom_status loom_trainer_find_state(const loom_trainer *trainer,
                                    const char *name, const loom_tensor **out) {
  if (!trainer || !name || !out)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_trainer_find_state: null argument");
  trainer = stateTrainer(trainer);
  for (size_t i = 0; i < trainer->state.size(); ++i) {
    if (trainer->training->state(static_cast<int>(i)).name() == name) {
      if (loom_status s = trainer->syncHost())
        return s;
      *out = trainer->state[i].get();
      return nullptr;
    }
  }
  return makeStatus(LOOM_NOT_FOUND,
                    std::string("the model has no state '") + name + "'");
}

loom_status loom_trainer_set_state(loom_trainer *trainer, const char *name,
                                   const loom_tensor *value) {
  if (!trainer || !name || !value)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_trainer_set_state: null argument");
  loom_trainer *owner = const_cast<loom_trainer *>(stateTrainer(trainer));
  for (size_t i = 0; i < owner->state.size(); ++i) {
    if (owner->training->state(static_cast<int>(i)).name() != name)
      continue;
    loom_tensor *mine = owner->state[i].get();
    if (typeOf(mine) != typeOf(value))
      return makeStatus(LOOM_SHAPE_MISMATCH,
                        std::string("state '") + name + "' is " + typeOf(mine) +
                            ", the value " + typeOf(value));
    // The rest of the state as the device has it, then this tensor: the
    // whole state goes up with the next step.
    if (loom_status s = owner->syncHost())
      return s;
    std::memcpy(loom_tensor_data(mine), loom_tensor_data_const(value),
                loom_tensor_size_bytes(mine));
    owner->device.onDevice = false;
    return nullptr;
  }
  return makeStatus(LOOM_NOT_FOUND,
                    std::string("the model has no state '") + name + "'");
}

loom_status loom_trainer_memory_stats(const loom_trainer *trainer,
                                      loom_trainer_memory *out) {
  if (!trainer || !out)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_trainer_memory_stats: null argument");
  *out = {};
  // Sizes only: the state's values may be on the device.
  trainer = stateTrainer(trainer);
  for (size_t i = 0; i < trainer->state.size(); ++i) {
    size_t bytes = loom_tensor_size_bytes(trainer->state[i].get());
    const std::string &k = trainer->training->state(static_cast<int>(i)).kind();
    (k == "param"        ? out->parameter_bytes
     : k == "grad_accum" ? out->accumulator_bytes
                         : out->optimizer_state_bytes) += bytes;
  }
  return nullptr;
}

int loom_trainer_updates_state_in_place(const loom_trainer *trainer) {
  if (!trainer)
    return 0;
  trainer = stateTrainer(trainer);
  return trainer->training && trainer->training->state_in_place() ? 1 : 0;
}

loom_status loom_trainer_save(const loom_trainer *trainer, const char *path) {
  if (!trainer || !path)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_trainer_save: null argument");
  if (trainer->pipeline)
    return trainer->pipeline->save(path);
  if (loom_status s = trainer->syncHost())
    return s;
  const artifact::Training &training = *trainer->training;
  artifact::Checkpoint c;
  c.set_producer("loom runtime " + std::to_string(LOOM_RUNTIME_API_VERSION));
  c.set_model_name(loom::runtime::sessionModelName(trainer->session));
  c.set_micro_step(trainer->microStep);
  c.set_total_steps(trainer->horizon);
  c.set_accumulate(training.accumulate());
  c.set_description(training.description());
  loom_communicator *comm =
      loom::runtime::sessionCommunicator(trainer->session);
  int32_t rank = comm ? loom_communicator_rank(comm) : 0;
  int32_t ranks = comm ? loom_communicator_size(comm) : 1;
  bool sharded = false;
  for (const auto &s : training.state())
    sharded |= s.has_shard();
  artifact::FileWriter segments;
  // This rank's part: its shards, and (rank 0) the replicated state.
  for (size_t i = 0; i < trainer->state.size(); ++i) {
    const auto &s = training.state(static_cast<int>(i));
    if (s.has_shard() ? !writesShard(trainer->session, s.shard().axis())
                      : rank != 0)
      continue;
    const loom_tensor *t = trainer->state[i].get();
    artifact::CheckpointTensor *out = c.add_state();
    out->set_name(s.name());
    out->set_kind(s.kind());
    out->set_dtype(static_cast<artifact::DType>(loom_tensor_dtype(t)));
    for (size_t d = 0; d < loom_tensor_rank(t); ++d)
      out->add_dims(loom_tensor_shape(t)[d]);
    // In the data section, straight from the tensor (no copy).
    segments.add(
        std::string_view(static_cast<const char *>(loom_tensor_data_const(t)),
                         loom_tensor_size_bytes(t)),
        *out->mutable_segment());
    if (s.has_shard() && ranks > 1) {
      ShardPlace place = shardPlace(trainer->session, s.shard().axis());
      *out->mutable_shard() = s.shard();
      out->set_shard_index(place.index);
      out->set_shard_count(place.count);
    }
  }
  return loom::runtime::writeCheckpoint(c, segments, path, comm,
                                        sharded && ranks > 1, rank, ranks);
}

loom_status loom_trainer_load(loom_trainer *trainer, const char *path) {
  if (!trainer || !path)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "loom_trainer_load: null argument");
  if (trainer->pipeline)
    return trainer->pipeline->load(path);
  // Whole tensors, a sharded checkpoint merged: it loads into any
  // number of ranks.
  artifact::Checkpoint c;
  std::string error;
  if (!artifact::readCheckpoint(path, c, error,
                                loom::runtime::sessionLimits(trainer->session)))
    return makeStatus(error.find("cannot") != std::string::npos
                          ? LOOM_NOT_FOUND
                          : LOOM_BAD_ARTIFACT,
                      error);
  return loom::runtime::loadTrainerState(trainer, c, path, false);
}

} // extern "C"

loom_status loom::runtime::loadTrainerState(loom_trainer *trainer,
                                            const artifact::Checkpoint &c,
                                            const std::string &path,
                                            bool others) {
  // The host's copy first (a shard loads into the rest of a tensor).
  if (loom_status s = trainer->syncHost())
    return s;
  // It must be this model's: same accumulation, same state names, types.
  const artifact::Training &training = *trainer->training;
  const std::string &model = loom::runtime::sessionModelName(trainer->session);
  std::string where =
      path + ": the checkpoint (of model '" + c.model_name() + "') ";
  std::string ours = "this model ('" + model + "')";
  auto byName = artifact::stateByName(c);
  std::vector<const artifact::CheckpointTensor *> found;
  for (size_t i = 0; i < trainer->state.size(); ++i) {
    const std::string &name = training.state(static_cast<int>(i)).name();
    auto it = byName.find(name);
    if (it == byName.end())
      return makeStatus(LOOM_INVALID_ARGUMENT, where + "has no state '" + name +
                                                   "', which " + ours +
                                                   " trains");
    const artifact::CheckpointTensor &t = *it->second;
    const loom_tensor *mine = trainer->state[i].get();
    const auto &shard = training.state(static_cast<int>(i)).shard();
    bool isShard = training.state(static_cast<int>(i)).has_shard();
    bool same = static_cast<int>(loom_tensor_dtype(mine)) == t.dtype();
    if (isShard) {
      // This rank keeps its chunk of the whole tensor.
      same = same && shard.full_dims_size() == t.dims_size();
      for (int d = 0; same && d < t.dims_size(); ++d)
        same = shard.full_dims(d) == t.dims(d);
    } else {
      same =
          same && loom_tensor_rank(mine) == static_cast<size_t>(t.dims_size());
      for (size_t d = 0; same && d < loom_tensor_rank(mine); ++d)
        same = loom_tensor_shape(mine)[d] == t.dims(static_cast<int>(d));
    }
    if (!same)
      return makeStatus(
          LOOM_SHAPE_MISMATCH,
          where + "has state '" + name + "' as " +
              artifact::typeString(t.dtype(), t.dims().data(),
                                   static_cast<size_t>(t.dims_size())) +
              ", " + ours + " as " + typeOf(mine));
    found.push_back(&t);
    byName.erase(it);
  }
  if (!byName.empty() && !others)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      where + "has state '" + byName.begin()->first +
                          "', which " + ours + " does not have");
  // The counter means micro-batches: it would mean other steps.
  if (c.accumulate() != training.accumulate())
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      where + "accumulates " + std::to_string(c.accumulate()) +
                          " micro-batches per step, " + ours + " " +
                          std::to_string(training.accumulate()));

  // Should a tensor fail half way, the device's state (if it holds one)
  // stays the trainer's, and the host's copy is read back from it.
  trainer->hostStale = trainer->keepsState && trainer->device.onDevice;
  for (size_t i = 0; i < trainer->state.size(); ++i) {
    const auto &s = training.state(static_cast<int>(i));
    loom_tensor *mine = trainer->state[i].get();
    const std::string &data = found[i]->data();
    if (!s.has_shard()) {
      std::memcpy(loom_tensor_data(mine), data.data(), data.size());
      continue;
    }
    if (s.shard().has_dim()) {
      // Tensor parallel: this rank's piece of the whole tensor.
      ShardPlace place;
      if (loom_status st = splitPlace(trainer->session, s, mine, place))
        return st;
      artifact::SplitLayout l = splitLayout(s, mine, place.count);
      if (l.wholeBytes() != data.size())
        return makeStatus(LOOM_SHAPE_MISMATCH,
                          where + "has state '" + s.name() + "' of " +
                              std::to_string(data.size()) + " bytes, not " +
                              std::to_string(l.wholeBytes()));
      l.cut(data.data(), place.index,
            static_cast<char *>(loom_tensor_data(mine)));
      continue;
    }
    // Chunk `index` of the flattened tensor, zero past its end.
    ShardPlace place = shardPlace(trainer->session, s.shard().axis());
    size_t chunk = loom_tensor_size_bytes(mine);
    size_t begin = static_cast<size_t>(place.index) * chunk;
    std::memset(loom_tensor_data(mine), 0, chunk);
    if (begin < data.size())
      std::memcpy(loom_tensor_data(mine), data.data() + begin,
                  std::min(chunk, data.size() - begin));
  }
  // The loaded state goes to the device with the next step.
  trainer->device.onDevice = false;
  trainer->hostStale = false;
  trainer->microStep = c.micro_step();
  trainer->horizon = c.total_steps();
  return nullptr;
}
