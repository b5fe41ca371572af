//===- Convolution.cpp - the CPU code's 2-D convolution kernel ------------===//
//
// `loom_cpu_conv2d_nchw_f32` runs a convolution as oneDNN's convolution
// primitive: oneDNN picks its own layouts for the input, filter and output
// (blocked ones, nChw16c on AVX-512, where its direct JIT kernels run at
// several times an im2col GEMM's speed on ResNet's shapes), and reorders
// move the NCHW tensors in and out. Each distinct convolution (shapes,
// strides, padding, flags, threads) is set up once and kept: a primitive
// costs milliseconds to create. A filter that is a weight of the artifact
// (kConvConstantFilter) is reordered once and kept too, keyed by its
// address, until an artifact's weights are released (forgetPackedFilters);
// a filter that changes (training) is reordered on every call.
//
// A 3x3 stride-1 convolution of 64 channels or more in and out runs as
// oneDNN's Winograd where it has one (LOOM_CPU_CONV=direct keeps the
// direct kernels). When oneDNN has
// no implementation for a case, or LOOM_CPU_CONV=im2col, the convolution is
// im2col and one GEMM per image, the input's padding written as zeros into
// the im2col buffer.
//
// A tensor the compiler keeps in NHWC (kConvInNhwc / kConvOutNhwc: the
// buffers between the convolutions of a CNN, residual adds and pooling
// included) is given to the primitive as it is: its brgconv kernels run
// on NHWC, so only the filter is reordered (once). A residual add folded
// into the convolution is the primitive's sum post-op (out holds the
// residual on entry), a ReLU after it an eltwise post-op.
//
// `loom_cpu_maxpool2d_f32` is oneDNN's max pooling on the strided tensors
// as they are (padding excluded from the window, as -inf padding), or
// plain loops when oneDNN has none.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/cpu/Kernels.h"
#include "runtime/src/cpu/OneDnn.h"

#include "loom/common/CodegenAbi.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

using namespace loom::runtime::cpu;

