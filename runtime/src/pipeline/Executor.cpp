//===- Executor.cpp - one rank's share of a pipeline-parallel step --------===//

#include "runtime/src/pipeline/Executor.h"

#include "runtime/src/Session.h"
#include "runtime/src/Trainer.h"
#include "runtime/src/collectives/Communicator.h"
#include "runtime/src/collectives/CommunicatorApi.h"
#include "runtime/src/collectives/RunCollectives.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace loom::pipeline {

using loom::runtime::makeStatus;
using loom::runtime::collectives::ReduceOp;
using loom::runtime::collectives::WorkPtr;

namespace {

bool isFloat(loom_dtype dtype) {
  return dtype == LOOM_DTYPE_F32 || dtype == LOOM_DTYPE_F16 ||
         dtype == LOOM_DTYPE_BF16 || dtype == LOOM_DTYPE_F64;
}

using Shared = std::shared_ptr<loom_tensor>;

Shared share(loom_tensor *t) { return Shared(t, loom_tensor_release); }

/// A new tensor of `dtype` and `dims`, zeroed.
loom_status newShared(loom_dtype dtype, const std::vector<int64_t> &dims,
                      Shared &out) {
  loom_tensor *t = nullptr;
  if (loom_status s = loom_tensor_create(dtype, dims.size(), dims.data(), &t))
    return s;
  std::memset(loom_tensor_data(t), 0, loom_tensor_size_bytes(t));
  out = share(t);
  return nullptr;
}

loom_status scalar(float v, Shared &out) {
  if (loom_status s = newShared(LOOM_DTYPE_F32, {}, out))
    return s;
  std::memcpy(loom_tensor_data(out.get()), &v, sizeof(v));
  return nullptr;
}

std::vector<int64_t> dimsOf(const loom_tensor_info &info) {
  return std::vector<int64_t>(info.dims, info.dims + info.rank);
}

bool startsWith(const std::string &s, const char *prefix) {
  return s.rfind(prefix, 0) == 0;
}

/// I of "kind:I" when it is a decimal number below `limit`; -1 otherwise.
int indexOf(const std::string &name, size_t colon, int limit) {
  std::string digits = name.substr(colon + 1);
  if (digits.empty() || digits.size() > 6 ||
      digits.find_first_not_of("0123456789") != std::string::npos)
    return -1;
  int i = std::atoi(digits.c_str());
  return i < limit ? i : -1;
}

/// Message tags: unique within a step; bits kind(1) | receiving stage (10)
/// | micro-batch (13) | index (8).
constexpr int kMaxStages = 1 << 10, kMaxMicroBatches = 1 << 13,
              kMaxIndex = 1 << 8;
uint32_t tagOf(bool gradient, int stage, int micro, int index) {
  return (uint32_t(gradient) << 31) | (uint32_t(stage) << 21) |
         (uint32_t(micro) << 8) | uint32_t(index);
}

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string takeMessage(loom_status s) {
  std::string m = loom_status_message(s);
  loom_status_free(s);
  return m;
}

const char *partName(const char *action) {
  if (!std::strcmp(action, "F"))
    return "forward";
  if (!std::strcmp(action, "I"))
    return "input-gradient";
  return "weight-gradient";
}

/// The in-flight sends of failed steps: their buffers stay valid for the
/// (broken) communicator, which may still read them.
std::mutex abandonedMutex;
std::vector<Shared> *abandoned = new std::vector<Shared>;

} // namespace

std::vector<BoundaryTensor>
boundaryTensors(const std::vector<loom_tensor_info> &signature, bool gradient,
                bool sending, int receivingStage, int microBatch) {
  // A sender's out:I / din:I, a receiver's in:I / the gradient of its
  // float out:I (only floats have gradients: the compiler's din:I are the
  // gradients of the float in:I).
  const char *prefix =
      sending ? (gradient ? "din:" : "out:") : (gradient ? "out:" : "in:");
  std::vector<BoundaryTensor> list;
  for (const loom_tensor_info &info : signature) {
    std::string n = info.name;
    if (!startsWith(n, prefix) ||
        (gradient && !sending && !isFloat(info.dtype)))
      continue;
    int index = indexOf(n, n.find(':'), kMaxIndex);
    if (index < 0)
      continue;
    list.push_back(
        {index, tagOf(gradient, receivingStage, microBatch, index), &info});
  }
  std::sort(list.begin(), list.end(),
            [](const BoundaryTensor &a, const BoundaryTensor &b) {
              return a.index < b.index;
            });
  return list;
}

std::vector<std::pair<size_t, size_t>>
communicationSteps(const std::vector<Action> &program) {
  std::vector<std::pair<size_t, size_t>> steps;
  for (size_t i = 0; i < program.size();) {
    if (program[i].isCompute()) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < program.size() && !program[end].isCompute())
      ++end;
    steps.push_back({i, end});
    i = end;
  }
  return steps;
}

