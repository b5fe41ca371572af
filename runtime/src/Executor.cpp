//===- Executor.cpp - what runs a session's code --------------------------===//

#include "runtime/src/Executor.h"

namespace loom::runtime {

Executor::~Executor() = default;

loom_session_memory Executor::memory() const { return {0, 0, 0, 0, limit_}; }

void Executor::setMaxConcurrentRuns(size_t limit) { limit_ = limit; }

} // namespace loom::runtime