namespace {

/// The convolution's parameters besides its tensors.
struct ConvParams {
  int64_t sh, sw, dh, dw, pt, pl, pb, pr, flags;
  /// The bias (kConvBias): data and stride.
  const float *bias;
  int64_t biasStride;
};

// ---- im2col + GEMM (the fallback) -----------------------------------------

void convIm2col(const View &I, const View &W, const View &O,
                const ConvParams &p) {
  bool oneDnn = gemmOnOneDnn();
  bool overwrite = p.flags & loom::abi::kConvOverwrite;
  int64_t N = O.sizes[0], F = O.sizes[1], OH = O.sizes[2], OW = O.sizes[3];
  int64_t C = W.sizes[1], KH = W.sizes[2], KW = W.sizes[3];
  int64_t IH = I.sizes[2], IW = I.sizes[3];
  int64_t rows = C * KH * KW, cols = OH * OW;
  if (N == 0 || F == 0 || cols == 0)
    return;
  std::vector<float> packW;
  // The filter as an F x (C*KH*KW) matrix: itself when dense, else packed.
  const float *w = W.data;
  if (!(W.strides[3] == 1 && W.strides[2] == KW && W.strides[1] == KH * KW &&
        W.strides[0] == rows)) {
    packW.resize(static_cast<size_t>(F * rows));
    for (int64_t f = 0; f < F; ++f)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < KH; ++i)
          for (int64_t j = 0; j < KW; ++j)
            packW[((f * C + c) * KH + i) * KW + j] =
                W.data[f * W.strides[0] + c * W.strides[1] + i * W.strides[2] +
                       j * W.strides[3]];
    w = packW.data();
  }
  bool denseOut =
      O.strides[3] == 1 && O.strides[2] == OW && O.strides[1] == cols;
  // One image per thread when there are several (each with its own
  // im2col buffer; the GEMM inside then runs on that thread); a single
  // image gets the GEMM's own threads.
  auto image = [&](int64_t n, std::vector<float> &col,
                   std::vector<float> &packO) {
    col.resize(static_cast<size_t>(rows * cols));
    const float *in = I.data + n * I.strides[0];
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < KH; ++i)
        for (int64_t j = 0; j < KW; ++j) {
          float *dst = col.data() + ((c * KH + i) * KW + j) * cols;
          for (int64_t y = 0; y < OH; ++y) {
            int64_t iy = y * p.sh + i * p.dh - p.pt;
            for (int64_t x = 0; x < OW; ++x) {
              int64_t ix = x * p.sw + j * p.dw - p.pl;
              bool inside = iy >= 0 && iy < IH && ix >= 0 && ix < IW;
              dst[y * OW + x] = inside
                                    ? in[c * I.strides[1] + iy * I.strides[2] +
                                         ix * I.strides[3]]
                                    : 0.0f;
            }
          }
        }
    float *out = O.data + n * O.strides[0];
    float *c = out;
    if (!denseOut) {
      packO.resize(static_cast<size_t>(F * cols));
      for (int64_t f = 0; f < F; ++f)
        for (int64_t y = 0; y < OH; ++y)
          for (int64_t x = 0; x < OW; ++x)
            packO[(f * OH + y) * OW + x] =
                overwrite ? 0.0f
                          : out[f * O.strides[1] + y * O.strides[2] +
                                x * O.strides[3]];
      c = packO.data();
    }
    float beta = overwrite ? 0.0f : 1.0f;
    if (p.flags & loom::abi::kConvBias) {
      for (int64_t f = 0; f < F; ++f)
        for (int64_t i = 0; i < cols; ++i)
          c[f * cols + i] = overwrite
                                ? p.bias[f * p.biasStride]
                                : p.bias[f * p.biasStride] + c[f * cols + i];
      beta = 1.0f;
    }
    sgemm(oneDnn, false, false, F, cols, rows, w, rows, col.data(), cols, beta,
          c, cols);
    if (p.flags & loom::abi::kConvRelu)
      for (int64_t i = 0; i < F * cols; ++i)
        c[i] = c[i] > 0.0f ? c[i] : (c[i] == c[i] ? 0.0f : c[i]);
    if (!denseOut)
      for (int64_t f = 0; f < F; ++f)
        for (int64_t y = 0; y < OH; ++y)
          for (int64_t x = 0; x < OW; ++x)
            out[f * O.strides[1] + y * O.strides[2] + x * O.strides[3]] =
                packO[(f * OH + y) * OW + x];
  };
  std::vector<float> col, packO;
  if (N == 1 || omp_get_max_threads() == 1) {
    for (int64_t n = 0; n < N; ++n)
      image(n, col, packO);
    return;
  }
#pragma omp parallel
  {
    std::vector<float> myCol, myPack;
#pragma omp for schedule(static)
    for (int64_t n = 0; n < N; ++n)
      image(n, myCol, myPack);
  }
}

// ---- oneDNN's convolution primitive ----------------------------------------

/// `md`: a 4-D f32 tensor of `dims` with `strides` (a size-1 dim's stride is
/// never used; oneDNN wants a plausible one, so it is set here).
bool stridedDesc(dnnl_memory_desc_t &md, const dnnl_dims_t dims,
                 dnnl_dims_t strides) {
  for (int i = 3; i >= 0; --i)
    if (dims[i] == 1) {
      int64_t inner = 1;
      for (int j = i + 1; j < 4; ++j)
        inner = std::max<int64_t>(inner, strides[j] * dims[j]);
      strides[i] = inner;
    }
  return dnnl_memory_desc_init_by_strides(&md, 4, dims, dnnl_f32, strides) ==
         dnnl_success;
}

/// LOOM_CPU_CONV: "im2col" (no oneDNN), "direct" (no Winograd), unset.
bool convForced(const char *mode) {
  static const std::string forced = [] {
    const char *e = std::getenv("LOOM_CPU_CONV");
    return std::string(e ? e : "");
  }();
  return forced == mode;
}
bool im2colForced() { return convForced("im2col"); }

