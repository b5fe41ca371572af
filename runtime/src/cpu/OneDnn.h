//===- OneDnn.h - what the kernels on oneDNN's primitives share -*- C++ -*-===//
//
// The CPU engine, per-thread streams, growing aligned buffers, memory
// objects and reorders that Convolution.cpp and IntegerMatmul.cpp use.
// Internal to the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CPU_ONEDNN_H
#define LOOM_RUNTIME_CPU_ONEDNN_H

#include "runtime/src/MappedWeights.h"

#include <oneapi/dnnl/dnnl.h>

#include <cstddef>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace loom::runtime::cpu {

/// A 64-byte aligned buffer that only grows.
class Buffer {
public:
  Buffer() = default;
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  ~Buffer() { std::free(data_); }
  /// At least `bytes`, or null when that much cannot be had.
  void *get(size_t bytes) {
    if (bytes > size_) {
      std::free(data_);
      size_ = 0;
      data_ = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
      if (data_)
        size_ = bytes;
    }
    return data_;
  }
  void *data() const { return data_; }

private:
  void *data_ = nullptr;
  size_t size_ = 0;
};

inline dnnl_engine_t engine() {
  static dnnl_engine_t e = [] {
    dnnl_engine_t made = nullptr;
    if (dnnl_engine_create(&made, dnnl_cpu, 0) != dnnl_success)
      return static_cast<dnnl_engine_t>(nullptr);
    return made;
  }();
  return e;
}

/// Whether oneDNN's int8 kernels (GEMM, matmul, convolution) sum u8 x s8
/// products exactly on this CPU: with VNNI (AVX512-VNNI or AVX-VNNI; AMX
/// has it too). Without it they add pairs in saturating 16-bit lanes
/// (vpmaddubsw).
inline bool int8SumsExact() {
  static const bool exact = [] {
    unsigned isa = dnnl_get_effective_cpu_isa();
    auto has = [&](unsigned bits) { return (isa & bits) == bits; };
    return has(dnnl_cpu_isa_avx512_core_vnni) || has(dnnl_cpu_isa_avx2_vnni);
  }();
  return exact;
}

/// A reorder between two layouts, or none when they are the same.
struct Reorder {
  dnnl_primitive_t prim = nullptr;
  ~Reorder() {
    if (prim)
      dnnl_primitive_destroy(prim);
  }
  bool make(const dnnl_memory_desc_t &from, const dnnl_memory_desc_t &to) {
    if (dnnl_memory_desc_equal(&from, &to))
      return true;
    dnnl_primitive_desc_t pd = nullptr;
    if (dnnl_reorder_primitive_desc_create(&pd, &from, engine(), &to, engine(),
                                           nullptr) != dnnl_success)
      return false;
    dnnl_status_t s = dnnl_primitive_create(&prim, pd);
    dnnl_primitive_desc_destroy(pd);
    return s == dnnl_success;
  }
};

/// One memory object over `data` for the duration of a call.
struct Memory {
  dnnl_memory_t mem = nullptr;
  Memory(const dnnl_memory_desc_t &md, void *data) {
    if (dnnl_memory_create(&mem, &md, engine(), data) != dnnl_success)
      mem = nullptr;
  }
  ~Memory() {
    if (mem)
      dnnl_memory_destroy(mem);
  }
};

inline bool reorder(dnnl_stream_t stream, const Reorder &r,
                    const dnnl_memory_desc_t &fromMd, const void *from,
                    const dnnl_memory_desc_t &toMd, void *to) {
  Memory src(fromMd, const_cast<void *>(from)), dst(toMd, to);
  if (!src.mem || !dst.mem)
    return false;
  dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, src.mem}, {DNNL_ARG_TO, dst.mem}};
  return dnnl_primitive_execute(r.prim, stream, 2, args) == dnnl_success;
}

/// `from` reordered into `into` (grown as needed): its data, or null when
/// out of memory or oneDNN refused.
inline void *reordered(dnnl_stream_t stream, const Reorder &r,
                       const dnnl_memory_desc_t &fromMd, const void *from,
                       const dnnl_memory_desc_t &toMd, Buffer &into) {
  void *to = into.get(dnnl_memory_desc_get_size(&toMd));
  return to && reorder(stream, r, fromMd, from, toMd, to) ? to : nullptr;
}

/// The calling thread's stream on the engine, made on its first use.
inline dnnl_stream_t threadStream() {
  struct Stream {
    dnnl_stream_t s = nullptr;
    Stream() {
      if (dnnl_stream_create(&s, engine(), dnnl_stream_default_flags) !=
          dnnl_success)
        s = nullptr;
    }
    ~Stream() {
      if (s)
        dnnl_stream_destroy(s);
    }
  };
  thread_local Stream stream;
  return stream.s;
}