bool groupedStepsRunOnRendezvous(const Schedule &s, std::string &error) {
  using Type = Action::Type;
  size_t ranks = s.programs.size();
  // A pair's messages meet by order: the k-th send from a to b must carry
  // what b's k-th receive from a expects (kind, receiving stage,
  // micro-batch).
  {
    std::map<std::pair<int, int>, std::vector<const Action *>> sends, recvs;
    for (size_t r = 0; r < ranks; ++r)
      for (const Action &a : s.programs[r]) {
        if (a.type == Type::SendActivation || a.type == Type::SendGradient)
          sends[{int(r), a.peer}].push_back(&a);
        else if (!a.isCompute())
          recvs[{a.peer, int(r)}].push_back(&a);
      }
    for (const auto &[pair, list] : sends) {
      const std::vector<const Action *> &other = recvs[pair];
      for (size_t k = 0; k < list.size() && k < other.size(); ++k) {
        const Action &x = *list[k], &y = *other[k];
        bool gradient = x.type == Type::SendGradient;
        if (gradient == (y.type == Type::RecvGradient) &&
            (gradient ? x.stage - 1 : x.stage + 1) == y.stage &&
            x.microBatch == y.microBatch)
          continue;
        error = "schedule '" + s.name + "' sends from rank " +
                std::to_string(pair.first) + " to rank " +
                std::to_string(pair.second) +
                " in another order than the receiver receives: transfer " +
                std::to_string(k) + " is '" + x.str() + "' on rank " +
                std::to_string(pair.first) + " but '" + y.str() + "' on rank " +
                std::to_string(pair.second) +
                " (a transport without tags pairs them by order)";
        return false;
      }
    }
  }
  std::vector<std::vector<std::pair<size_t, size_t>>> steps(ranks);
  for (size_t r = 0; r < ranks; ++r)
    steps[r] = communicationSteps(s.programs[r]);
  // Per ordered pair (from, to): the sends and receives posted so far; the
  // k-th send of a pair meets its k-th receive.
  std::map<std::pair<int, int>, int> sent, received;
  struct Open {
    std::pair<int, int> pair;
    int k;
  };
  std::vector<std::vector<Open>> open(ranks);
  std::vector<size_t> next(ranks, 0);
  std::vector<bool> posted(ranks, false);
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t r = 0; r < ranks; ++r) {
      if (next[r] >= steps[r].size())
        continue;
      if (!posted[r]) {
        for (size_t i = steps[r][next[r]].first; i < steps[r][next[r]].second;
             ++i) {
          const Action &a = s.programs[r][i];
          bool sending =
              a.type == Type::SendActivation || a.type == Type::SendGradient;
          std::pair<int, int> pair = sending ? std::make_pair(int(r), a.peer)
                                             : std::make_pair(a.peer, int(r));
          open[r].push_back({pair, (sending ? sent : received)[pair]++});
        }
        posted[r] = true;
        progress = true;
      }
      bool done = true;
      for (const Open &o : open[r])
        done = done && sent[o.pair] > o.k && received[o.pair] > o.k;
      if (done) {
        open[r].clear();
        posted[r] = false;
        ++next[r];
        progress = true;
      }
    }
  }
  std::string stuck;
  for (size_t r = 0; r < ranks; ++r)
    if (next[r] < steps[r].size())
      stuck += (stuck.empty() ? "" : "; ") + std::string("rank ") +
               std::to_string(r) + " waits in the step of '" +
               s.programs[r][steps[r][next[r]].first].str() + "'";
  if (stuck.empty())
    return true;
  error = "with each step's sends and receives as one group whose sends "
          "complete only when received, schedule '" +
          s.name + "' deadlocks: " + stuck;
  return false;
}

std::string exchangeStep(runtime::collectives::Communicator &comm,
                         const std::vector<StepMessage> &messages,
                         std::vector<WorkPtr> &sends) {
  std::vector<runtime::collectives::Transfer> transfers;
  for (const StepMessage &m : messages)
    transfers.push_back({m.send, loom_tensor_data(m.tensor),
                         loom_tensor_size_bytes(m.tensor), LOOM_DTYPE_I8,
                         m.peer, m.tag});
  std::vector<WorkPtr> works = comm.sendRecvGroup(transfers);
  std::string first;
  for (size_t i = 0; i < messages.size(); ++i) {
    if (messages[i].send) {
      sends.push_back(works[i]);
      continue;
    }
    std::string error = works[i]->wait();
    if (!error.empty() && first.empty())
      first = messages[i].what + ": " + error;
  }
  return first;
}

struct PipelineTrainer::StepState {
  int64_t step = 0;
  const loom_tensor *const *batch = nullptr;
  int64_t rows = 0; // per micro-batch
  std::vector<float> weights, losses;
  /// Per (stage, micro-batch): the values by signature name.
  std::map<std::pair<int, int>, std::map<std::string, Shared>> env;
  /// Per (stage, micro-batch): its din:* until SendGradient sends them.
  std::map<std::pair<int, int>, std::map<std::string, Shared>> grads;
  std::map<std::pair<int, int>, Shared> slices; // (batch input, micro)
  std::map<std::string, Shared> acc;
  struct Pending {
    Shared tensor;
    WorkPtr work;
    std::string what;
  };
  std::vector<Pending> sends;
  loom_profile *profile = nullptr;
};

PipelineTrainer::~PipelineTrainer() {
  if (update_)
    loom_trainer_release(update_);
  for (loom_session *s : owned_)
    loom_session_release(s);
  if (trace_)
    std::fclose(trace_);
}

loom_status PipelineTrainer::batchInputInfo(size_t index,
                                            loom_tensor_info *out) const {
  if (index >= batchInfo_.size())
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "batch input index " + std::to_string(index) +
                          " is out of range (" +
                          std::to_string(batchInfo_.size()) + ")");
  *out = batchInfo_[index];
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Building the trainer
//===----------------------------------------------------------------------===//