/// One convolution, set up: the primitive, the layouts it chose, the
/// reorders between them and the caller's strided NCHW tensors.
struct Conv {
  dnnl_primitive_t prim = nullptr;
  dnnl_memory_desc_t userSrc, userWei, userDst, src, wei, dst, scratch, bias;
  Reorder srcIn, weiIn, dstIn, dstOut;
  /// Filters kept reordered, by address (kConvConstantFilter).
  PackedWeights packed;

  ~Conv() {
    if (prim)
      dnnl_primitive_destroy(prim);
  }

  bool make(const View &I, const View &W, const View &O, const ConvParams &p) {
    dnnl_dims_t idims, wdims, odims, istr, wstr, ostr;
    for (int i = 0; i < 4; ++i) {
      idims[i] = I.sizes[i], wdims[i] = W.sizes[i], odims[i] = O.sizes[i];
      istr[i] = I.strides[i], wstr[i] = W.strides[i], ostr[i] = O.strides[i];
    }
    if (!stridedDesc(userSrc, idims, istr) ||
        !stridedDesc(userWei, wdims, wstr) ||
        !stridedDesc(userDst, odims, ostr))
      return false;
    dnnl_memory_desc_t anySrc, anyWei, anyDst;
    if (dnnl_memory_desc_init_by_tag(&anySrc, 4, idims, dnnl_f32,
                                     dnnl_format_tag_any) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&anyWei, 4, wdims, dnnl_f32,
                                     dnnl_format_tag_any) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&anyDst, 4, odims, dnnl_f32,
                                     dnnl_format_tag_any) != dnnl_success)
      return false;
    dnnl_dims_t strides = {p.sh, p.sw}, dilates = {p.dh - 1, p.dw - 1},
                padL = {p.pt, p.pl}, padR = {p.pb, p.pr};
    bool hasBias = p.flags & loom::abi::kConvBias;
    dnnl_dims_t bdims = {odims[1]};
    if (hasBias && dnnl_memory_desc_init_by_tag(&bias, 1, bdims, dnnl_f32,
                                                dnnl_a) != dnnl_success)
      return false;
    // A tensor handed over in NHWC stays so: oneDNN's brgconv kernels run
    // on NHWC directly (it picks a blocked layout only for the filter), so
    // neither side reorders it. Where no kernel takes it, oneDNN chooses.
    auto primitive = [&](dnnl_alg_kind_t algorithm,
                         bool keepNhwc) -> dnnl_primitive_desc_t {
      bool inNhwc = keepNhwc && (p.flags & loom::abi::kConvInNhwc),
           outNhwc = keepNhwc && (p.flags & loom::abi::kConvOutNhwc);
      dnnl_convolution_desc_t cd;
      if (dnnl_dilated_convolution_forward_desc_init(
              &cd, dnnl_forward_inference, algorithm,
              inNhwc ? &userSrc : &anySrc, &anyWei, hasBias ? &bias : nullptr,
              outNhwc ? &userDst : &anyDst, strides, dilates, padL,
              padR) != dnnl_success)
        return nullptr;
      return primitiveDesc(&cd, /*srcZeroPoint=*/false,
                           !(p.flags & loom::abi::kConvOverwrite),
                           p.flags & loom::abi::kConvRelu);
    };
    // A 3x3 stride-1 convolution of 64 channels or more in and out runs
    // as Winograd's algorithm where oneDNN has it (f32 on AVX-512; its own
    // blocked layout, so NHWC tensors are reordered around it): ResNet-18's
    // 3x3 layers 1.6-2x faster with the reorders (F(2x2, 3x3) at batch 1),
    // the model 25-30% faster at batch 8, its logits 131 dB from the
    // direct convolution's (docs/performance.md). With 8-32 channels (the
    // ResNet-style models of bench/cpu_inference) oneDNN's F(4x4, 3x3) and
    // the reorders made the model 3x slower, hence the bound. oneDNN's
    // convolution_auto would not pick Winograd at batch 1.
    bool winograd = wdims[2] == 3 && wdims[3] == 3 && p.sh == 1 && p.sw == 1 &&
                    p.dh == 1 && p.dw == 1 && wdims[0] >= 64 &&
                    wdims[1] >= 64 && !convForced("direct");
    bool nhwc = p.flags & (loom::abi::kConvInNhwc | loom::abi::kConvOutNhwc);
    dnnl_primitive_desc_t pd =
        winograd ? primitive(dnnl_convolution_winograd, false) : nullptr;
    if (!pd && nhwc)
      pd = primitive(dnnl_convolution_direct, true);
    if (!pd)
      pd = primitive(dnnl_convolution_direct, false);
    if (!pd)
      return false;
    src = *dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    wei = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dst = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    scratch = *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    bool ok = dnnl_primitive_create(&prim, pd) == dnnl_success;
    dnnl_primitive_desc_destroy(pd);
    return ok && srcIn.make(userSrc, src) && weiIn.make(userWei, wei) &&
           ((p.flags & loom::abi::kConvOverwrite) ||
            dstIn.make(userDst, dst)) &&
           dstOut.make(dst, userDst);
  }
};

