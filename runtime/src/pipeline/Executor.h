//===- Executor.h - one rank's share of a pipeline-parallel step -*- C++
//-*-===//
//
// The trainer of a pipeline artifact (Artifact.pipeline, docs/pipeline.md):
// on world rank r = d * S + p (mesh [D, S] over ("data", "pipe"); with T
// tensor ranks per stage r = (d T + t) S + p on [D, T, S]) it holds
// the stages s with s % S == p, runs its program of the verified schedule
// (Schedule.h) over the step's m micro-batches -- the stages' forward (F),
// input-gradient (I) and weight-gradient (W) parts, each a session of its
// own, fed and read by their signature names -- and sends and receives
// activations and gradients to the neighbouring stages' ranks: each run of
// consecutive send and receive actions is one step's transfers, issued as
// one group (Communicator::sendRecvGroup) and matched on both sides by
// the signatures' indices (boundaryTensors below). The summed
// gradients ("acc:N") and the step's loss then go to this rank's update
// artifact, an ordinary training artifact run by an inner loom_trainer,
// which owns the state (parameters, optimizer slots, step counter).
//
// loom_trainer_* on a pipeline session go here (Trainer.cpp dispatches).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_PIPELINE_EXECUTOR_H
#define LOOM_RUNTIME_PIPELINE_EXECUTOR_H

#include "loom/common/Artifact.h"
#include "loom/common/Schedule.h"
#include "loom/runtime.h"

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace loom::runtime::collectives {
class Communicator;
class Work;
/// World ranks, sorted (Communicator.h).
using Group = std::vector<int>;
} // namespace loom::runtime::collectives

namespace loom::pipeline {

//===----------------------------------------------------------------------===//
// What crosses a stage boundary, and how one step's transfers are issued
//===----------------------------------------------------------------------===//

/// One tensor of a send or receive action, as this side's signature names
/// it.
struct BoundaryTensor {
  /// I of "out:I", "in:I", "din:I": the sender's out:I (or din:I) is the
  /// receiver's in:I (or the gradient of its out:I).
  int index = -1;
  /// Unique within a step: kind | receiving stage | micro-batch | index.
  uint32_t tag = 0;
  const loom_tensor_info *info = nullptr;
};

/// The tensors one send or receive action moves, in the order both sides
/// derive from their signatures: by index I, never by name ("out:10"
/// sorts before "out:2"), each with its tag. `signature`: a sender's
/// forward outputs (activations, "out:") or input-gradient outputs
/// (gradients, "din:"); a receiver's forward inputs ("in:") or forward
/// outputs (the gradients of its float "out:"). Names whose index is not a
/// number are left out (the executor refuses them at creation).
std::vector<BoundaryTensor>
boundaryTensors(const std::vector<loom_tensor_info> &signature, bool gradient,
                bool sending, int receivingStage, int microBatch);

/// The steps of a rank's program where it talks: the maximal runs
/// [begin, end) of send and receive actions. Each is issued as one group.
std::vector<std::pair<size_t, size_t>>
communicationSteps(const std::vector<Action> &program);

/// Whether `s` runs under NCCL's rules for point-to-point transfers: a
/// pair's messages meet in issue order (no tags), so each rank must send
/// to a peer in the order the peer receives; and each communication step
/// is one blocking group whose sends complete only once their receives
/// are posted (a group's kernel ends when all its transfers have), so the
/// steps must never wait on each other in a cycle. verify() checks the
/// schedule with tagged sends that are only posted (Gloo's); this is the
/// stricter model. False with `error` naming the pair sent out of order,
/// or each stuck rank and the step it waits in.
bool groupedStepsRunOnRendezvous(const Schedule &s, std::string &error);

/// One tensor of a step's exchange.
struct StepMessage {
  bool send = false;
  /// The other world rank.
  int peer = -1;
  uint32_t tag = 0;
  /// Sent from, or received into (its bytes move as they are).
  loom_tensor *tensor = nullptr;
  /// For errors: "receiving 'in:3' (recv activation 0@1 <- rank 0)".
  std::string what;
};

/// Issues one step's messages as one group (Communicator::sendRecvGroup)
/// and waits for its receives; the sends' handles go to `sends`, in
/// order (each completes once its receiver has the data; the tensor must
/// stay alive until then). "" or the first failure, naming the message.
std::string
exchangeStep(runtime::collectives::Communicator &comm,
             const std::vector<StepMessage> &messages,
             std::vector<std::shared_ptr<runtime::collectives::Work>> &sends);

class PipelineTrainer {
public:
  /// The trainer of pipeline session `session` on this rank (its attached
  /// communicator's, or the only one): checks the rank layout, makes and
  /// verifies the schedule, loads this rank's stage parts and its update
  /// artifact with the session's instance. An error status says what and
  /// where.
  static loom_status create(loom_session *session,
                            std::unique_ptr<PipelineTrainer> &out);
  ~PipelineTrainer();

