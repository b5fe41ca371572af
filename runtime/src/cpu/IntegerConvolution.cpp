//===- IntegerConvolution.cpp - the 8-bit integer convolution -------------===//
//
// `loom_cpu_conv2d_i8`: `out (+)= conv(in - inZero, filter - filterZero)`,
// exact in i32, for 8-bit operands (graph.conv_integer: ONNX ConvInteger,
// QLinearConv, and DequantizeLinear -> Conv made integer by
// --loom-integer-conv): in [N, C, H, W], the filter in the grouped layout
// the compiler lowers the op to, [G, O/G, C/G, kh, kw], out [N, O, Ho,
// Wo]; in and out may be NHWC (kIntegerConvInNhwc / OutNhwc, the f32
// convolution's hand-off). The padding holds inZero (0 once shifted), as
// ONNX's ConvInteger pads.
//
// With a signed filter whose zero point is 0 (symmetric weights, what
// quantize_static writes) it is oneDNN's int8 convolution primitive (u8 or
// s8 source, s8 weights, s32 destination; brgconv with VNNI or AMX), the
// source zero point a run-time attribute, accumulation a sum post-op. As
// the float convolution's (Convolution.cpp), each distinct convolution is
// set up once and kept, and a filter that is a weight of the artifact
// (kIntegerConvConstantFilter) is reordered once and kept, keyed by its
// address, until the artifact's weights go (forgetPackedIntegerConvFilters);
// the machinery is OneDnn.h's.
//
// oneDNN's int8 kernels sum u8 x s8 pairs exactly only with VNNI (without
// it, in saturating 16-bit lanes), so elsewhere, for other zero points and
// layouts, when oneDNN has no implementation, or with LOOM_CPU_ICONV=loops,
// plain exact loops run instead.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/cpu/Kernels.h"
#include "runtime/src/cpu/OneDnn.h"

#include "loom/common/CodegenAbi.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

using namespace loom::runtime::cpu;

namespace {

/// The convolution's parameters besides its tensors.
struct Params {
  int64_t sh, sw, dh, dw, pt, pl, pb, pr, flags;
  int32_t inZero, filterZero;
};

/// A 5-D strided view (sizes and strides stored here).
struct Grouped {
  int64_t sizes[5], strides[5];
};

/// The grouped views: in [N, G, C, H, W], filter [G, O, C, KH, KW], out
/// [N, G, O, OH, OW] (C and O per group), data as bytes / i32.
struct Tensors {
  Grouped I, W, O;
  const int8_t *in, *filter;
  int32_t *out;
};

/// [N, C, H, W] view `v` split into G groups along C; `nhwc`: its elements
/// are dense in NHWC order, whatever its strides say.
Grouped grouped(const View &v, int64_t G, bool nhwc) {
  const int64_t *s = v.sizes;
  int64_t st[4] = {v.strides[0], v.strides[1], v.strides[2], v.strides[3]};
  if (nhwc) {
    st[0] = s[1] * s[2] * s[3], st[1] = 1;
    st[2] = s[3] * s[1], st[3] = s[1];
  }
  int64_t part = G > 0 ? s[1] / G : 0;
  return {{s[0], G, part, s[2], s[3]},
          {st[0], part * st[1], st[1], st[2], st[3]}};
}

Grouped grouped5(const View &v) {
  Grouped g;
  for (int i = 0; i < 5; ++i)
    g.sizes[i] = v.sizes[i], g.strides[i] = v.strides[i];
  return g;
}

bool loopsForced() {
  static const bool forced = [] {
    const char *e = std::getenv("LOOM_CPU_ICONV");
    return e && std::strcmp(e, "loops") == 0;
  }();
  return forced;
}

// ---- the exact loops (the fallback) ----------------------------------------

void convLoops(const Tensors &t, const Params &p) {
  const Grouped &I = t.I, &W = t.W, &O = t.O;
  int64_t N = O.sizes[0], G = O.sizes[1], F = O.sizes[2], OH = O.sizes[3],
          OW = O.sizes[4];
  int64_t C = W.sizes[2], KH = W.sizes[3], KW = W.sizes[4];
  int64_t IH = I.sizes[3], IW = I.sizes[4];
  bool inU8 = p.flags & loom::abi::kIntegerConvInUnsigned,
       wU8 = p.flags & loom::abi::kIntegerConvFilterUnsigned;
  bool overwrite = p.flags & loom::abi::kIntegerConvOverwrite;
  auto value = [](int8_t b, bool isUnsigned) -> int32_t {
    return isUnsigned ? static_cast<uint8_t>(b) : b;
  };
#pragma omp parallel for collapse(3) schedule(static)
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < G; ++g)
      for (int64_t f = 0; f < F; ++f) {
        const int8_t *in = t.in + n * I.strides[0] + g * I.strides[1];
        const int8_t *w = t.filter + g * W.strides[0] + f * W.strides[1];
        int32_t *out =
            t.out + n * O.strides[0] + g * O.strides[1] + f * O.strides[2];
        for (int64_t y = 0; y < OH; ++y)
          for (int64_t x = 0; x < OW; ++x) {
            int32_t sum = 0;
            for (int64_t c = 0; c < C; ++c)
              for (int64_t i = 0; i < KH; ++i) {
                int64_t iy = y * p.sh + i * p.dh - p.pt;
                if (iy < 0 || iy >= IH)
                  continue; // the padding: inZero, 0 once shifted
                for (int64_t j = 0; j < KW; ++j) {
                  int64_t ix = x * p.sw + j * p.dw - p.pl;
                  if (ix < 0 || ix >= IW)
                    continue;
                  int32_t a = value(in[c * I.strides[2] + iy * I.strides[3] +
                                       ix * I.strides[4]],
                                    inU8) -
                              p.inZero;
                  int32_t b = value(w[c * W.strides[2] + i * W.strides[3] +
                                      j * W.strides[4]],
                                    wU8) -
                              p.filterZero;
                  sum += a * b;
                }
              }
            int32_t &o = out[y * O.strides[3] + x * O.strides[4]];
            o = overwrite ? sum : o + sum;
          }
      }
}