/// The convolutions set up so far, by their key; null where oneDNN had
/// none (the fallback runs).
struct Cache {
  std::mutex mutex;
  std::map<std::vector<int64_t>, std::shared_ptr<Conv>> convs;
};

Cache &cache() {
  static Cache *c = new Cache; // never destroyed: kernels may run at exit
  return *c;
}

std::vector<int64_t> keyOf(const View &I, const View &W, const View &O,
                           const ConvParams &p) {
  std::vector<int64_t> key;
  for (const View *v : {&I, &W, &O})
    for (int i = 0; i < 4; ++i)
      key.push_back(v->sizes[i]), key.push_back(v->strides[i]);
  for (int64_t x : {p.sh, p.sw, p.dh, p.dw, p.pt, p.pl, p.pb, p.pr, p.flags})
    key.push_back(x);
  key.push_back(omp_get_max_threads());
  return key;
}

/// The calling thread's buffers for the reordered tensors and scratchpad.
struct Scratch {
  Buffer src, wei, dst, pad, bias;
};

/// Runs the convolution with oneDNN; false when oneDNN has no
/// implementation for it (nothing was written).
bool convOneDnn(const View &I, const View &W, const View &O,
                const ConvParams &p) {
  if (!engine())
    return false;
  std::vector<int64_t> key = keyOf(I, W, O, p);
  bool constant = p.flags & loom::abi::kConvConstantFilter;
  Cache &c = cache();
  std::shared_ptr<Conv> conv = setUpOnce(
      c.mutex, c.convs, key, [&](Conv &made) { return made.make(I, W, O, p); });
  if (!conv)
    return false;

  dnnl_stream_t stream = threadStream();
  if (!stream)
    return false;
  thread_local Scratch scratch;
  bool ok = true;
  // The input, the filter and (accumulating) the output in the
  // primitive's layouts.
  void *src = I.data;
  if (conv->srcIn.prim) {
    src = reordered(stream, conv->srcIn, conv->userSrc, I.data, conv->src,
                    scratch.src);
    ok = src != nullptr;
  }
  void *wei = W.data;
  if (ok && conv->weiIn.prim) {
    wei = weightInLayout(stream, conv->weiIn, conv->userWei, W.data, conv->wei,
                         constant ? findPacked(c.mutex, conv->packed, W.data)
                                  : nullptr,
                         constant, W.data, c.mutex, conv->packed, scratch.wei);
    ok = wei != nullptr;
  }
  void *dst = O.data;
  if (ok && conv->dstOut.prim) {
    if (conv->dstIn.prim)
      dst = reordered(stream, conv->dstIn, conv->userDst, O.data, conv->dst,
                      scratch.dst);
    else
      dst = scratch.dst.get(dnnl_memory_desc_get_size(&conv->dst));
    ok = dst != nullptr;
  }
  void *pad = nullptr;
  if (size_t bytes = dnnl_memory_desc_get_size(&conv->scratch); ok && bytes)
    ok = (pad = scratch.pad.get(bytes)) != nullptr;
  // The bias, dense.
  const float *bias = p.bias;
  bool hasBias = p.flags & loom::abi::kConvBias;
  if (ok && hasBias && p.biasStride != 1) {
    int64_t F = O.sizes[1];
    auto *dense = static_cast<float *>(scratch.bias.get(F * sizeof(float)));
    ok = dense != nullptr;
    for (int64_t f = 0; ok && f < F; ++f)
      dense[f] = p.bias[f * p.biasStride];
    bias = dense;
  }
  if (ok) {
    Memory s(conv->src, src), w(conv->wei, wei), d(conv->dst, dst),
        sp(conv->scratch, pad),
        b(hasBias ? conv->bias : conv->scratch,
          hasBias ? const_cast<float *>(bias) : pad);
    dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, s.mem},
                              {DNNL_ARG_WEIGHTS, w.mem},
                              {DNNL_ARG_DST, d.mem},
                              {DNNL_ARG_SCRATCHPAD, sp.mem},
                              {DNNL_ARG_BIAS, b.mem}};
    ok = s.mem && w.mem && d.mem && sp.mem && b.mem &&
         dnnl_primitive_execute(conv->prim, stream, hasBias ? 5 : 4, args) ==
             dnnl_success;
  }
  if (ok && conv->dstOut.prim)
    ok = reorder(stream, conv->dstOut, conv->dst, dst, conv->userDst, O.data);
  // False: out of memory for a reordered copy, or an execution oneDNN
  // refused after setting up; only the final reorder writes the output.
  return dnnl_stream_wait(stream) == dnnl_success && ok;
}

