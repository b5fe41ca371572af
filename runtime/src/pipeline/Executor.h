//===- Executor.h - one rank's share of a pipeline-parallel step -*- C++
//-*-===//
//
// The trainer of a pipeline artifact (Artifact.pipeline, docs/pipeline.md):
// on world rank r = d * S + p (mesh [D, S] over ("data", "pipe")) it holds
// the stages s with s % S == p, runs its program of the verified schedule
// (Schedule.h) over the step's m micro-batches -- the stages' forward (F),
// input-gradient (I) and weight-gradient (W) parts, each a session of its
// own, fed and read by their signature names -- and sends and receives
// activations and gradients to the neighbouring stages' ranks. The summed
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
/// World ranks, sorted (Communicator.h).
using Group = std::vector<int>;
} // namespace loom::runtime::collectives

namespace loom::pipeline {

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
