//===- StoreCommunicator.h - the skeleton of Gloo's and NCCL's --*- C++ -*-===//
//
// What the two backends of Communicator share. Both are a job of `size`
// ranks that meet through the TCP store rank 0 serves (TcpStore.h), run
// the operations issued to them in issue order on one worker thread, and
// break at their first failure. This base holds that skeleton: the job's
// shape and timeout, the store (and rank 0's server), the first failure,
// and the worker's thread, lock and wake-up. Each backend keeps its own
// queue of tasks (what a task carries differs) and its own shutdown (Gloo
// says goodbye to its peers before it closes its pairs; NCCL destroys or
// aborts its communicators).
//
// The header stays free of Gloo: TcpStore.h needs exceptions, which only
// the backends' library turns on.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_COLLECTIVES_STORECOMMUNICATOR_H
#define LOOM_RUNTIME_COLLECTIVES_STORECOMMUNICATOR_H

#include "runtime/src/collectives/Communicator.h"

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace loom::runtime::collectives {

class StoreServer;
class TcpStore;

/// The checks of every backend's create function: false with `error`
/// ("rank 3 is not below the world size 2", "port 70000 is not a TCP
/// port", "the timeout must be positive").
bool checkJob(int rank, int size, int port, std::chrono::milliseconds timeout,
              std::string &error);

class StoreCommunicator : public Communicator {
public:
  ~StoreCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string error() const override;
  std::chrono::milliseconds timeout() const { return timeout_; }

protected:
  StoreCommunicator(int rank, int size, std::chrono::milliseconds timeout);

  /// "rank 1 of 4: ", the prefix of the errors of a creation.
  std::string where() const;
  /// The rendezvous: rank 0 serves the store on `port` (0: any free port,
  /// for a rank alone), every rank connects to `addr`:`port` and waits
  /// until all have arrived. False with `error` (prefixed by where())
  /// naming the ranks that did not arrive within the timeout, or what
  /// else failed.
  bool meet(const std::string &addr, int port, std::string &error);

  /// Records `message` as the failure that breaks the communicator, unless
  /// one is recorded already; whether it was.
  bool recordError(const std::string &message);

  Group members(const Group &group) const { return groupMembers(group, size_); }
  std::string describe(const char *what, size_t count, loom_dtype dtype,
                       const Group &group) const {
    return describeOperation(what, count, dtype, group, size_);
  }

  /// Starts the worker thread, which runs `loop` (a backend's loop over its
  /// queue, waiting on queueCv_ under queueMutex_ until stop_).
  void startWorker(std::function<void()> loop);
  /// Sets stop_, wakes the worker and waits for it to end.
  void stopWorker();
  /// Whether the calling thread is the worker.
  bool onWorker() const {
    return std::this_thread::get_id() == worker_.get_id();
  }

  const int rank_, size_;
  const std::chrono::milliseconds timeout_;
  std::unique_ptr<StoreServer> server_;
  std::unique_ptr<TcpStore> store_;

  /// The backend's queue of tasks is guarded by queueMutex_; the worker
  /// waits on queueCv_ for a task or stop_.
  std::mutex queueMutex_;
  std::condition_variable queueCv_;
  bool stop_ = false;

private:
  std::thread worker_;
  mutable std::mutex errorMutex_;
  std::string error_;
};

} // namespace loom::runtime::collectives

#endif // LOOM_RUNTIME_COLLECTIVES_STORECOMMUNICATOR_H