// ---- Max pooling ------------------------------------------------------------

/// The pooling's parameters besides its tensors.
struct PoolParams {
  int64_t kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
  bool relu;
};

/// out[n, c, oh, ow] = max over the window's positions inside the input;
/// -inf where none is (what padding with -inf gives).
void maxPoolLoops(const View &I, const View &O, const PoolParams &p) {
  int64_t N = O.sizes[0], C = O.sizes[1], OH = O.sizes[2], OW = O.sizes[3];
  int64_t IH = I.sizes[2], IW = I.sizes[3];
#pragma omp parallel for collapse(2) schedule(static) if (N * C > 1)
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      const float *in = I.data + n * I.strides[0] + c * I.strides[1];
      float *out = O.data + n * O.strides[0] + c * O.strides[1];
      for (int64_t y = 0; y < OH; ++y)
        for (int64_t x = 0; x < OW; ++x) {
          float m = -std::numeric_limits<float>::infinity();
          for (int64_t i = 0; i < p.kh; ++i) {
            int64_t iy = y * p.sh + i * p.dh - p.pt;
            if (iy < 0 || iy >= IH)
              continue;
            for (int64_t j = 0; j < p.kw; ++j) {
              int64_t ix = x * p.sw + j * p.dw - p.pl;
              if (ix < 0 || ix >= IW)
                continue;
              float v = in[iy * I.strides[2] + ix * I.strides[3]];
              // NaN wins, as arith.maximumf's does.
              m = (v > m || v != v) && m == m ? v : m;
            }
          }
          if (p.relu && m == m)
            m = m > 0.0f ? m : 0.0f;
          out[y * O.strides[2] + x * O.strides[3]] = m;
        }
    }
}

/// One max pooling, set up: oneDNN's pooling primitive on the caller's
/// strided tensors as they are (no reorders: it runs on NCHW, NHWC or any
/// other dense layout).
struct Pool {
  dnnl_primitive_t prim = nullptr;
  dnnl_memory_desc_t src, dst, scratch;
  /// Never used; forgetPacked wants one.
  PackedWeights packed;

  ~Pool() {
    if (prim)
      dnnl_primitive_destroy(prim);
  }

