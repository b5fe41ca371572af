//===- Model.h - one served model: its session and its batcher -*- C++ -*-===//
//
// A model's session runs requests from any thread (the runtime's sessions
// are thread-safe; the session's cap bounds its scratch memory). When every
// input and output has a dynamic first dim (the batch), concurrent requests
// are batched: the first request to arrive opens a batch and waits up to
// the batch's wait time for others to join, up to the most rows, and
// longer while the model's run slots (its cap on concurrent runs) are all
// busy; it then runs them as one (inputs concatenated along dim 0), and hands
// each request its rows of the outputs. A request that does not fit the open
// batch (other trailing dims, too many rows) runs alone or opens the next
// batch. A batch the model rejects is run again request by request, so one
// bad request fails alone.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_LOOMSERVE_MODEL_H
#define LOOM_TOOLS_LOOMSERVE_MODEL_H

#include "tools/loom-serve/Protocol.h"

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace loom::serve {

struct BatchOptions {
  int64_t maxRows = 8; ///< 1: no batching
  std::chrono::microseconds maxWait{2000};
};

class Model {
public:
  /// Loads `path` as model `name`; null with `error` set when the file is
  /// not an inference artifact this process can run.
  static std::unique_ptr<Model>
  load(loom_instance *instance, const std::string &name,
       const std::string &path, const BatchOptions &batching,
       size_t maxConcurrentRuns, std::string &error);
  ~Model();

  const ModelSpec &spec() const { return spec_; }
  /// Whether requests are batched (see the file comment).
  bool batchable() const { return batchable_; }

  /// Runs `request`; on success fills `outputs` (one per model output).
  /// `onRun` is told the number of requests of each run that served it
  /// (the batch size).
  bool infer(const InferRequest &request, std::vector<TensorPtr> &outputs,
             HttpError &error, const std::function<void(size_t)> &onRun);

  loom_session_memory memory() const;

private:
  struct Pending;
  struct Batch;
  Model() = default;
  bool runAlone(const InferRequest &request, std::vector<TensorPtr> &outputs,
                HttpError &error);
  void runBatch(Batch &batch, const std::function<void(size_t)> &onRun);
  static bool fits(const Batch &batch, const InferRequest &request);

  loom_session *session_ = nullptr;
  ModelSpec spec_;
  bool batchable_ = false;
  BatchOptions batching_;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::shared_ptr<Batch> open_;
  /// Batches that may run now (the session's cap on concurrent runs).
  size_t freeSlots_ = 0;
};

} // namespace loom::serve

#endif // LOOM_TOOLS_LOOMSERVE_MODEL_H
