//===- CpuIntegerConvTest.cpp - the int8 convolution kernel ---------------===//
//
// loom_cpu_conv2d_i8 called as the generated code calls it (unranked
// descriptors of the [N, C, H, W] input and output and the grouped [G,
// O/G, C/G, kh, kw] filter) against a plain reference: groups, strides,
// padding (which holds the input's zero point), dilations, u8 and s8
// inputs, accumulation, a filter kept reordered across calls
// (kIntegerConvConstantFilter), and input and output handed over in NHWC
// (kIntegerConvInNhwc / OutNhwc, strides not read).
//
//===----------------------------------------------------------------------===//

#include "loom/common/CodegenAbi.h"
#include "runtime/src/cpu/Kernels.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdint>
#include <random>
#include <vector>

using loom::runtime::cpu::Unranked;
using namespace loom::abi;

namespace {

using ConvFn = void (*)(Unranked *, Unranked *, Unranked *, int32_t, int32_t,
                        int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                        int64_t, int64_t, int64_t);

ConvFn conv() {
  return reinterpret_cast<ConvFn>(
      dlsym(RTLD_DEFAULT, "_mlir_ciface_loom_cpu_conv2d_i8"));
}

/// A dense row-major descriptor of `shape` over `data`.
struct Desc {
  Desc(const void *data, std::vector<int64_t> shape) {
    int64_t rank = static_cast<int64_t>(shape.size());
    words = {reinterpret_cast<int64_t>(data), reinterpret_cast<int64_t>(data),
             0};
    words.insert(words.end(), shape.begin(), shape.end());
    std::vector<int64_t> strides(rank);
    int64_t s = 1;
    for (int64_t i = rank - 1; i >= 0; --i) {
      strides[i] = s;
      s *= shape[i];
    }
    words.insert(words.end(), strides.begin(), strides.end());
    unranked = {rank, words.data()};
  }
  std::vector<int64_t> words;
  Unranked unranked;
};

struct Case {
  int64_t n, c, h, w, o, groups, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
  bool inUnsigned;
  int32_t inZero;
};

/// NCHW [n, c, h, w] of `v` read as NHWC when `nhwc`.
int64_t at(bool nhwc, int64_t C, int64_t H, int64_t W, int64_t n, int64_t c,
           int64_t y, int64_t x) {
  return nhwc ? ((n * H + y) * W + x) * C + c : ((n * C + c) * H + y) * W + x;
}

void run(const Case &k, bool nhwcIn, bool nhwcOut, bool overwrite,
         bool constant) {
  ConvFn f = conv();
  ASSERT_NE(f, nullptr);
  std::mt19937 gen(7);
  std::uniform_int_distribution<int> byte(0, 255), small(-100, 100);
  int64_t cg = k.c / k.groups, og = k.o / k.groups;
  int64_t oh = (k.h + k.pt + k.pb - k.dh * (k.kh - 1) - 1) / k.sh + 1;
  int64_t ow = (k.w + k.pl + k.pr - k.dw * (k.kw - 1) - 1) / k.sw + 1;
  std::vector<int8_t> in(k.n * k.c * k.h * k.w), filter(k.o * cg * k.kh * k.kw);
  for (int8_t &v : in)
    v = static_cast<int8_t>(byte(gen));
  for (int8_t &v : filter)
    v = static_cast<int8_t>(byte(gen));
  std::vector<int32_t> out(k.n * k.o * oh * ow), want(out.size());
  for (size_t i = 0; i < out.size(); ++i)
    want[i] = out[i] = overwrite ? 12345 : small(gen);
  // The reference, NCHW.
  std::vector<int32_t> ref(out.size());
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t o = 0; o < k.o; ++o)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x) {
          int64_t g = o / og;
          int32_t sum = 0;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t i = 0; i < k.kh; ++i)
              for (int64_t j = 0; j < k.kw; ++j) {
                int64_t iy = y * k.sh + i * k.dh - k.pt,
                        ix = x * k.sw + j * k.dw - k.pl;
                if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w)
                  continue;
                int8_t b = in[at(nhwcIn, k.c, k.h, k.w, n, g * cg + c, iy, ix)];
                int32_t a = k.inUnsigned ? static_cast<uint8_t>(b) : b;
                sum += (a - k.inZero) *
                       filter[((o * cg + c) * k.kh + i) * k.kw + j];
              }
          int64_t idx = at(nhwcOut, k.o, oh, ow, n, o, y, x);
          ref[idx] = overwrite ? sum : want[idx] + sum;
        }
  Desc I(in.data(), {k.n, k.c, k.h, k.w}),
      W(filter.data(), {k.groups, og, cg, k.kh, k.kw}),
      O(out.data(), {k.n, k.o, oh, ow});
  int64_t flags = (k.inUnsigned ? kIntegerConvInUnsigned : 0) |
                  (overwrite ? kIntegerConvOverwrite : 0) |
                  (constant ? kIntegerConvConstantFilter : 0) |
                  (nhwcIn ? kIntegerConvInNhwc : 0) |
                  (nhwcOut ? kIntegerConvOutNhwc : 0);
  // Twice: a kept filter is read reordered the second time.
  for (int round = 0; round < 2; ++round) {
    out = want;
    f(&I.unranked, &W.unranked, &O.unranked, k.inZero, 0, k.sh, k.sw, k.dh,
      k.dw, k.pt, k.pl, k.pb, k.pr, flags);
    ASSERT_EQ(out, ref) << "round " << round;
  }
}

const Case kCases[] = {
    // n, c, h, w, o, groups, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, u8, zero
    {2, 16, 9, 9, 32, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, 255},
    {1, 8, 11, 7, 12, 2, 3, 2, 2, 1, 1, 2, 0, 1, 2, 1, false, -128},
    {2, 8, 6, 6, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, 127},
    {1, 32, 5, 5, 16, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, true, 0},
};

TEST(CpuIntegerConv, MatchesReference) {
  for (const Case &k : kCases)
    for (bool overwrite : {true, false})
      run(k, false, false, overwrite, /*constant=*/false);
}

TEST(CpuIntegerConv, KeptFilter) {
  for (const Case &k : kCases)
    run(k, false, false, true, /*constant=*/true);
}

TEST(CpuIntegerConv, Nhwc) {
  for (const Case &k : kCases) {
    run(k, true, false, true, false);
    run(k, false, true, false, false);
    run(k, true, true, true, true);
  }
}

} // namespace