  bool make(const View &I, const View &O, const PoolParams &p) {
    dnnl_dims_t idims, odims, istr, ostr;
    for (int i = 0; i < 4; ++i) {
      idims[i] = I.sizes[i], odims[i] = O.sizes[i];
      istr[i] = I.strides[i], ostr[i] = O.strides[i];
    }
    if (!stridedDesc(src, idims, istr) || !stridedDesc(dst, odims, ostr))
      return false;
    dnnl_dims_t strides = {p.sh, p.sw}, kernel = {p.kh, p.kw},
                dilates = {p.dh - 1, p.dw - 1}, padL = {p.pt, p.pl},
                padR = {p.pb, p.pr};
    dnnl_pooling_v2_desc_t pdesc;
    if (dnnl_pooling_v2_forward_desc_init(
            &pdesc, dnnl_forward_inference, dnnl_pooling_max, &src, &dst,
            strides, kernel, dilates, padL, padR) != dnnl_success)
      return false;
    dnnl_primitive_desc_t pd = primitiveDesc(&pdesc, /*srcZeroPoint=*/false,
                                             /*sum=*/false, p.relu);
    if (!pd)
      return false;
    scratch = *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    bool ok = dnnl_primitive_create(&prim, pd) == dnnl_success;
    dnnl_primitive_desc_destroy(pd);
    return ok;
  }
};

struct PoolCache {
  std::mutex mutex;
  std::map<std::vector<int64_t>, std::shared_ptr<Pool>> pools;
};

PoolCache &poolCache() {
  static PoolCache *c = new PoolCache; // never destroyed, as cache()
  return *c;
}

/// Runs the pooling with oneDNN; false when oneDNN has no implementation
/// for it (nothing was written).
bool maxPoolOneDnn(const View &I, const View &O, const PoolParams &p) {
  if (!engine())
    return false;
  std::vector<int64_t> key;
  for (const View *v : {&I, &O})
    for (int i = 0; i < 4; ++i)
      key.push_back(v->sizes[i]), key.push_back(v->strides[i]);
  for (int64_t x : {p.kh, p.kw, p.sh, p.sw, p.dh, p.dw, p.pt, p.pl, p.pb, p.pr})
    key.push_back(x);
  key.push_back(p.relu);
  key.push_back(omp_get_max_threads());
  PoolCache &c = poolCache();
  std::shared_ptr<Pool> pool = setUpOnce(
      c.mutex, c.pools, key, [&](Pool &made) { return made.make(I, O, p); });
  dnnl_stream_t stream = pool ? threadStream() : nullptr;
  if (!stream)
    return false;
  thread_local Buffer scratch;
  void *pad = nullptr;
  if (size_t bytes = dnnl_memory_desc_get_size(&pool->scratch);
      bytes && !(pad = scratch.get(bytes)))
    return false;
  Memory s(pool->src, I.data), d(pool->dst, O.data), sp(pool->scratch, pad);
  dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, s.mem},
                            {DNNL_ARG_DST, d.mem},
                            {DNNL_ARG_SCRATCHPAD, sp.mem}};
  return s.mem && d.mem && sp.mem &&
         dnnl_primitive_execute(pool->prim, stream, 3, args) == dnnl_success &&
         dnnl_stream_wait(stream) == dnnl_success;
}

/// `v` (a dense [N, C, H, W] tensor in NHWC order) viewed with its NHWC
/// strides, kept in `strides`.
void nhwcStrides(View &v, int64_t *strides) {
  const int64_t *s = v.sizes;
  strides[0] = s[1] * s[2] * s[3], strides[1] = 1;
  strides[2] = s[3] * s[1], strides[3] = s[1];
  v.strides = strides;
}

} // namespace

namespace loom::runtime::cpu {

void forgetPackedFilters() {
  Cache &c = cache();
  forgetPacked(c.mutex, c.convs);
  forgetPackedMatmulRhs();
}

} // namespace loom::runtime::cpu