// ---- oneDNN's int8 convolution primitive -----------------------------------

/// One convolution, set up: the primitive, its layouts and the reorders
/// between them and the caller's strided tensors.
struct Conv {
  dnnl_primitive_t prim = nullptr;
  dnnl_memory_desc_t userSrc, userWei, userDst, src, wei, dst, scratch, zero;
  Reorder srcIn, weiIn, dstIn, dstOut;
  bool srcZeroPoint = false;
  /// Filters kept reordered, by address (kIntegerConvConstantFilter).
  PackedWeights packed;

  ~Conv() {
    if (prim)
      dnnl_primitive_destroy(prim);
  }

  bool make(const Tensors &t, const Params &p) {
    const Grouped &I = t.I, &W = t.W, &O = t.O;
    int64_t G = W.sizes[0];
    // [N, G * C, H, W] with the 5-D views' strides; a size-1 dim's stride
    // is never used, and oneDNN wants a plausible one.
    auto strided = [](dnnl_memory_desc_t &md, int ndims, dnnl_dims_t dims,
                      dnnl_dims_t strides, dnnl_data_type_t type) {
      for (int i = ndims - 1; i >= 0; --i)
        if (dims[i] == 1) {
          int64_t inner = 1;
          for (int j = i + 1; j < ndims; ++j)
            inner = std::max<int64_t>(inner, strides[j] * dims[j]);
          strides[i] = inner;
        }
      return dnnl_memory_desc_init_by_strides(&md, ndims, dims, type,
                                              strides) == dnnl_success;
    };
    auto flat = [](const Grouped &v, dnnl_dims_t dims, dnnl_dims_t strides) {
      dims[0] = v.sizes[0], dims[1] = v.sizes[1] * v.sizes[2];
      dims[2] = v.sizes[3], dims[3] = v.sizes[4];
      strides[0] = v.strides[0], strides[1] = v.strides[2];
      strides[2] = v.strides[3], strides[3] = v.strides[4];
    };
    dnnl_dims_t idims, istr, odims, ostr, wdims, wstr;
    flat(I, idims, istr);
    flat(O, odims, ostr);
    // The filter: [G, O, C, KH, KW] grouped, [O, C, KH, KW] when G is 1.
    int wn = G > 1 ? 5 : 4;
    for (int i = 0; i < wn; ++i) {
      wdims[i] = W.sizes[i + 5 - wn];
      wstr[i] = W.strides[i + 5 - wn];
    }
    dnnl_data_type_t srcType =
        (p.flags & loom::abi::kIntegerConvInUnsigned) ? dnnl_u8 : dnnl_s8;
    if (!strided(userSrc, 4, idims, istr, srcType) ||
        !strided(userWei, wn, wdims, wstr, dnnl_s8) ||
        !strided(userDst, 4, odims, ostr, dnnl_s32))
      return false;
    dnnl_memory_desc_t anySrc, anyWei, anyDst;
    dnnl_dims_t one = {1};
    if (dnnl_memory_desc_init_by_tag(&anySrc, 4, idims, srcType,
                                     dnnl_format_tag_any) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&anyWei, wn, wdims, dnnl_s8,
                                     dnnl_format_tag_any) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&anyDst, 4, odims, dnnl_s32,
                                     dnnl_format_tag_any) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&zero, 1, one, dnnl_s32, dnnl_a) !=
            dnnl_success)
      return false;
    dnnl_dims_t strides = {p.sh, p.sw}, dilates = {p.dh - 1, p.dw - 1},
                padL = {p.pt, p.pl}, padR = {p.pb, p.pr};
    dnnl_convolution_desc_t cd;
    if (dnnl_dilated_convolution_forward_desc_init(
            &cd, dnnl_forward_inference, dnnl_convolution_direct, &anySrc,
            &anyWei, nullptr, &anyDst, strides, dilates, padL,
            padR) != dnnl_success)
      return false;
    bool overwrite = p.flags & loom::abi::kIntegerConvOverwrite;
    srcZeroPoint = p.inZero != 0;
    dnnl_primitive_desc_t pd =
        primitiveDesc(&cd, srcZeroPoint, /*sum=*/!overwrite, /*relu=*/false);
    if (!pd)
      return false;
    src = *dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    wei = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dst = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    scratch = *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    bool ok = dnnl_primitive_create(&prim, pd) == dnnl_success;
    dnnl_primitive_desc_destroy(pd);
    return ok && srcIn.make(userSrc, src) && weiIn.make(userWei, wei) &&
           (overwrite || dstIn.make(userDst, dst)) && dstOut.make(dst, userDst);
  }
};

