//===- Executor.h - what runs a session's code ------------------*- C++ -*-===//
//
// A session holds the artifact's signature, mesh and training description
// and one executor, chosen at load by the artifact and the instance's
// device: the CPU code (cpu/CpuExecutor.h), the CUDA program
// (cuda/CudaExecutor.h) or, for a pipeline artifact, the description its
// trainer reads (pipeline/PipelineExecutor.h), which runs nothing itself.
// loom_session_run checks the inputs against the signature, takes the
// communicator's lock, and hands the run to the executor.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_EXECUTOR_H
#define LOOM_RUNTIME_EXECUTOR_H

#include "loom/runtime.h"
#include "runtime/src/Tensor.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace loom::artifact {
class Pipeline;
} // namespace loom::artifact

namespace loom::runtime {

namespace collectives {
class Communicator;
} // namespace collectives

/// Training state an executor keeps on its device between runs (the CUDA
/// executor; RunRequest::state): a trainer's parameters and optimizer
/// state stay on the device, and only the batch goes in and the scalars
/// come out.
struct DeviceState {
  /// (input index, output index) of each state tensor: once adopted
  /// (Executor::adoptState), a run's output is the next run's input.
  std::vector<std::pair<size_t, size_t>> pairs;
  /// Whether the device holds the state inputs (an earlier run's); if
  /// not, the run uploads them from the host tensors it is given.
  bool onDevice = false;
};

/// One run as loom_session_run hands it to the executor.
struct RunRequest {
  /// The inputs, one per signature input, checked against it (dtype, rank,
  /// static dims; named dims agree).
  const loom_tensor *const *inputs;
  size_t numInputs;
  /// The signature's outputs; the run fills `outputs[i]` with a new tensor
  /// for each, on success only.
  const std::vector<Signature> &outputSignature;
  loom_tensor **outputs;
  /// Receives the run's events; may be null.
  loom_profile *profile;
  /// The mesh the code was compiled for (empty: one process) and the
  /// session's communicator (null without one), locked for this run.
  const std::vector<int64_t> &meshShape;
  collectives::Communicator *communicator;
  /// The instance's thread count (0: OpenMP's default).
  int32_t numThreads;
  /// Set by a trainer whose executor claimed its state (claimState): the
  /// paired outputs stay on the device (`outputs[i]` is left null).
  const DeviceState *state = nullptr;
};

class Executor {
public:
  virtual ~Executor();

  /// The device loom_session_device reports.
  virtual loom_device device() const = 0;
  /// loom_session_device_description: "cpu", "cuda:0 NVIDIA ...".
  virtual const std::string &description() const = 0;
  /// One run; thread-safe (runs in flight do not share memory).
  virtual loom_status run(const RunRequest &request) = 0;

  /// loom_session_memory_stats. The default: nothing held, and the last
  /// limit set.
  virtual loom_session_memory memory() const;
  /// loom_session_set_max_concurrent_runs (0: no limit). The default
  /// records the limit only.
  virtual void setMaxConcurrentRuns(size_t limit);

  /// Device-resident training state (DeviceState). claimState: whether
  /// runs can keep `state` on the device, for one owner at a time (false:
  /// not supported here, or claimed already); releaseState gives it up.
  /// After a run with the state, adoptState makes its state outputs the
  /// next run's state inputs; readState copies one state input, as the
  /// device holds it, to the host. The defaults: nothing kept.
  virtual bool claimState(const DeviceState &state);
  virtual void releaseState() {}
  virtual loom_status adoptState();
  virtual loom_status readState(size_t input, void *out, size_t bytes);

  /// The pipeline description of a pipeline artifact's session; null for
  /// the executors that run code.
  virtual const artifact::Pipeline *pipeline() const { return nullptr; }

private:
  size_t limit_ = 0;
};

} // namespace loom::runtime

#endif // LOOM_RUNTIME_EXECUTOR_H