extern "C" {

/// out[n, f, oh, ow] (+)= sum_{c, kh, kw} in[n, c, oh*sh + kh*dh - pt,
/// ow*sw + kw*dw - pl] * filter[f, c, kh, kw] (+ bias[f]), then (ReLU),
/// f32, reading zeros outside the input (the padding: pt/pl before, pb/pr
/// after). `flags`: loom::abi::ConvFlags.
__attribute__((visibility("default"))) void LOOM_ABI_CIFACE(
    LOOM_ABI_CPU_CONV2D_NCHW_F32)(Unranked *inU, Unranked *filterU,
                                  Unranked *outU, Unranked *biasU, int64_t sh,
                                  int64_t sw, int64_t dh, int64_t dw,
                                  int64_t pt, int64_t pl, int64_t pb,
                                  int64_t pr, int64_t flags) {
  View I = view(inU), W = view(filterU), O = view(outU), B = view(biasU);
  // A tensor the compiler chose to keep in NHWC: its NHWC strides.
  int64_t inStrides[4], outStrides[4];
  if (flags & loom::abi::kConvInNhwc)
    nhwcStrides(I, inStrides);
  if (flags & loom::abi::kConvOutNhwc)
    nhwcStrides(O, outStrides);
  bool hasBias = flags & loom::abi::kConvBias;
  ConvParams p{sh,
               sw,
               dh,
               dw,
               pt,
               pl,
               pb,
               pr,
               flags,
               hasBias ? B.data : nullptr,
               hasBias ? B.strides[0] : 0};
  for (int i = 0; i < 4; ++i)
    if (O.sizes[i] == 0)
      return;
  // Batch sizes that disagree come only after a failed run-time check (the
  // run reports it and goes on with safe sizes): nothing to compute.
  if (I.sizes[0] != O.sizes[0])
    return;
  if (!im2colForced() && convOneDnn(I, W, O, p))
    return;
  convIm2col(I, W, O, p);
}

/// out[n, c, oh, ow] = max over kh x kw window positions (i, j) inside
/// the input of in[n, c, oh*sh + i*dh - pt, ow*sw + j*dw - pl] (-inf
/// padding: pt/pl before, pb/pr after), then (kPoolRelu) max(x, 0), f32.
/// `flags`: loom::abi::PoolFlags.
__attribute__((visibility("default"))) void
LOOM_ABI_CIFACE(LOOM_ABI_CPU_MAXPOOL2D_F32)(Unranked *inU, Unranked *outU,
                                            int64_t kh, int64_t kw, int64_t sh,
                                            int64_t sw, int64_t dh, int64_t dw,
                                            int64_t pt, int64_t pl, int64_t pb,
                                            int64_t pr, int64_t flags) {
  View I = view(inU), O = view(outU);
  int64_t inStrides[4], outStrides[4];
  if (flags & loom::abi::kPoolInNhwc)
    nhwcStrides(I, inStrides);
  if (flags & loom::abi::kPoolOutNhwc)
    nhwcStrides(O, outStrides);
  PoolParams p{kh,
               kw,
               sh,
               sw,
               dh,
               dw,
               pt,
               pl,
               pb,
               pr,
               bool(flags & loom::abi::kPoolRelu)};
  for (int i = 0; i < 4; ++i)
    if (O.sizes[i] == 0)
      return;
  if (I.sizes[0] != O.sizes[0] || I.sizes[1] != O.sizes[1])
    return; // as the convolution's
  // A window that would read past the input (its sizes disagree: only
  // after a failed run-time check) is not run.
  for (int d = 0; d < 2; ++d) {
    int64_t window = (d ? dw : dh) * ((d ? kw : kh) - 1) + 1;
    if ((O.sizes[2 + d] - 1) * (d ? sw : sh) + window >
        I.sizes[2 + d] + (d ? pl + pr : pt + pb))
      return;
  }
  if (!im2colForced() && maxPoolOneDnn(I, O, p))
    return;
  maxPoolLoops(I, O, p);
}

} // extern "C"