loom_status PipelineTrainer::create(loom_session *session,
                                    std::unique_ptr<PipelineTrainer> &out) {
  std::unique_ptr<PipelineTrainer> t(new PipelineTrainer);
  t->session_ = session;
  t->pipeline_ = runtime::sessionPipeline(session);
  t->training_ = runtime::sessionTraining(session);
  const artifact::Pipeline &pl = *t->pipeline_;
  t->S_ = pl.ranks();
  t->v_ = pl.virtual_stages();
  t->m_ = pl.micro_batches();
  t->D_ = pl.data_parallel();
  t->T_ = std::max(1, pl.tensor_parallel());
  int world = t->S_ * t->D_ * t->T_;
  std::string layout =
      std::to_string(t->D_) + " data replica(s) x " +
      (t->T_ > 1 ? std::to_string(t->T_) + " tensor rank(s) x " : "") +
      std::to_string(t->S_) + " pipe rank(s)";
  t->comm_ = runtime::sessionCommunicator(session);
  if (!t->comm_ && world != 1)
    return makeStatus(LOOM_UNAVAILABLE,
                      "this pipeline artifact runs on " +
                          std::to_string(world) + " ranks (" + layout +
                          "); attach a communicator of that many ranks "
                          "(loom_session_attach_communicator) first");
  if (t->comm_) {
    t->collectives_ = t->comm_->comm.get();
    if (t->collectives_->size() != world)
      return makeStatus(LOOM_INVALID_ARGUMENT,
                        "this pipeline artifact runs on " +
                            std::to_string(world) + " ranks (" + layout +
                            "), the communicator has " +
                            std::to_string(t->collectives_->size()));
    t->rank_ = t->collectives_->rank();
  }
  // World rank (d T + t) S + p on the mesh [D, T, S] (data, tensor,
  // pipe); T = 1 is the mesh [D, S].
  t->d_ = t->rank_ / (t->S_ * t->T_);
  t->t_ = t->rank_ / t->S_ % t->T_;
  t->p_ = t->rank_ % t->S_;
  {
    std::string error;
    if (!runtime::collectives::meshGroup({t->D_, t->T_, t->S_}, t->rank_, 0b001,
                                         t->dataGroup_, error) ||
        !runtime::collectives::meshGroup({t->D_, t->T_, t->S_}, t->rank_, 0b100,
                                         t->pipeGroup_, error))
      return makeStatus(LOOM_INTERNAL, "the pipeline's mesh: " + error);
  }
  int stages = t->S_ * t->v_;
  if (stages > kMaxStages || t->m_ > kMaxMicroBatches)
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "the pipeline's " + std::to_string(stages) +
                          " stages and " + std::to_string(t->m_) +
                          " micro-batches do not fit the message tags (at "
                          "most " +
                          std::to_string(kMaxStages) + " and " +
                          std::to_string(kMaxMicroBatches));

  // The schedule, verified as the compiler verified it.
  std::string error;
  t->schedule_ = makeSchedule(pl.schedule(), t->S_, t->m_, t->v_, error);
  if (!error.empty())
    return makeStatus(LOOM_BAD_ARTIFACT, "pipeline schedule: " + error);
  VerifyOptions vo;
  for (const auto &st : pl.stages())
    vo.activationBytes.push_back(st.saved_bytes());
  vo.memoryBudget = pl.memory_budget();
  VerifyResult vr;
  if (!verify(t->schedule_, vo, vr, error))
    return makeStatus(LOOM_BAD_ARTIFACT, "pipeline schedule '" + pl.schedule() +
                                             "' does not verify: " + error);
  // verify() lets a send run ahead of its receive; NCCL's do not (a
  // group ends when its receives have the data), so a schedule must also
  // run with each step's transfers as one such group. Refused rather
  // than left to hang at the timeout.
  if (t->collectives_ && std::string(t->collectives_->backend()) == "nccl" &&
      !groupedStepsRunOnRendezvous(t->schedule_, error))
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "pipeline schedule '" + pl.schedule() +
                          "' cannot run over NCCL: " + error +
                          " (Gloo runs it; over NCCL use gpipe, 1f1b or "
                          "zb-h1)");

  for (size_t i = 0; i < loom_session_input_count(session); ++i) {
    loom_tensor_info info;
    if (loom_status s = loom_session_input_info(session, i, &info))
      return s;
    if (info.name == t->training_->labels())
      t->labels_ = static_cast<int>(i);
    t->batchInfo_.push_back(info);
  }
  if (pl.loss() == "cross_entropy" &&
      (t->labels_ < 0 || t->batchInfo_[t->labels_].dtype != LOOM_DTYPE_I64))
    return makeStatus(LOOM_BAD_ARTIFACT,
                      "a cross_entropy pipeline needs its labels ('" +
                          t->training_->labels() + "') as an i64 batch input");

  // This rank's parts, with the outer session's instance.
  loom_instance *instance = runtime::sessionInstance(session);
  auto load = [&](const std::string &bytes, const std::string &what,
                  Part &part) -> loom_status {
    loom_session *s = nullptr;
    if (loom_status st = loom_session_create_from_memory(instance, bytes.data(),
                                                         bytes.size(), &s))
      return makeStatus(loom_status_get_code(st),
                        what + ": " + takeMessage(st));
    t->owned_.push_back(s);
    part.session = s;
    if (t->comm_ && loom_session_mesh(s, 0, nullptr, nullptr, nullptr) > 0)
      if (loom_status st = loom_session_attach_communicator(s, t->comm_))
        return makeStatus(loom_status_get_code(st),
                          what + ": " + takeMessage(st));
    for (size_t i = 0; i < loom_session_input_count(s); ++i) {
      loom_tensor_info info;
      if (loom_status st = loom_session_input_info(s, i, &info))
        return st;
      part.inputs.push_back(info);
    }
    for (size_t i = 0; i < loom_session_output_count(s); ++i) {
      loom_tensor_info info;
      if (loom_status st = loom_session_output_info(s, i, &info))
        return st;
      part.outputs.push_back(info);
    }
    return nullptr;
  };
  for (int s = t->p_; s < stages; s += t->S_) {
    const artifact::PipelineStage &ps = pl.stages(s);
    Stage &stage = t->stages_[s];
    std::string at = "pipeline stage " + std::to_string(s);
    if (loom_status st =
            load(ps.forward(), at + "'s forward part", stage.forward))
      return st;
    if (!ps.backward_input().empty())
      if (loom_status st =
              load(ps.backward_input(), at + "'s input-gradient part",
                   stage.backwardInput))
        return st;
    // A stage without trained parameters has no weight part.
    if (!ps.backward_weight().empty())
      if (loom_status st =
              load(ps.backward_weight(), at + "'s weight-gradient part",
                   stage.backwardWeight))
        return st;
    // Activations and gradients cross ranks with their static types.
    auto check = [&](const std::vector<loom_tensor_info> &list,
                     const char *prefix, const char *part) -> loom_status {
      for (const loom_tensor_info &info : list) {
        std::string name = info.name;
        if (!startsWith(name, prefix))
          continue;
        if (indexOf(name, name.find(':'), kMaxIndex) < 0)
          return makeStatus(LOOM_BAD_ARTIFACT,
                            at + "'s " + part + " part has '" + name +
                                "', whose index is not a number below " +
                                std::to_string(kMaxIndex));
        for (size_t d = 0; d < info.rank; ++d)
          if (info.dims[d] < 0)
            return makeStatus(LOOM_BAD_ARTIFACT,
                              at + "'s " + part + " part has '" + name +
                                  "' of a dynamic shape: what crosses "
                                  "stages needs a static one");
      }
      return nullptr;
    };
    if (loom_status st = check(stage.forward.inputs, "in:", "forward"))
      return st;
    if (loom_status st = check(stage.forward.outputs, "out:", "forward"))
      return st;
    if (loom_status st =
            check(stage.backwardInput.outputs, "din:", "input-gradient"))
      return st;
    for (const loom_tensor_info &info : stage.backwardWeight.inputs)
      if (startsWith(info.name, "acc:")) {
        for (size_t d = 0; d < info.rank; ++d)
          if (info.dims[d] < 0)
            return makeStatus(LOOM_BAD_ARTIFACT,
                              at + "'s weight-gradient part has '" + info.name +
                                  "' of a dynamic shape");
        t->accumulators_[std::string(info.name).substr(4)] = info;
      }
  }

  // The update: an ordinary trainer over its own session.
  std::string at = "pipeline rank " + std::to_string(t->p_) + "'s update";
  {
    const std::string &bytes = pl.updates(t->p_);
    loom_session *s = nullptr;
    if (loom_status st = loom_session_create_from_memory(instance, bytes.data(),
                                                         bytes.size(), &s))
      return makeStatus(loom_status_get_code(st), at + ": " + takeMessage(st));
    t->owned_.push_back(s);
    t->updateSession_ = s;
    if (t->comm_)
      if (loom_status st = loom_session_attach_communicator(s, t->comm_))
        return makeStatus(loom_status_get_code(st),
                          at + ": " + takeMessage(st));
    if (loom_status st = loom_trainer_create(s, &t->update_))
      return makeStatus(loom_status_get_code(st), at + ": " + takeMessage(st));
    if (loom_trainer_accumulate(t->update_) != 1)
      return makeStatus(
          LOOM_BAD_ARTIFACT,
          at + " accumulates " +
              std::to_string(loom_trainer_accumulate(t->update_)) +
              " micro-batches per step, not 1");
    if (loom_trainer_total_steps(t->update_) < 1 &&
        t->training_->total_steps() > 0)
      loom_trainer_set_total_steps(t->update_, t->training_->total_steps());
    std::map<std::string, int> unused;
    for (const auto &acc : t->accumulators_)
      unused[acc.first] = 1;
    for (size_t i = 0; i < loom_trainer_batch_input_count(t->update_); ++i) {
      loom_tensor_info info;
      if (loom_status st = loom_trainer_batch_input_info(t->update_, i, &info))
        return st;
      std::string name = info.name;
      if (name == "loss")
        continue;
      if (!startsWith(name, "acc:") || !t->accumulators_.count(name.substr(4)))
        return makeStatus(LOOM_BAD_ARTIFACT,
                          at + " takes batch input '" + name +
                              "', which is neither 'loss' nor the 'acc:' "
                              "of a weight-gradient part of this rank");
      unused.erase(name.substr(4));
    }
    if (!unused.empty())
      return makeStatus(LOOM_BAD_ARTIFACT,
                        at + " takes no 'acc:" + unused.begin()->first +
                            "', which a weight-gradient part of this rank "
                            "sums: that gradient would be lost");
  }

  if (const char *prefix = std::getenv("LOOM_PIPELINE_TRACE");
      prefix && *prefix) {
    std::string path =
        std::string(prefix) + ".rank" + std::to_string(t->rank_) + ".jsonl";
    t->trace_ = std::fopen(path.c_str(), "a");
    if (!t->trace_)
      return makeStatus(LOOM_NOT_FOUND, "LOOM_PIPELINE_TRACE: cannot open '" +
                                            path + "' for appending");
  }
  out = std::move(t);
  return nullptr;
}

