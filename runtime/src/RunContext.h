//===- RunContext.h - the memory of one run -------------------------------===//
//
// The compiler plans each model's intermediate buffers into slots (slot 0:
// an arena with static offsets; the others: dynamic-size buffers that
// share a slot because their live ranges are disjoint). A run context holds
// one run's slots; the code asks for them with loom_rt_slot(slot, bytes),
// which grows a slot when a larger size arrives and otherwise hands back
// the same memory. A session keeps its contexts and reuses them across
// runs, one per run in flight: after the first run of a size nothing is
// allocated, and memory is bounded by the plan (at the largest shapes run)
// times the runs in flight, which a session may cap
// (loom_session_set_max_concurrent_runs): runs past the cap wait for a
// context.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_RUNCONTEXT_H
#define LOOM_RUNTIME_RUNCONTEXT_H

#include "runtime/src/collectives/RunCollectives.h"

#include <atomic>
#include <condition_variable>
#include <csetjmp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace loom::runtime {

class RunContext {
public:
  /// `total`, when given, follows the bytes of this context's slots (the
  /// pool's sum over its contexts); it must outlive the context.
  explicit RunContext(std::atomic<size_t> *total = nullptr) : total_(total) {}
  ~RunContext();
  RunContext(const RunContext &) = delete;
  RunContext &operator=(const RunContext &) = delete;
  /// At least `bytes` bytes of slot `slot`, 64-byte aligned; null when out
  /// of memory.
  void *slot(int64_t slot, int64_t bytes);
  size_t bytes() const;
  /// Records a failed run-time check of the code (the first one of a run
  /// wins); see loom_rt_fail.
  void fail(const char *message);
  /// The recorded failure, or empty; clears it.
  std::string takeFailure();

  /// Runs the generated entry `entry(args)` with this context as the
  /// calling thread's current run. False when the code ran out of memory
  /// (a slot could not be allocated): the code was left where it asked
  /// for the slot, outOfMemory() says which, and what the code had
  /// allocated itself before that is lost (leaked). See loom_rt_slot.
  bool call(void (*entry)(void **), void **args);
  /// The failed allocation of the last call (empty when none); clears it.
  std::string takeOutOfMemory();
  /// Called by loom_rt_slot when slot `slot` cannot grow to `bytes`: leaves
  /// the code for call()'s return (longjmp) when the code runs inside
  /// call() on this thread, outside any parallel region the code opened;
  /// otherwise returns (the caller has no way out). Allocates nothing.
  void outOfMemory(int64_t slot, int64_t bytes);
  /// This run's collectives (the ABI of docs/distributed.md).
  collectives::RunCollectives &collectives() { return collectives_; }

  /// The calling thread's run context. Outside a run (the code called by
  /// something else than the runtime) there is none: a thread-local one
  /// keeps the code working (its collectives are copies).
  static RunContext &current();

private:
  struct Slot {
    void *data = nullptr;
    size_t capacity = 0;
  };
  std::vector<Slot> slots_;
  std::atomic<size_t> *total_;
  std::string failure_;
  /// The failed allocation's message (empty: none), formatted without
  /// allocating.
  char outOfMemory_[96] = {};
  /// Where outOfMemory leaves the code for (set while call() runs), and
  /// the OpenMP nesting level call() ran at.
  std::jmp_buf *recover_ = nullptr;
  int recoverLevel_ = 0;
  collectives::RunCollectives collectives_;
};

/// Makes `context` the calling thread's current run context while alive.
class ActiveRun {
public:
  explicit ActiveRun(RunContext *context);
  ~ActiveRun();

private:
  RunContext *previous_;
};

/// A session's contexts, reused across runs: at most `limit` exist at
/// once (0: no limit); acquire waits for one while all are in use.
class RunContextPool {
public:
  std::unique_ptr<RunContext> acquire();
  void release(std::unique_ptr<RunContext> context);
  /// Caps the contexts; a lower cap than the contexts in use takes effect
  /// as runs finish (their contexts are freed instead of kept).
  void setLimit(size_t limit);

  struct Stats {
    size_t bytes;    ///< the slots of every context, free or in use
    size_t contexts; ///< contexts that exist
    size_t inUse;    ///< contexts held by runs in flight
    size_t limit;
  };
  Stats stats();

private:
  std::mutex mutex_;
  std::condition_variable available_;
  std::vector<std::unique_ptr<RunContext>> free_;
  size_t contexts_ = 0, limit_ = 0;
  std::atomic<size_t> bytes_{0};
};

} // namespace loom::runtime

#endif // LOOM_RUNTIME_RUNCONTEXT_H
