//===- Profile.cpp - per-kernel timing of runs ----------------------------===//

#include "runtime/src/Profile.h"

#include "loom/common/CodegenAbi.h"

#include <chrono>

namespace loom::runtime {

static thread_local Recorder *active = nullptr;

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Recorder::Recorder() : previous_(active) { active = this; }
Recorder::~Recorder() { active = previous_; }

void Recorder::begin(int64_t kernel) {
  open_ = kernel;
  openStart_ = nowNs();
}

void Recorder::end(int64_t kernel) {
  int64_t t = nowNs();
  if (kernel == open_)
    events_.push_back({kernel, openStart_, t});
  open_ = -1;
}

} // namespace loom::runtime

extern "C" {
// Called by the generated code around each kernel.
__attribute__((visibility("default"))) void
LOOM_ABI_RT_PROFILE_BEGIN(int64_t id) {
  if (loom::runtime::active)
    loom::runtime::active->begin(id);
}
__attribute__((visibility("default"))) void
LOOM_ABI_RT_PROFILE_END(int64_t id) {
  if (loom::runtime::active)
    loom::runtime::active->end(id);
}
}
