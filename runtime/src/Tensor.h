//===- Tensor.h - the C API's tensors, signatures and profiles --*- C++ -*-===//
//
// The definitions behind the opaque loom_tensor and loom_profile handles,
// shared by the C API (Runtime.cpp) and the executors (Executor.h), which
// make their outputs as tensors and record their runs into profiles.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_TENSOR_H
#define LOOM_RUNTIME_TENSOR_H

#include "loom/runtime.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace loom::runtime {

/// 64-byte aligned memory freed with std::free.
struct AlignedFree {
  void operator()(void *p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<void, AlignedFree>;

/// `bytes` (at least 1) rounded up to 64, 64-byte aligned; null when out
/// of memory or past the largest tensor the runtime makes.
AlignedBuffer alignedAlloc(size_t bytes);

/// An input's or output's signature: dims < 0 are dynamic, named by
/// `dimNames` when the model names them.
struct Signature {
  std::string name;
  loom_dtype dtype;
  std::vector<int64_t> dims;
  std::vector<std::string> dimNames;
  std::vector<const char *> dimNamePtrs;
};

/// A small stable id per thread for a profile's rows.
uint64_t threadRow();

} // namespace loom::runtime

struct loom_tensor_s {
  loom_dtype dtype;
  std::vector<int64_t> shape;
  size_t count;
  loom::runtime::AlignedBuffer owned; // null when wrapping caller memory
  void *data;
};

struct loom_profile_s {
  struct Event {
    std::string name, category;
    int64_t startNs, endNs;
    uint64_t thread;
  };
  std::mutex mutex;
  std::vector<Event> events;
};

namespace loom::runtime {

/// A tensor header for `dtype` and `shape`, checked (known dtype, no
/// negative dim, at most the largest tensor); no data yet. `api` names the
/// caller in messages.
loom_status newTensor(const char *api, loom_dtype dtype, size_t rank,
                      const int64_t *shape, std::unique_ptr<loom_tensor_s> &t);

} // namespace loom::runtime

#endif // LOOM_RUNTIME_TENSOR_H