/// The primitive descriptor of operation `desc` (a dnnl_*_desc_t) with a
/// user-managed scratchpad, a run-time scalar source zero point when
/// `srcZeroPoint`, and the post-ops: a sum into the destination when
/// `sum`, then a ReLU when `relu`. Null when oneDNN has no implementation.
inline dnnl_primitive_desc_t primitiveDesc(const void *desc, bool srcZeroPoint,
                                           bool sum, bool relu) {
  dnnl_primitive_attr_t attr = nullptr;
  dnnl_post_ops_t ops = nullptr;
  const int32_t runtimeZero = DNNL_RUNTIME_S32_VAL;
  bool ok = dnnl_primitive_attr_create(&attr) == dnnl_success &&
            dnnl_primitive_attr_set_scratchpad_mode(
                attr, dnnl_scratchpad_mode_user) == dnnl_success;
  if (ok && srcZeroPoint)
    ok = dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_SRC, 1, 0,
                                             &runtimeZero) == dnnl_success;
  if (ok && (sum || relu))
    ok = dnnl_post_ops_create(&ops) == dnnl_success &&
         (!sum || dnnl_post_ops_append_sum(ops, 1.0f) == dnnl_success) &&
         (!relu || dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_relu,
                                                0.0f, 0.0f) == dnnl_success) &&
         dnnl_primitive_attr_set_post_ops(attr, ops) == dnnl_success;
  dnnl_primitive_desc_t pd = nullptr;
  if (ok && dnnl_primitive_desc_create(&pd, desc, attr, engine(), nullptr) !=
                dnnl_success)
    pd = nullptr;
  if (ops)
    dnnl_post_ops_destroy(ops);
  if (attr)
    dnnl_primitive_attr_destroy(attr);
  return pd;
}

/// A weight reordered into a primitive's layout, kept while its artifact
/// is loaded.
struct PackedWeight {
  Buffer data;
};

/// The entry of `key` in `cache` (under `mutex`), set up by `make(T &)`
/// the first time it is asked for; null where `make` failed (oneDNN has
/// no implementation), then and later.
template <typename T, typename Make>
std::shared_ptr<T>
setUpOnce(std::mutex &mutex,
          std::map<std::vector<int64_t>, std::shared_ptr<T>> &cache,
          const std::vector<int64_t> &key, Make make) {
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, added] = cache.try_emplace(key);
  if (added) {
    auto made = std::make_shared<T>();
    if (make(*made))
      it->second = std::move(made);
  }
  return it->second;
}

/// Drops the weights every entry of `cache` keeps packed (under `mutex`):
/// their artifact's weights are going.
template <typename T>
void forgetPacked(std::mutex &mutex,
                  std::map<std::vector<int64_t>, std::shared_ptr<T>> &cache) {
  std::lock_guard<std::mutex> lock(mutex);
  for (auto &[key, entry] : cache)
    if (entry)
      entry->packed.clear();
}

/// Weights a primitive keeps in its layout, by the address of their
/// user-layout data (each guarded by its cache's mutex).
using PackedWeights = std::map<const void *, std::shared_ptr<PackedWeight>>;

/// The packed copy of `data` in `kept`, or null (under `mutex`).
inline std::shared_ptr<PackedWeight>
findPacked(std::mutex &mutex, const PackedWeights &kept, const void *data) {
  std::lock_guard<std::mutex> lock(mutex);
  auto found = kept.find(data);
  return found == kept.end() ? nullptr : found->second;
}

/// Weight `data` (layout `userMd`) in a primitive's layout `md` through
/// reorder `r`: `packed` when it was kept before (`data` is not read then);
/// a `constant` weight is packed now and kept in `kept` under `key` (the
/// address of the artifact's weight it was made from; under `mutex`), and
/// the weight's mapped pages released; any
/// other reordered into `scratch`. Null when out of memory or oneDNN
/// refused.
inline void *weightInLayout(dnnl_stream_t stream, const Reorder &r,
                            const dnnl_memory_desc_t &userMd, const void *data,
                            const dnnl_memory_desc_t &md,
                            const std::shared_ptr<PackedWeight> &packed,
                            bool constant, const void *key, std::mutex &mutex,
                            PackedWeights &kept, Buffer &scratch) {
  if (packed)
    return packed->data.data();
  if (!constant)
    return reordered(stream, r, userMd, data, md, scratch);
  auto made = std::make_shared<PackedWeight>();
  void *to = reordered(stream, r, userMd, data, md, made->data);
  if (to) {
    std::lock_guard<std::mutex> lock(mutex);
    kept[key] = std::move(made);
  }
  // The packed copy stands in for the weight's pages in the mapped
  // artifact (`data` may be a converted copy; `key` is the original): they
  // are given back, and a reader that still needs them maps them in again.
  if (to)
    releaseMappedWeight(key, dnnl_memory_desc_get_size(&userMd));
  return to;
}

} // namespace loom::runtime::cpu

#endif // LOOM_RUNTIME_CPU_ONEDNN_H
