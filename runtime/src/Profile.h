//===- Profile.h - per-kernel timing of runs ------------------------------===//
//
// The generated code calls loom_rt_profile_begin/end(id) around every
// kernel. They record into the calling thread's active Recorder, if any;
// otherwise they return at once.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_PROFILE_H
#define LOOM_RUNTIME_PROFILE_H

#include <cstdint>
#include <string>
#include <vector>

namespace loom::runtime {

struct KernelEvent {
  int64_t kernel;
  int64_t startNs, endNs;
};

/// Collects the calling thread's kernel events while it is installed.
class Recorder {
public:
  Recorder();
  ~Recorder();
  Recorder(const Recorder &) = delete;
  Recorder &operator=(const Recorder &) = delete;

  void begin(int64_t kernel);
  void end(int64_t kernel);
  const std::vector<KernelEvent> &events() const { return events_; }

private:
  Recorder *previous_;
  int64_t open_ = -1, openStart_ = 0;
  std::vector<KernelEvent> events_;
};

/// Nanoseconds on a monotonic clock.
int64_t nowNs();

} // namespace loom::runtime

#endif // LOOM_RUNTIME_PROFILE_H