//===----------------------------------------------------------------------===//
// A step
//===----------------------------------------------------------------------===//

std::string PipelineTrainer::where(const Action &a) const {
  return "pipeline rank " + std::to_string(rank_) + ", step action '" +
         a.str() + "'";
}

void PipelineTrainer::trace(int64_t step, const char *action, int stage,
                            int micro, int64_t start, int64_t end) {
  if (!trace_)
    return;
  std::fprintf(trace_,
               "{\"step\":%lld,\"rank\":%d,\"action\":\"%s\",\"stage\":%d,"
               "\"micro\":%d,\"start_ns\":%lld,\"end_ns\":%lld}\n",
               static_cast<long long>(step), rank_, action, stage, micro,
               static_cast<long long>(start), static_cast<long long>(end));
}

loom_status PipelineTrainer::fail(StepState &st, loom_status status,
                                  const std::string &prefix) {
  loom_status_code code = loom_status_get_code(status);
  std::string message = prefix + ": " + takeMessage(status);
  if (comm_ && collectives_->error().empty())
    loom_communicator_abort(comm_, message.c_str());
  {
    std::lock_guard<std::mutex> lock(abandonedMutex);
    for (auto &p : st.sends)
      abandoned->push_back(std::move(p.tensor));
  }
  st.sends.clear();
  if (trace_)
    std::fflush(trace_);
  return makeStatus(code, message);
}

