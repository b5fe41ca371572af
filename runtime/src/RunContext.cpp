//===- RunContext.cpp - the memory of one run -----------------------------===//

#include "runtime/src/RunContext.h"

#include "loom/common/CodegenAbi.h"

#include <omp.h>

#include <cstdio>
#include <cstdlib>

namespace loom::runtime {

static thread_local RunContext *currentRun = nullptr;

RunContext::~RunContext() {
  for (Slot &s : slots_)
    std::free(s.data);
  if (total_)
    *total_ -= bytes();
}

void *RunContext::slot(int64_t slot, int64_t bytes) {
  if (slot < 0 || bytes < 0)
    return nullptr;
  if (static_cast<size_t>(slot) >= slots_.size())
    slots_.resize(static_cast<size_t>(slot) + 1);
  Slot &s = slots_[static_cast<size_t>(slot)];
  size_t need = (static_cast<size_t>(bytes) + 63) / 64 * 64;
  if (need == 0)
    need = 64;
  if (s.capacity < need) {
    // The slot's previous buffer is dead (live ranges in a slot are
    // disjoint), so its contents need not move.
    std::free(s.data);
    size_t before = s.capacity;
    s.data = std::aligned_alloc(64, need);
    s.capacity = s.data ? need : 0;
    if (total_) {
      *total_ += s.capacity;
      *total_ -= before;
    }
  }
  return s.data;
}

void RunContext::fail(const char *message) {
  if (failure_.empty())
    failure_ = message && *message ? message : "a run-time check failed";
}

std::string RunContext::takeFailure() {
  std::string f;
  f.swap(failure_);
  return f;
}

bool RunContext::call(void (*entry)(void **), void **args) {
  // setjmp/longjmp skip the frames in between without running their
  // destructors, so none may have one (C++ makes that undefined behaviour
  // otherwise). Between here and the jump in outOfMemory lie only the
  // generated code (C: no destructors), loom_rt_parallel_for's serial path
  // and loom_rt_slot (trivially destructible locals), and outOfMemory
  // (which formats into a fixed buffer). `active` lives in this frame,
  // which the jump returns to, and is destroyed as usual.
  std::jmp_buf recover;
  ActiveRun active(this);
  recoverLevel_ = omp_get_level();
  if (setjmp(recover)) {
    recover_ = nullptr;
    return false;
  }
  recover_ = &recover;
  entry(args);
  recover_ = nullptr;
  return true;
}

void RunContext::outOfMemory(int64_t slot, int64_t bytes) {
  // No allocation here: there may be no memory left, and a std::string
  // would be a live object with a destructor at the jump.
  if (!outOfMemory_[0])
    std::snprintf(outOfMemory_, sizeof(outOfMemory_),
                  "out of memory: the run's buffer %lld of %lld bytes",
                  static_cast<long long>(slot), static_cast<long long>(bytes));
  // Never out of an OpenMP region that the code opened (the team's other
  // threads would wait for this one forever); a region around the run
  // itself (a caller's) is left alone.
  if (recover_ && omp_get_level() == recoverLevel_)
    std::longjmp(*recover_, 1);
}

std::string RunContext::takeOutOfMemory() {
  std::string m = outOfMemory_;
  outOfMemory_[0] = '\0';
  return m;
}

size_t RunContext::bytes() const {
  size_t total = 0;
  for (const Slot &s : slots_)
    total += s.capacity;
  return total;
}

RunContext &RunContext::current() {
  static thread_local RunContext fallback;
  return currentRun ? *currentRun : fallback;
}

ActiveRun::ActiveRun(RunContext *context) : previous_(currentRun) {
  currentRun = context;
}
ActiveRun::~ActiveRun() { currentRun = previous_; }

std::unique_ptr<RunContext> RunContextPool::acquire() {
  std::unique_lock<std::mutex> lock(mutex_);
  available_.wait(lock, [&] {
    return !free_.empty() || limit_ == 0 || contexts_ < limit_;
  });
  if (free_.empty()) {
    ++contexts_;
    return std::make_unique<RunContext>(&bytes_);
  }
  auto context = std::move(free_.back());
  free_.pop_back();
  return context;
}

void RunContextPool::release(std::unique_ptr<RunContext> context) {
  std::unique_ptr<RunContext> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (limit_ && contexts_ > limit_) {
      --contexts_;
      dropped = std::move(context);
    } else {
      free_.push_back(std::move(context));
    }
  }
  available_.notify_one();
}

void RunContextPool::setLimit(size_t limit) {
  std::vector<std::unique_ptr<RunContext>> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    limit_ = limit;
    while (limit_ && contexts_ > limit_ && !free_.empty()) {
      dropped.push_back(std::move(free_.back()));
      free_.pop_back();
      --contexts_;
    }
  }
  available_.notify_all();
}

RunContextPool::Stats RunContextPool::stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  return {bytes_.load(), contexts_, contexts_ - free_.size(), limit_};
}

} // namespace loom::runtime

namespace {
using loom::runtime::RunContext;

/// MLIR's descriptor of a memref<?xi8>.
struct Bytes1D {
  void *allocated, *aligned;
  int64_t offset, size, stride;
};
} // namespace

extern "C" __attribute__((visibility("default"))) void
LOOM_ABI_CIFACE(LOOM_ABI_RT_SLOT)(Bytes1D *result, int64_t slot,
                                  int64_t bytes) {
  RunContext &context = RunContext::current();
  void *p = context.slot(slot, bytes);
  if (!p) {
    // Out of memory: back to the run (RunContext::call), whose status says
    // so. The code asks for slots only on the run's thread, outside its
    // parallel loops (compiler/codegen/cpu/ExecToCpu.cpp), so there is
    // always a way back from the runtime's runs; code called outside a run
    // has none, and stops rather than write through a null pointer. This
    // frame is jumped over: it holds nothing with a destructor.
    context.outOfMemory(slot, bytes);
    std::abort();
  }
  *result = {p, p, 0, bytes, 1};
}

/// Called by the generated code when a run-time check fails (a shape or
/// axis given as an input that the model cannot take): the run's status
/// carries `message`. The code goes on with safe sizes and returns.
extern "C" __attribute__((visibility("default"))) void
LOOM_ABI_RT_FAIL(const char *message) {
  RunContext::current().fail(message);
}
