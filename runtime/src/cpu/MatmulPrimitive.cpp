//===- MatmulPrimitive.cpp - oneDNN's matmul primitive, weights kept packed
//===//
//
// One product C (+)= (A - a0) B with oneDNN's matmul primitive (brgemm on
// AVX-512, AMX or VNNI), for the f32 GEMM (Kernels.cpp) and the 8-bit one
// (IntegerMatmul.cpp). Each shape is set up once and kept. A rhs that is
// a weight of the artifact (kMatmulConstantRhs) is reordered into the
// primitive's blocked layout on its first use and kept, keyed by address,
// like a convolution's filter; its mapped pages are then given back
// (weightInLayout), so the packed copy takes their place instead of
// doubling the weights' memory. The GEMM APIs (dnnl_sgemm,
// dnnl_gemm_*8s8s32) pack the rhs again on every call: at GPT-2's 128
// rows that costs 10-30% of the product (bench/scale).
//
//===----------------------------------------------------------------------===//

#include "runtime/src/cpu/MatmulPrimitive.h"

#include "runtime/src/cpu/OneDnn.h"

#include <omp.h>

#include <map>
#include <memory>
#include <mutex>

namespace loom::runtime::cpu {

namespace {

std::vector<int64_t> keyOf(const PrimitiveShape &s) {
  return {s.M,          s.N,
          s.K,          s.lda,
          s.ldb,        s.ldc,
          s.transA,     s.transB,
          s.accumulate, s.srcZeroPoint,
          s.src,        s.wei,
          s.dst,        omp_get_max_threads()};
}

/// One matmul, set up: the primitive, its layouts and the rhs reorder.
struct Matmul {
  dnnl_primitive_t prim = nullptr;
  dnnl_memory_desc_t src, userWei, wei, dst, scratch, zero;
  Reorder weiIn;
  /// Rhs kept packed, by address (kMatmulConstantRhs).
  PackedWeights packed;

  ~Matmul() {
    if (prim)
      dnnl_primitive_destroy(prim);
  }

  bool make(const PrimitiveShape &s) {
    auto matrix = [](dnnl_memory_desc_t &md, int64_t rows, int64_t cols,
                     int64_t ld, bool trans, dnnl_data_type_t type) {
      dnnl_dims_t dims = {rows, cols};
      dnnl_dims_t strides = {trans ? 1 : ld, trans ? ld : 1};
      return dnnl_memory_desc_init_by_strides(&md, 2, dims, type, strides) ==
             dnnl_success;
    };
    dnnl_memory_desc_t anyWei;
    dnnl_dims_t wdims = {s.K, s.N}, one = {1};
    if (!matrix(src, s.M, s.K, s.lda, s.transA, s.src) ||
        !matrix(userWei, s.K, s.N, s.ldb, s.transB, s.wei) ||
        !matrix(dst, s.M, s.N, s.ldc, false, s.dst) ||
        dnnl_memory_desc_init_by_tag(&anyWei, 2, wdims, s.wei,
                                     dnnl_format_tag_any) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&zero, 1, one, dnnl_s32, dnnl_a) !=
            dnnl_success)
      return false;
    dnnl_matmul_desc_t md;
    if (dnnl_matmul_desc_init(&md, &src, &anyWei, nullptr, &dst) !=
        dnnl_success)
      return false;
    dnnl_primitive_desc_t pd =
        primitiveDesc(&md, s.srcZeroPoint, s.accumulate, false);
    if (!pd)
      return false;
    wei = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    scratch = *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    bool ok = dnnl_primitive_create(&prim, pd) == dnnl_success;
    dnnl_primitive_desc_destroy(pd);
    return ok && weiIn.make(userWei, wei);
  }
};

/// The matmuls set up so far, by key; null where oneDNN had none.
struct MatmulCache {
  std::mutex mutex;
  std::map<std::vector<int64_t>, std::shared_ptr<Matmul>> matmuls;
};

MatmulCache &matmulCache() {
  static MatmulCache *c = new MatmulCache; // kernels may run at exit
  return *c;
}

/// The calling thread's buffers: a packed rhs, the scratchpad.
struct MatmulScratch {
  Buffer wei, pad;
};

} // namespace

bool matmulPrimitive(const PrimitiveShape &s, const void *a, int32_t srcZero,
                     const std::function<const void *()> &rhs, bool constantB,
                     const void *key, void *c) {
  if (!engine())
    return false;
  MatmulCache &cache = matmulCache();
  std::shared_ptr<Matmul> mm =
      setUpOnce(cache.mutex, cache.matmuls, keyOf(s),
                [&](Matmul &made) { return made.make(s); });
  if (!mm)
    return false;
  dnnl_stream_t stream = threadStream();
  if (!stream)
    return false;
  thread_local MatmulScratch scratch;
  std::shared_ptr<PackedWeight> packed =
      constantB && mm->weiIn.prim ? findPacked(cache.mutex, mm->packed, key)
                                  : nullptr;
  const void *b = packed ? nullptr : rhs();
  void *wei = const_cast<void *>(b);
  if (mm->weiIn.prim)
    wei = weightInLayout(stream, mm->weiIn, mm->userWei, b, mm->wei, packed,
                         constantB, key, cache.mutex, mm->packed, scratch.wei);
  bool ok = wei != nullptr;
  void *pad = nullptr;
  if (size_t bytes = dnnl_memory_desc_get_size(&mm->scratch); ok && bytes)
    ok = (pad = scratch.pad.get(bytes)) != nullptr;
  if (ok) {
    Memory sm(mm->src, const_cast<void *>(a)), wm(mm->wei, wei), dm(mm->dst, c),
        pm(mm->scratch, pad), zm(mm->zero, &srcZero);
    dnnl_exec_arg_t args[] = {
        {DNNL_ARG_SRC, sm.mem},
        {DNNL_ARG_WEIGHTS, wm.mem},
        {DNNL_ARG_DST, dm.mem},
        {DNNL_ARG_SCRATCHPAD, pm.mem},
        {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zm.mem}};
    int nargs = s.srcZeroPoint ? 5 : 4;
    ok = sm.mem && wm.mem && dm.mem && pm.mem && zm.mem &&
         dnnl_primitive_execute(mm->prim, stream, nargs, args) == dnnl_success;
  }
  return dnnl_stream_wait(stream) == dnnl_success && ok;
}

void forgetPackedMatmulRhs() {
  MatmulCache &c = matmulCache();
  forgetPacked(c.mutex, c.matmuls);
}

} // namespace loom::runtime::cpu
