//===- CommunicatorApi.h - the C API's communicator handle ------*- C++ -*-===//

#ifndef LOOM_RUNTIME_COLLECTIVES_COMMUNICATORAPI_H
#define LOOM_RUNTIME_COLLECTIVES_COMMUNICATORAPI_H

#include "loom/runtime.h"
#include "runtime/src/collectives/Communicator.h"

#include <memory>
#include <mutex>

struct loom_communicator_s {
  std::unique_ptr<loom::runtime::collectives::Communicator> comm;
  int32_t localRank = -1;
  /// Held by a run from start to end: one step at a time.
  std::mutex runMutex;
};

#endif // LOOM_RUNTIME_COLLECTIVES_COMMUNICATORAPI_H
