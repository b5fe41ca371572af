//===- CpuExecutor.cpp - runs an artifact's CPU code ----------------------===//

#include "runtime/src/cpu/CpuExecutor.h"

#include "runtime/src/Profile.h"
#include "runtime/src/Session.h"
#include "runtime/src/ThreadPool.h"
#include "runtime/src/cpu/Kernels.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <mutex>

namespace loom::runtime {

namespace {

/// A memref descriptor of rank `rank` laid out as the entry expects:
/// allocated, aligned, offset, sizes[rank], strides[rank].
std::vector<int64_t> descriptor(const void *data, const int64_t *shape,
                                size_t rank) {
  std::vector<int64_t> d(3 + 2 * rank);
  d[0] = d[1] = static_cast<int64_t>(reinterpret_cast<intptr_t>(data));
  d[2] = 0;
  int64_t stride = 1;
  for (size_t i = rank; i-- > 0;) {
    d[3 + i] = shape[i];
    d[3 + rank + i] = stride;
    stride *= shape[i];
  }
  return d;
}

/// The instance's thread count for the generated loops' parallel chunks
/// while alive. OpenMP's thread count is per calling thread: set it for
/// this run's GEMMs and convolutions too.
struct ThreadsScope {
  explicit ThreadsScope(int n) {
    setCurrentThreads(n);
    if (n > 0)
      omp_set_num_threads(n);
  }
  ~ThreadsScope() { setCurrentThreads(0); }
};

} // namespace

// Kept packs are keyed by address: a later artifact's weights may come
// to the same one.
CpuExecutor::~CpuExecutor() {
  cpu::forgetPackedFilters();
  cpu::forgetPackedIntegerConvFilters();
}

loom_status CpuExecutor::load(const artifact::Artifact &a,
                              const artifact::DataSection &section,
                              std::unique_ptr<CpuExecutor> &out) {
  std::unique_ptr<CpuExecutor> e(new CpuExecutor());
  e->kernels_.assign(a.kernels().begin(), a.kernels().end());
  for (const auto &w : a.weights()) {
    std::string_view bytes = artifact::weightData(section, w);
    loom_tensor_s t;
    t.dtype = static_cast<loom_dtype>(w.dtype());
    t.shape.assign(w.dims().begin(), w.dims().end());
    t.count = bytes.size() / artifact::dtypeSize(w.dtype());
    if (w.has_segment()) {
      // Read only: the entry's weight arguments are not writable
      // (bufferization.writable = false), so the pages stay shared.
      t.data = const_cast<char *>(bytes.data());
    } else {
      t.owned = alignedAlloc(bytes.size());
      if (!t.owned)
        return makeStatus(LOOM_OUT_OF_MEMORY,
                          "out of memory for weight '" + w.name() + "' (" +
                              std::to_string(bytes.size()) + " bytes)");
      t.data = t.owned.get();
      std::memcpy(t.data, bytes.data(), bytes.size());
    }
    e->weightBytes_ += bytes.size();
    e->weights_.push_back(std::move(t));
  }
  const auto &cpu = a.cpu();
  std::string error;
  e->code_ = CpuModule::load(cpu.shared_object(), cpu.entry_symbol(),
                             cpu.target_triple(), cpu.features(), error);
  if (!e->code_)
    return makeStatus(LOOM_UNAVAILABLE, error);
  out = std::move(e);
  return nullptr;
}

loom_session_memory CpuExecutor::memory() const {
  RunContextPool::Stats stats = contexts_.stats();
  return {weightBytes_, stats.bytes, stats.contexts, stats.inUse, stats.limit};
}

void CpuExecutor::setMaxConcurrentRuns(size_t limit) {
  contexts_.setLimit(limit);
}

loom_status CpuExecutor::run(const RunRequest &request) {
  const std::vector<Signature> &outputs = request.outputSignature;
  // Descriptors: inputs, weights, then the results the entry fills.
  std::vector<std::vector<int64_t>> descs;
  std::vector<const void *> argData;
  for (size_t i = 0; i < request.numInputs; ++i) {
    const loom_tensor *t = request.inputs[i];
    descs.push_back(descriptor(t->data, t->shape.data(), t->shape.size()));
    argData.push_back(t->data);
  }
  for (const loom_tensor_s &w : weights_) {
    descs.push_back(descriptor(w.data, w.shape.data(), w.shape.size()));
    argData.push_back(w.data);
  }
  size_t resultWords = 0;
  for (const Signature &s : outputs)
    resultWords += 3 + 2 * s.dims.size();
  std::vector<int64_t> results(resultWords, 0);
  std::vector<void *> args;
  for (auto &d : descs)
    args.push_back(d.data());
  args.push_back(results.data());
  // This run's planned buffers: a context of the session's, reused.
  std::unique_ptr<RunContext> context = contexts_.acquire();
  ActiveRun active(context.get());
  context->collectives().begin(request.communicator, request.meshShape);
  ThreadsScope threadsScope(request.numThreads);
  bool ran;
  if (loom_profile *profile = request.profile) {
    int64_t start = nowNs();
    std::vector<KernelEvent> events;
    {
      Recorder recorder;
      ran = context->call(code_->entry(), args.data());
      events = recorder.events();
    }
    int64_t end = nowNs();
    uint64_t row = threadRow();
    std::lock_guard<std::mutex> lock(profile->mutex);
    profile->events.push_back({"run", "run", start, end, row});
    for (const auto &e : events) {
      std::string name =
          e.kernel >= 0 && static_cast<size_t>(e.kernel) < kernels_.size()
              ? kernels_[e.kernel]
              : "kernel " + std::to_string(e.kernel);
      profile->events.push_back({name, "kernel", e.startNs, e.endNs, row});
    }
  } else {
    ran = context->call(code_->entry(), args.data());
  }
  std::string failure = context->takeFailure();
  std::string collectiveFailure = context->collectives().finish();
  std::string noMemory = context->takeOutOfMemory();
  contexts_.release(std::move(context));
  // The code stopped where a buffer could not be allocated: its results
  // are not there (what it had allocated is lost).
  if (!ran)
    return makeStatus(LOOM_OUT_OF_MEMORY, noMemory);

  // Each result becomes a tensor. A dense, 64-byte aligned buffer the code
  // allocated is adopted as it is (a training step's new state is most of
  // its outputs: no copy); any other result is copied (its strides may be
  // any). Then what the code allocated and no tensor adopted is freed:
  // once per buffer, never an argument's memory, never a global's (MLIR
  // marks those 0xdeadbeef).
  std::vector<std::unique_ptr<loom_tensor_s>> made;
  std::vector<void *> toFree, adopted;
  auto seen = [](const auto &list, const void *p) {
    return std::find(list.begin(), list.end(), p) != list.end();
  };
  size_t word = 0;
  loom_status status = nullptr;
  for (const Signature &s : outputs) {
    size_t rank = s.dims.size();
    const int64_t *d = results.data() + word;
    word += 3 + 2 * rank;
    void *allocated = reinterpret_cast<void *>(static_cast<intptr_t>(d[0]));
    const char *aligned =
        reinterpret_cast<const char *>(static_cast<intptr_t>(d[1]));
    bool ours = allocated &&
                allocated != reinterpret_cast<void *>(0xdeadbeef) &&
                !seen(argData, allocated);
    if (ours && !seen(toFree, allocated) && !seen(adopted, allocated))
      toFree.push_back(allocated);
    if (status)
      continue;
    size_t elem = loom_dtype_size(s.dtype);
    const int64_t *sizes = d + 3, *strides = d + 3 + rank;
    // Dense row-major (the usual case): one copy, or none.
    bool dense = true;
    int64_t expect = 1;
    for (size_t k = rank; k-- > 0;) {
      if (sizes[k] != 1 && strides[k] != expect)
        dense = false;
      expect *= sizes[k];
    }
    const char *first = aligned + d[2] * static_cast<int64_t>(elem);
    if (ours && dense && seen(toFree, allocated) &&
        reinterpret_cast<uintptr_t>(first) % 64 == 0) {
      std::unique_ptr<loom_tensor_s> t;
      status = newTensor("loom_session_run", s.dtype, rank, sizes, t);
      if (status)
        continue;
      t->owned.reset(allocated);
      t->data = const_cast<char *>(first);
      toFree.erase(std::find(toFree.begin(), toFree.end(), allocated));
      adopted.push_back(allocated);
      made.push_back(std::move(t));
      continue;
    }
    loom_tensor *t = nullptr;
    status = loom_tensor_create(s.dtype, rank, sizes, &t);
    if (status)
      continue;
    made.emplace_back(t);
    char *dst = static_cast<char *>(t->data);
    if (dense) {
      if (t->count)
        std::memcpy(dst, first, t->count * elem);
      continue;
    }
    // Odometer over the result's index space.
    std::vector<int64_t> idx(rank, 0);
    for (size_t n = 0; n < t->count; ++n) {
      int64_t off = d[2];
      for (size_t k = 0; k < rank; ++k)
        off += idx[k] * strides[k];
      std::memcpy(dst + n * elem, aligned + off * static_cast<int64_t>(elem),
                  elem);
      for (size_t k = rank; k-- > 0;) {
        if (++idx[k] < sizes[k])
          break;
        idx[k] = 0;
      }
    }
  }
  for (void *p : toFree)
    std::free(p);
  if (status)
    return status;
  if (!collectiveFailure.empty())
    return makeStatus(LOOM_UNAVAILABLE, collectiveFailure);
  if (!failure.empty())
    return makeStatus(LOOM_INVALID_ARGUMENT,
                      "the model rejected an input value: " + failure);
  for (size_t i = 0; i < outputs.size(); ++i)
    request.outputs[i] = made[i].release();
  return nullptr;
}

} // namespace loom::runtime
