//===- Executor.cpp - what runs a session's code --------------------------===//

#include "runtime/src/Executor.h"

#include "runtime/src/Session.h"

namespace loom::runtime {

Executor::~Executor() = default;

loom_session_memory Executor::memory() const { return {0, 0, 0, 0, limit_}; }

void Executor::setMaxConcurrentRuns(size_t limit) { limit_ = limit; }

bool Executor::claimState(const DeviceState &) { return false; }

loom_status Executor::adoptState() {
  return makeStatus(LOOM_INTERNAL, "this executor keeps no state on a device");
}

loom_status Executor::readState(size_t, void *, size_t) {
  return makeStatus(LOOM_INTERNAL, "this executor keeps no state on a device");
}

} // namespace loom::runtime