loom_status PipelineTrainer::lossWeights(StepState &st) {
  st.weights.assign(static_cast<size_t>(m_), 1.0f / static_cast<float>(m_));
  if (pipeline_->loss() != "cross_entropy")
    return nullptr;
  const loom_tensor *labels = st.batch[labels_];
  size_t perMicro = loom_tensor_element_count(labels) / static_cast<size_t>(m_);
  const int64_t *data =
      static_cast<const int64_t *>(loom_tensor_data_const(labels));
  std::vector<int64_t> counts(static_cast<size_t>(m_), 0);
  int64_t total = 0;
  for (int j = 0; j < m_; ++j) {
    for (size_t i = 0; i < perMicro; ++i)
      counts[j] += data[j * perMicro + i] != pipeline_->ignore_index();
    total += counts[j];
  }
  if (D_ > 1) {
    std::string error = collectives_
                            ->allReduce(&total, &total, 1, LOOM_DTYPE_I64,
                                        ReduceOp::Sum, dataGroup_)
                            ->wait();
    if (!error.empty())
      return makeStatus(LOOM_UNAVAILABLE,
                        "the count of labels over the data replicas: " + error);
  }
  if (total == 0)
    return nullptr; // every label ignored: 1/m each
  for (int j = 0; j < m_; ++j)
    st.weights[j] = static_cast<float>(static_cast<double>(D_) * counts[j] /
                                       static_cast<double>(total));
  return nullptr;
}

loom_status PipelineTrainer::runPart(StepState &st, const Part &part,
                                     const char *name, int stage, int micro) {
  std::string at = std::string("the ") + partName(name) + " part of stage " +
                   std::to_string(stage);
  auto &env = st.env[{stage, micro}];
  std::vector<Shared> keep;
  std::vector<const loom_tensor *> inputs;
  for (const loom_tensor_info &info : part.inputs) {
    std::string n = info.name;
    Shared value;
    const loom_tensor *borrowed = nullptr;
    if (startsWith(n, "batch:")) {
      // The micro-batch's rows of batch input N (by name, or index).
      std::string key = n.substr(6);
      int index = -1;
      for (size_t i = 0; i < batchInfo_.size(); ++i)
        if (key == batchInfo_[i].name)
          index = static_cast<int>(i);
      if (index < 0)
        index = indexOf(n, 5, static_cast<int>(batchInfo_.size()));
      if (index < 0)
        return makeStatus(LOOM_BAD_ARTIFACT,
                          at + " takes '" + n +
                              "', which names no batch input of the model");
      Shared &slice = st.slices[{index, micro}];
      if (!slice) {
        const loom_tensor *whole = st.batch[index];
        std::vector<int64_t> dims(loom_tensor_shape(whole),
                                  loom_tensor_shape(whole) +
                                      loom_tensor_rank(whole));
        size_t bytes = loom_tensor_size_bytes(whole) / static_cast<size_t>(m_);
        dims[0] = st.rows;
        if (loom_status s = newShared(loom_tensor_dtype(whole), dims, slice))
          return s;
        std::memcpy(loom_tensor_data(slice.get()),
                    static_cast<const char *>(loom_tensor_data_const(whole)) +
                        bytes * static_cast<size_t>(micro),
                    bytes);
      }
      value = slice;
    } else if (startsWith(n, "param:")) {
      // The update's current state (its tensors change every step).
      std::string key = n.substr(6);
      if (loom_trainer_find_state(update_, key.c_str(), &borrowed)) {
        borrowed = nullptr;
        int index =
            indexOf(n, 5, static_cast<int>(loom_trainer_state_count(update_)));
        if (index >= 0)
          loom_status_free(
              loom_trainer_state(update_, index, nullptr, nullptr, &borrowed));
      }
      if (!borrowed)
        return makeStatus(LOOM_BAD_ARTIFACT,
                          at + " takes '" + n +
                              "', which names no state of this rank's update "
                              "artifact");
    } else if (n == "loss_weight") {
      if (loom_status s = scalar(st.weights[micro], value))
        return s;
    } else if (startsWith(n, "acc:")) {
      auto it = st.acc.find(n.substr(4));
      if (it == st.acc.end())
        return makeStatus(LOOM_BAD_ARTIFACT, at + " takes '" + n +
                                                 "', which no accumulator of "
                                                 "this rank holds");
      value = it->second;
    } else {
      auto it = env.find(n);
      if (it == env.end())
        return makeStatus(
            LOOM_BAD_ARTIFACT,
            at + " takes '" + n +
                "', which is neither a batch input, a parameter, the loss "
                "weight, an accumulator nor a value this stage received or "
                "computed for the micro-batch");
      value = it->second;
    }
    if (value) {
      borrowed = value.get();
      keep.push_back(std::move(value));
    }
    inputs.push_back(borrowed);
  }
  std::vector<loom_tensor *> raw(part.outputs.size(), nullptr);
  loom_status s = st.profile
                      ? loom_session_run_profiled(part.session, inputs.data(),
                                                  inputs.size(), raw.data(),
                                                  raw.size(), st.profile)
                      : loom_session_run(part.session, inputs.data(),
                                         inputs.size(), raw.data(), raw.size());
  if (s)
    return makeStatus(loom_status_get_code(s), at + ": " + takeMessage(s));
  bool weight = !std::strcmp(name, "W");
  for (size_t i = 0; i < raw.size(); ++i) {
    std::string n = part.outputs[i].name;
    Shared t = share(raw[i]);
    if (weight && startsWith(n, "acc:"))
      st.acc[n.substr(4)] = std::move(t);
    else
      env[n] = std::move(t);
  }
  return nullptr;
}