struct Cache {
  std::mutex mutex;
  std::map<std::vector<int64_t>, std::shared_ptr<Conv>> convs;
};

Cache &cache() {
  static Cache *c = new Cache; // never destroyed: kernels may run at exit
  return *c;
}

std::vector<int64_t> keyOf(const Tensors &t, const Params &p) {
  std::vector<int64_t> key;
  for (const Grouped *v : {&t.I, &t.W, &t.O})
    for (int i = 0; i < 5; ++i)
      key.push_back(v->sizes[i]), key.push_back(v->strides[i]);
  for (int64_t x : {p.sh, p.sw, p.dh, p.dw, p.pt, p.pl, p.pb, p.pr, p.flags})
    key.push_back(x);
  key.push_back(p.inZero != 0);
  key.push_back(omp_get_max_threads());
  return key;
}

/// The calling thread's buffers for the reordered tensors and scratchpad.
struct Scratch {
  Buffer src, wei, dst, pad;
};

/// Runs the convolution with oneDNN; false when oneDNN has no
/// implementation for it (nothing was written).
bool convOneDnn(const Tensors &t, const Params &p) {
  if (!engine())
    return false;
  bool constant = p.flags & loom::abi::kIntegerConvConstantFilter;
  Cache &c = cache();
  std::shared_ptr<Conv> conv =
      setUpOnce(c.mutex, c.convs, keyOf(t, p),
                [&](Conv &made) { return made.make(t, p); });
  if (!conv)
    return false;
  dnnl_stream_t stream = threadStream();
  if (!stream)
    return false;
  thread_local Scratch scratch;
  bool ok = true;
  void *src = const_cast<int8_t *>(t.in);
  if (conv->srcIn.prim) {
    src = reordered(stream, conv->srcIn, conv->userSrc, t.in, conv->src,
                    scratch.src);
    ok = src != nullptr;
  }
  void *wei = const_cast<int8_t *>(t.filter);
  if (ok && conv->weiIn.prim) {
    wei = weightInLayout(
        stream, conv->weiIn, conv->userWei, t.filter, conv->wei,
        constant ? findPacked(c.mutex, conv->packed, t.filter) : nullptr,
        constant, t.filter, c.mutex, conv->packed, scratch.wei);
    ok = wei != nullptr;
  }
  void *dst = t.out;
  if (ok && conv->dstOut.prim) {
    if (conv->dstIn.prim)
      dst = reordered(stream, conv->dstIn, conv->userDst, t.out, conv->dst,
                      scratch.dst);
    else
      dst = scratch.dst.get(dnnl_memory_desc_get_size(&conv->dst));
    ok = dst != nullptr;
  }
  void *pad = nullptr;
  if (size_t bytes = dnnl_memory_desc_get_size(&conv->scratch); ok && bytes)
    ok = (pad = scratch.pad.get(bytes)) != nullptr;
  if (ok) {
    int32_t zero = p.inZero;
    Memory s(conv->src, src), w(conv->wei, wei), d(conv->dst, dst),
        sp(conv->scratch, pad), z(conv->zero, &zero);
    dnnl_exec_arg_t args[] = {
        {DNNL_ARG_SRC, s.mem},
        {DNNL_ARG_WEIGHTS, w.mem},
        {DNNL_ARG_DST, d.mem},
        {DNNL_ARG_SCRATCHPAD, sp.mem},
        {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, z.mem}};
    ok = s.mem && w.mem && d.mem && sp.mem && z.mem &&
         dnnl_primitive_execute(conv->prim, stream, conv->srcZeroPoint ? 5 : 4,
                                args) == dnnl_success;
  }
  if (ok && conv->dstOut.prim)
    ok = reorder(stream, conv->dstOut, conv->dst, dst, conv->userDst, t.out);
  return dnnl_stream_wait(stream) == dnnl_success && ok;
}

} // namespace