  /// The inner trainer of this rank's update artifact: the state.
  loom_trainer *update() const { return update_; }
  const artifact::Training &training() const { return *training_; }
  /// The outer session's inputs: one data replica's global batch.
  size_t batchInputCount() const { return batchInfo_.size(); }
  loom_status batchInputInfo(size_t index, loom_tensor_info *out) const;

  /// One optimizer step over the m micro-batches of `batch` (dim 0 of each
  /// input is m * the micro-batch size).
  loom_status step(const loom_tensor *const *batch, size_t count,
                   loom_train_stats *stats, loom_profile *profile);
  /// A checkpoint: one file with one process, else a directory with one
  /// file per pipe rank (written by the ranks of data coordinate 0, whole
  /// tensors) and rank 0's manifest.
  loom_status save(const char *path) const;
  /// Any checkpoint of the model (pipeline or not, merged): this rank
  /// takes its state by name.
  loom_status load(const char *path);

  struct Part {
    loom_session *session = nullptr;
    std::vector<loom_tensor_info> inputs, outputs;
  };
  struct Stage {
    Part forward, backwardInput, backwardWeight;
  };

private:
  struct StepState;
  PipelineTrainer() = default;

  loom_status run(StepState &st, const Action &a);
  /// The send and receive actions [begin, end) of this rank's program:
  /// one step's transfers, as one group.
  loom_status exchange(StepState &st, size_t begin, size_t end);
  loom_status runPart(StepState &st, const Part &part, const char *name,
                      int stage, int micro);
  loom_status lossWeights(StepState &st);
  std::string where(const Action &a) const;
  /// A failure during a step: `status`, prefixed; the communicator is
  /// given up (so the other ranks do not wait for this one).
  loom_status fail(StepState &st, loom_status status,
                   const std::string &prefix);
  void trace(int64_t step, const char *action, int stage, int micro,
             int64_t start, int64_t end);

  loom_session *session_ = nullptr;
  const artifact::Training *training_ = nullptr;
  const artifact::Pipeline *pipeline_ = nullptr;
  loom_communicator *comm_ = nullptr;
  runtime::collectives::Communicator *collectives_ = nullptr;
  int S_ = 1, v_ = 1, m_ = 1, D_ = 1, rank_ = 0, d_ = 0, p_ = 0;
  /// Tensor-parallel ranks per stage and this rank's coordinate among
  /// them (Pipeline.tensor_parallel; 1 and 0 without).
  int T_ = 1, t_ = 0;
  /// The ranks of this one's data group (same pipe rank) and pipe group
  /// (same replica), from the mesh.
  runtime::collectives::Group dataGroup_, pipeGroup_;
  Schedule schedule_;
  std::map<int, Stage> stages_; // the stages this rank holds
  std::vector<loom_tensor_info> batchInfo_;
  int labels_ = -1; // the labels' batch input (cross_entropy)
  /// acc:N of this rank's W parts: name -> signature.
  std::map<std::string, loom_tensor_info> accumulators_;
  loom_session *updateSession_ = nullptr;
  loom_trainer *update_ = nullptr;
  std::vector<loom_session *> owned_;
  std::FILE *trace_ = nullptr;
};

} // namespace loom::pipeline

#endif // LOOM_RUNTIME_PIPELINE_EXECUTOR_H