loom_status PipelineTrainer::run(StepState &st, const Action &a) {
  using Type = Action::Type;
  int s = a.stage, j = a.microBatch;
  const Stage &stage = stages_.at(s);
  int last = S_ * v_ - 1;
  auto &env = st.env[{s, j}];
  int64_t start = nowNs();
  switch (a.type) {
  case Type::Forward: {
    if (loom_status e = runPart(st, stage.forward, "F", s, j))
      return e;
    trace(st.step, "F", s, j, start, nowNs());
    if (s == last) {
      auto it = env.find("loss");
      if (it == env.end() || loom_tensor_element_count(it->second.get()) != 1 ||
          loom_tensor_dtype(it->second.get()) != LOOM_DTYPE_F32)
        return makeStatus(LOOM_BAD_ARTIFACT,
                          "the last stage's forward has no f32 scalar output "
                          "'loss'");
      std::memcpy(&st.losses[j], loom_tensor_data_const(it->second.get()),
                  sizeof(float));
    } else if (schedule_.rankOf(s + 1) == p_) {
      // The next stage is here: its inputs without a message.
      for (auto &[n, t] : env)
        if (startsWith(n, "out:"))
          st.env[{s + 1, j}]["in:" + n.substr(4)] = t;
    }
    return nullptr;
  }
  case Type::Backward:
  case Type::BackwardInput:
    if (stage.backwardInput.session) {
      if (loom_status e = runPart(st, stage.backwardInput, "I", s, j))
        return e;
      // The gradients for the previous stage: handed over here, or kept
      // for the send (a whole backward drops the environment first).
      bool local = s > 0 && schedule_.rankOf(s - 1) == p_;
      for (auto &[n, t] : env)
        if (startsWith(n, "din:")) {
          if (local)
            st.env[{s - 1, j}]["dout:" + n.substr(4)] = t;
          else
            st.grads[{s, j}][n] = t;
        }
      trace(st.step, "I", s, j, start, nowNs());
    }
    if (a.type == Type::BackwardInput)
      return nullptr;
    start = nowNs();
    [[fallthrough]];
  case Type::BackwardWeight:
    if (stage.backwardWeight.session)
      if (loom_status e = runPart(st, stage.backwardWeight, "W", s, j))
        return e;
    st.env.erase({s, j});
    trace(st.step, "W", s, j, start, nowNs());
    return nullptr;
  case Type::SendActivation:
  case Type::SendGradient:
  case Type::RecvActivation:
  case Type::RecvGradient:
    // step() hands the runs of transfers to exchange(), one group each.
    return makeStatus(LOOM_INTERNAL, "a transfer outside its step's group");
  }
  return nullptr;
}

loom_status PipelineTrainer::exchange(StepState &st, size_t begin, size_t end) {
  using Type = Action::Type;
  const std::vector<Action> &program =
      schedule_.programs[static_cast<size_t>(p_)];
  int64_t start = nowNs();
  std::vector<StepMessage> messages;
  std::vector<Shared> tensors; // per message
  struct Landing {
    size_t message;
    int stage, micro;
    std::string name; // in:I or dout:I
  };
  std::vector<Landing> landings;
  for (size_t k = begin; k < end; ++k) {
    const Action &a = program[k];
    int s = a.stage, j = a.microBatch;
    const Stage &stage = stages_.at(s);
    // The same data and tensor coordinate, the peer's pipe rank.
    int peer = rank_ - p_ + a.peer;
    bool gradient =
        a.type == Type::SendGradient || a.type == Type::RecvGradient;
    bool sending =
        a.type == Type::SendActivation || a.type == Type::SendGradient;
    if (sending) {
      // This stage's out:I (or din:I), by its signature.
      const auto &signature =
          gradient ? stage.backwardInput.outputs : stage.forward.outputs;
      std::map<std::string, Shared> grads;
      if (gradient) {
        grads = std::move(st.grads[{s, j}]);
        st.grads.erase({s, j});
      }
      auto &values = gradient ? grads : st.env[{s, j}];
      for (const BoundaryTensor &b : boundaryTensors(
               signature, gradient, true, gradient ? s - 1 : s + 1, j)) {
        auto it = values.find(b.info->name);
        if (it == values.end())
          return makeStatus(LOOM_INTERNAL,
                            "'" + a.str() + "' has no '" + b.info->name +
                                "' to send: its part did not run first");
        messages.push_back(
            {true, peer, b.tag, it->second.get(),
             "sending '" + std::string(b.info->name) + "' (" + a.str() + ")"});
        tensors.push_back(it->second);
      }
      continue;
    }
    // What arrives has the type of this stage's forward's in:I (an
    // activation) or out:I (the gradient of one).
    const auto &signature =
        gradient ? stage.forward.outputs : stage.forward.inputs;
    for (const BoundaryTensor &b :
         boundaryTensors(signature, gradient, false, s, j)) {
      Shared t;
      if (loom_status e = newShared(b.info->dtype, dimsOf(*b.info), t))
        return e;
      std::string name = b.info->name;
      std::string got = gradient ? "dout:" + name.substr(4) : name;
      landings.push_back({messages.size(), s, j, got});
      messages.push_back({false, peer, b.tag, t.get(),
                          "receiving '" + got + "' (" + a.str() + ")"});
      tensors.push_back(std::move(t));
    }
  }
  std::vector<WorkPtr> sends;
  std::string error = exchangeStep(*collectives_, messages, sends);
  // The sends' tensors stay alive until their handles complete (at the end
  // of the step, or abandoned with a broken communicator).
  for (size_t i = 0, n = 0; i < messages.size(); ++i)
    if (messages[i].send && n < sends.size())
      st.sends.push_back({tensors[i], sends[n++], messages[i].what});
  if (!error.empty())
    return makeStatus(LOOM_UNAVAILABLE, error);
  for (const Landing &l : landings)
    st.env[{l.stage, l.micro}][l.name] = std::move(tensors[l.message]);
  int64_t done = nowNs();
  for (size_t k = begin; k < end; ++k) {
    const Action &a = program[k];
    if (a.type == Type::RecvActivation || a.type == Type::RecvGradient)
      trace(st.step,
            a.type == Type::RecvGradient ? "recv_gradient" : "recv_activation",
            a.stage, a.microBatch, start, done);
  }
  return nullptr;
}