namespace loom::runtime::cpu {

void forgetPackedIntegerConvFilters() {
  Cache &c = cache();
  forgetPacked(c.mutex, c.convs);
}

} // namespace loom::runtime::cpu

extern "C" {

/// out[n, g*O/G + o, oh, ow] (+)= sum_{c, kh, kw} (in[n, g*C/G + c, oh*sh +
/// kh*dh - pt, ow*sw + kw*dw - pl] - inZero) * (filter[g, o, c, kh, kw] -
/// filterZero) in i32, the padding (pt/pl before, pb/pr after) holding
/// inZero; `flags`: loom::abi::IntegerConvFlags.
__attribute__((visibility("default"))) void LOOM_ABI_CIFACE(
    LOOM_ABI_CPU_CONV2D_I8)(Unranked *inU, Unranked *filterU, Unranked *outU,
                            int32_t inZero, int32_t filterZero, int64_t sh,
                            int64_t sw, int64_t dh, int64_t dw, int64_t pt,
                            int64_t pl, int64_t pb, int64_t pr, int64_t flags) {
  using namespace loom::abi;
  View W = view(filterU);
  int64_t G = W.sizes[0];
  Tensors t{grouped(view(inU), G, flags & kIntegerConvInNhwc),
            grouped5(W),
            grouped(view(outU), G, flags & kIntegerConvOutNhwc),
            reinterpret_cast<const int8_t *>(elementsOf(inU, 1)),
            reinterpret_cast<const int8_t *>(elementsOf(filterU, 1)),
            reinterpret_cast<int32_t *>(elementsOf(outU, 4))};
  Params p{sh, sw, dh, dw, pt, pl, pb, pr, flags, inZero, filterZero};
  for (int i = 0; i < 5; ++i)
    if (t.O.sizes[i] == 0)
      return;
  bool inU8 = flags & loom::abi::kIntegerConvInUnsigned;
  bool inRange =
      inU8 ? inZero >= 0 && inZero <= 255 : inZero >= -128 && inZero <= 127;
  // oneDNN's weights are signed with no zero point.
  bool fits = !(flags & loom::abi::kIntegerConvFilterUnsigned) &&
              filterZero == 0 && inRange && t.W.sizes[2] > 0;
  if (fits && !loopsForced() && int8SumsExact() && convOneDnn(t, p))
    return;
  convLoops(t, p);
}

} // extern "C"