loom_status PipelineTrainer::step(const loom_tensor *const *batch, size_t count,
                                  loom_train_stats *stats,
                                  loom_profile *profile) {
  if (count != batchInfo_.size())
    return makeStatus(
        LOOM_INVALID_ARGUMENT,
        "the training step takes " + std::to_string(batchInfo_.size()) +
            " batch inputs, the call gave " + std::to_string(count));
  StepState st;
  st.step = loom_trainer_micro_step(update_);
  st.batch = batch;
  st.profile = profile;
  st.losses.assign(static_cast<size_t>(m_), 0.0f);
  for (size_t i = 0; i < count; ++i) {
    const loom_tensor_info &info = batchInfo_[i];
    std::string at = "batch input " + std::to_string(i) + " ('" +
                     std::string(info.name) + "')";
    const loom_tensor *t = batch[i];
    if (!t)
      return makeStatus(LOOM_INVALID_ARGUMENT, at + " is null");
    bool fits = loom_tensor_dtype(t) == info.dtype &&
                loom_tensor_rank(t) == info.rank && info.rank > 0;
    for (size_t d = 0; fits && d < info.rank; ++d)
      fits = info.dims[d] < 0 || info.dims[d] == loom_tensor_shape(t)[d];
    if (!fits)
      return makeStatus(
          LOOM_SHAPE_MISMATCH,
          at + " is " +
              artifact::typeString(loom_tensor_dtype(t), loom_tensor_shape(t),
                                   loom_tensor_rank(t)) +
              ", the model expects " +
              artifact::typeString(info.dtype, info.dims, info.rank));
    int64_t rows = loom_tensor_shape(t)[0];
    if (rows % m_ != 0 || (i > 0 && rows / m_ != st.rows))
      return makeStatus(LOOM_SHAPE_MISMATCH,
                        at + " has " + std::to_string(rows) +
                            " rows: the batch inputs need the same number of "
                            "rows, a multiple of the " +
                            std::to_string(m_) + " micro-batches");
    st.rows = rows / m_;
  }
  if (comm_ && !collectives_->error().empty())
    return makeStatus(LOOM_UNAVAILABLE,
                      "the communicator is broken by an earlier failure: " +
                          collectives_->error());

  if (loom_status s = lossWeights(st))
    return fail(st, s, "pipeline rank " + std::to_string(rank_));
  for (const auto &[name, info] : accumulators_)
    if (loom_status s = newShared(info.dtype, dimsOf(info), st.acc[name]))
      return s;
  // Computations one at a time; each run of sends and receives (a step's
  // transfers) as one group, so that crossing transfers cannot deadlock.
  const std::vector<Action> &program =
      schedule_.programs[static_cast<size_t>(p_)];
  for (size_t i = 0; i < program.size();) {
    if (program[i].isCompute()) {
      if (loom_status s = run(st, program[i]))
        return fail(st, s, where(program[i]));
      ++i;
      continue;
    }
    size_t end = i;
    while (end < program.size() && !program[end].isCompute())
      ++end;
    if (loom_status s = exchange(st, i, end))
      return fail(st, s, where(program[i]));
    i = end;
  }

  // The step's loss: the last stage's weighted sum, on every rank.
  double loss = 0;
  if (schedule_.rankOf(S_ * v_ - 1) == p_)
    for (int j = 0; j < m_; ++j)
      loss += static_cast<double>(st.weights[j]) * st.losses[j];
  if (S_ > 1) {
    std::string error = collectives_
                            ->allReduce(&loss, &loss, 1, LOOM_DTYPE_F64,
                                        ReduceOp::Sum, pipeGroup_)
                            ->wait();
    if (!error.empty())
      return fail(st, makeStatus(LOOM_UNAVAILABLE, error),
                  "pipeline rank " + std::to_string(rank_) +
                      ": the step's loss over the pipe ranks");
  }
  for (auto &p : st.sends) {
    std::string error = p.work->wait();
    if (!error.empty())
      return fail(st, makeStatus(LOOM_UNAVAILABLE, error),
                  "pipeline rank " + std::to_string(rank_) + ": " + p.what);
  }
  st.sends.clear();
  st.env.clear();
  st.slices.clear();

  // The optimizer step of this rank's parameters.
  Shared lossTensor;
  if (loom_status s = scalar(static_cast<float>(loss), lossTensor))
    return s;
  std::vector<const loom_tensor *> inputs;
  for (size_t i = 0; i < loom_trainer_batch_input_count(update_); ++i) {
    loom_tensor_info info;
    if (loom_status s = loom_trainer_batch_input_info(update_, i, &info))
      return s;
    std::string n = info.name;
    inputs.push_back(n == "loss" ? lossTensor.get()
                                 : st.acc.at(n.substr(4)).get());
  }
  int64_t start = nowNs();
  loom_train_stats inner = {};
  loom_status s =
      profile
          ? loom_trainer_step_profiled(update_, inputs.data(), inputs.size(),
                                       &inner, profile)
          : loom_trainer_step(update_, inputs.data(), inputs.size(), &inner);
  trace(st.step, "update", -1, -1, start, nowNs());
  if (trace_)
    std::fflush(trace_);
  if (s)
    return makeStatus(loom_status_get_code(s),
                      "pipeline rank " + std::to_string(rank_) +
                          "'s optimizer step: " + takeMessage(s));
  if (stats)
    *stats = inner;
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Checkpoints
//===----------------------------------------------------------------------===//

namespace {

/// ZeRO over each stage's data replicas (--zero with --pipeline-stages):
/// whether the update shards state in chunks (over the data axis).
bool hasDataShards(const artifact::Training &inner) {
  for (const artifact::TrainingState &s : inner.state())
    if (s.has_shard() && !s.shard().has_dim())
      return true;
  return false;
}

/// Checkpoint `c` of an update with ZeRO's chunks: every rank writes file
/// r = d S + p of the D S files, its chunks (chunk d of D) and, on the
/// replicas of data coordinate 0, the whole tensors; readCheckpoint merges
/// the chunks back into whole tensors.
loom_status saveWithDataShards(artifact::Checkpoint &c, loom_trainer *update,
                               const artifact::Training &inner,
                               const char *path, loom_communicator *comm, int d,
                               int p, int D, int S) {
  artifact::FileWriter segments;
  for (size_t i = 0; i < loom_trainer_state_count(update); ++i) {
    const artifact::TrainingState &s = inner.state(static_cast<int>(i));
    if (s.has_shard() && s.shard().has_dim())
      return makeStatus(LOOM_UNAVAILABLE,
                        "pipeline checkpoints hold chunks over the data "
                        "replicas, not state '" +
                            s.name() + "', which is split along a dim");
    if (!s.has_shard() && d != 0)
      continue;
    const char *name = nullptr, *kind = nullptr;
    const loom_tensor *t = nullptr;
    if (loom_status st = loom_trainer_state(update, i, &name, &kind, &t))
      return st;
    artifact::CheckpointTensor *out = c.add_state();
    out->set_name(name);
    out->set_kind(kind);
    out->set_dtype(static_cast<artifact::DType>(loom_tensor_dtype(t)));
    for (size_t k = 0; k < loom_tensor_rank(t); ++k)
      out->add_dims(loom_tensor_shape(t)[k]);
    segments.add(
        std::string_view(static_cast<const char *>(loom_tensor_data_const(t)),
                         loom_tensor_size_bytes(t)),
        *out->mutable_segment());
    if (s.has_shard()) {
      *out->mutable_shard() = s.shard();
      out->set_shard_index(d);
      out->set_shard_count(D);
    }
  }
  return runtime::writeCheckpoint(c, segments, path, comm, true, d * S + p,
                                  D * S);
}

/// Checkpoint `c` of an update with tensor-parallel pieces (Pipeline.
/// tensor_parallel > 1): the ranks of data coordinate 0 write file t S + p
/// of the T S files, their pieces (piece t of T along the state's dim, as
/// the tensor-parallel trainer writes them) and, at tensor coordinate 0,
/// the whole tensors; readCheckpoint puts the pieces back in place.
loom_status saveWithTensorPieces(artifact::Checkpoint &c, loom_trainer *update,
                                 const artifact::Training &inner,
                                 const char *path, loom_communicator *comm,
                                 int d, int t, int p, int T, int S) {
  artifact::FileWriter segments;
  for (size_t i = 0; d == 0 && i < loom_trainer_state_count(update); ++i) {
    const artifact::TrainingState &s = inner.state(static_cast<int>(i));
    bool piece = s.has_shard() && s.shard().has_dim();
    if (s.has_shard() && !piece)
      return makeStatus(LOOM_UNAVAILABLE,
                        "pipeline checkpoints with tensor parallelism hold "
                        "pieces split along a dim, not state '" +
                            s.name() + "', which is sharded in chunks");
    if (!piece && t != 0)
      continue;
    const char *name = nullptr, *kind = nullptr;
    const loom_tensor *x = nullptr;
    if (loom_status st = loom_trainer_state(update, i, &name, &kind, &x))
      return st;
    artifact::CheckpointTensor *out = c.add_state();
    out->set_name(name);
    out->set_kind(kind);
    out->set_dtype(static_cast<artifact::DType>(loom_tensor_dtype(x)));
    for (size_t k = 0; k < loom_tensor_rank(x); ++k)
      out->add_dims(loom_tensor_shape(x)[k]);
    segments.add(
        std::string_view(static_cast<const char *>(loom_tensor_data_const(x)),
                         loom_tensor_size_bytes(x)),
        *out->mutable_segment());
    if (piece) {
      *out->mutable_shard() = s.shard();
      out->set_shard_index(t);
      out->set_shard_count(T);
    }
  }
  return runtime::writeCheckpoint(c, segments, path, comm, true,
                                  d == 0 ? t * S + p : -1, T * S);
}

} // namespace

loom_status PipelineTrainer::save(const char *path) const {
  artifact::Checkpoint c;
  c.set_producer("loom runtime " + std::to_string(LOOM_RUNTIME_API_VERSION));
  c.set_model_name(runtime::sessionModelName(session_));
  c.set_micro_step(loom_trainer_micro_step(update_));
  c.set_total_steps(loom_trainer_total_steps(update_));
  c.set_accumulate(1);
  c.set_description(training_->description());
  const artifact::Training *inner = runtime::sessionTraining(updateSession_);
  if (hasDataShards(*inner))
    return saveWithDataShards(c, update_, *inner, path, comm_, d_, p_, D_, S_);
  if (T_ > 1)
    return saveWithTensorPieces(c, update_, *inner, path, comm_, d_, t_, p_, T_,
                                S_);
  artifact::FileWriter segments;
  // Whole tensors: the replicas of data coordinate 0 write theirs.
  if (d_ == 0)
    for (size_t i = 0; i < loom_trainer_state_count(update_); ++i) {
      const char *name = nullptr, *kind = nullptr;
      const loom_tensor *t = nullptr;
      if (loom_status s = loom_trainer_state(update_, i, &name, &kind, &t))
        return s;
      if (inner->state(static_cast<int>(i)).has_shard())
        return makeStatus(LOOM_UNAVAILABLE,
                          std::string("pipeline checkpoints hold whole "
                                      "tensors; state '") +
                              name + "' of the update is sharded");
      artifact::CheckpointTensor *out = c.add_state();
      out->set_name(name);
      out->set_kind(kind);
      out->set_dtype(static_cast<artifact::DType>(loom_tensor_dtype(t)));
      for (size_t d = 0; d < loom_tensor_rank(t); ++d)
        out->add_dims(loom_tensor_shape(t)[d]);
      segments.add(
          std::string_view(static_cast<const char *>(loom_tensor_data_const(t)),
                           loom_tensor_size_bytes(t)),
          *out->mutable_segment());
    }
  bool directory = S_ * D_ > 1;
  return runtime::writeCheckpoint(c, segments, path, comm_, directory,
                                  d_ == 0 ? p_ : -1, S_);
}

loom_status PipelineTrainer::load(const char *path) {
  artifact::Checkpoint c;
  std::string error;
  if (!artifact::readCheckpoint(path, c, error,
                                runtime::sessionLimits(session_)))
    return makeStatus(error.find("cannot") != std::string::npos
                          ? LOOM_NOT_FOUND
                          : LOOM_BAD_ARTIFACT,
                      error);
  // Another pipe rank's state is in it too.
  return runtime::loadTrainerState(update_, c, path, S_ > 1);
}

} // namespace loom::pipeline
