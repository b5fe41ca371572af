//===- CpuMatmulTest.cpp - the f32 GEMM with weights kept packed ----------===//
//
// loom_cpu_matmul_f32 called as the generated code calls it (the symbol
// libloom_runtime.so exports, unranked descriptors), with and without
// kMatmulConstantRhs: a weight of the artifact goes to oneDNN's matmul
// primitive, packed on the first call and read packed after; results
// equal plain loops in every layout (transposed rhs, accumulation, rows
// that fold a batch). A weight in a registered mapped file gives its
// pages back once packed; memory that is not mapped is left alone.
//
//===----------------------------------------------------------------------===//

#include "loom/common/CodegenAbi.h"
#include "loom/common/FileIO.h"
#include "runtime/src/MappedWeights.h"
#include "runtime/src/cpu/Kernels.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

using loom::runtime::cpu::Unranked;
using namespace loom::abi;

namespace {

using MatmulFn = void (*)(Unranked *, Unranked *, Unranked *, int64_t);

MatmulFn matmul() {
  return reinterpret_cast<MatmulFn>(
      dlsym(RTLD_DEFAULT, "_mlir_ciface_loom_cpu_matmul_f32"));
}

/// A dense row-major descriptor of `shape` over `data`.
struct Desc {
  Desc(const float *data, std::vector<int64_t> shape) {
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

std::vector<float> randoms(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(gen);
  return v;
}

/// out[rows, n] (+)= lhs[rows, k] * rhs ([k, n], or [n, k] when `transRhs`).
std::vector<float> reference(const std::vector<float> &lhs,
                             const std::vector<float> &rhs,
                             std::vector<float> out, int64_t rows, int64_t k,
                             int64_t n, bool transRhs, bool overwrite) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < n; ++c) {
      double sum = overwrite ? 0.0 : out[r * n + c];
      for (int64_t i = 0; i < k; ++i)
        sum += double(lhs[r * k + i]) * rhs[transRhs ? c * k + i : i * n + c];
      out[r * n + c] = static_cast<float>(sum);
    }
  return out;
}

struct Case {
  int64_t batch, m, k, n;
  bool transRhs, overwrite;
};

std::string nameOf(const Case &c) {
  return "b" + std::to_string(c.batch) + "_m" + std::to_string(c.m) + "_k" +
         std::to_string(c.k) + "_n" + std::to_string(c.n) +
         (c.transRhs ? "_rhsT" : "") + (c.overwrite ? "" : "_acc");
}

void PrintTo(const Case &c, std::ostream *os) { *os << nameOf(c); }

class CpuMatmul : public ::testing::TestWithParam<Case> {};

TEST_P(CpuMatmul, ConstantRhsEqualsLoopsAndStaysPacked) {
  const Case c = GetParam();
  MatmulFn fn = matmul();
  ASSERT_NE(fn, nullptr);
  int64_t rows = c.batch * c.m;
  std::vector<float> lhs = randoms(rows * c.k, 1), rhs = randoms(c.k * c.n, 2),
                     init = randoms(rows * c.n, 3);
  std::vector<int64_t> lhsShape = {c.batch, c.m, c.k},
                       outShape = {c.batch, c.m, c.n};
  std::vector<int64_t> rhsShape = c.transRhs ? std::vector<int64_t>{c.n, c.k}
                                             : std::vector<int64_t>{c.k, c.n};
  int64_t flags = (c.transRhs ? kMatmulTransposeRhs : 0) |
                  (c.overwrite ? kMatmulOverwrite : 0);
  std::vector<float> want =
      reference(lhs, rhs, init, rows, c.k, c.n, c.transRhs, c.overwrite);
  // The same weight three times as a constant (packed, then read packed
  // twice with other activations), and once as a plain rhs.
  for (int call = 0; call < 4; ++call) {
    bool constant = call < 3;
    std::vector<float> l = call == 1 ? randoms(rows * c.k, 7) : lhs;
    std::vector<float> expect =
        call == 1
            ? reference(l, rhs, init, rows, c.k, c.n, c.transRhs, c.overwrite)
            : want;
    std::vector<float> out = init;
    Desc L(l.data(), lhsShape), R(rhs.data(), rhsShape),
        O(out.data(), outShape);
    fn(&L.unranked, &R.unranked, &O.unranked,
       flags | (constant ? kMatmulConstantRhs : 0));
    for (size_t i = 0; i < out.size(); ++i)
      ASSERT_NEAR(out[i], expect[i], 1e-4f * (1 + std::fabs(expect[i])))
          << "call " << call << ", element " << i;
  }
  // Packs are kept by address: this weight's goes with it.
  loom::runtime::cpu::forgetPackedFilters();
}

INSTANTIATE_TEST_SUITE_P(Layouts, CpuMatmul,
                         ::testing::Values(Case{1, 128, 96, 80, false, true},
                                           Case{1, 128, 96, 80, true, true},
                                           Case{2, 64, 160, 48, false, false},
                                           Case{3, 17, 33, 65, true, false},
                                           Case{1, 2, 768, 1000, true, true},
                                           // One row (no longer sgemv).
                                           Case{1, 1, 1024, 4096, false, true},
                                           Case{1, 1, 512, 1000, true, false},
                                           Case{3, 1, 64, 48, false, true}),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           return nameOf(info.param);
                         });

/// The resident bytes of the mapping that holds `p` (/proc/self/smaps).
int64_t residentBytes(const void *p) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  auto at = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long lo, hi;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 &&
        line.find(':') > line.find('-')) {
      inside = at >= lo && at < hi;
      continue;
    }
    if (inside && line.rfind("Rss:", 0) == 0)
      return std::stoll(line.substr(4)) * 1024;
  }
  return -1;
}

TEST(MappedWeights, PackedWeightsGiveTheirPagesBack) {
  if (!loom::runtime::cpu::gemmOnOneDnn())
    GTEST_SKIP() << "GEMMs go to OpenBLAS here (one thread, no AVX-512): "
                    "no weights are kept packed";
  std::string path = ::testing::TempDir() + "/mapped-weights.bin";
  const int64_t k = 1024, n = 1024; // 4 MiB of f32
  std::vector<float> rhs = randoms(k * n, 5);
  {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char *>(rhs.data()),
            static_cast<std::streamsize>(rhs.size() * sizeof(float)));
  }
  loom::files::MappedFile file;
  std::string error;
  ASSERT_TRUE(file.open(path, error)) << error;
  loom::runtime::registerMappedFile(&file);
  auto *weight = reinterpret_cast<const float *>(file.data());
  volatile float sum = 0;
  for (int64_t i = 0; i < k * n; i += 1024)
    sum = sum + weight[i];
  EXPECT_GE(residentBytes(weight), int64_t(3) << 20);

  std::vector<float> lhs = randoms(64 * k, 6), out(64 * n);
  Desc L(lhs.data(), {64, k}), R(weight, {k, n}), O(out.data(), {64, n});
  matmul()(&L.unranked, &R.unranked, &O.unranked,
           kMatmulOverwrite | kMatmulConstantRhs);
  // Packed and released: the mapping holds (almost) nothing, and the
  // weight reads back from the file.
  EXPECT_LT(residentBytes(weight), int64_t(1) << 20);
  EXPECT_EQ(std::memcmp(weight, rhs.data(), rhs.size() * sizeof(float)), 0);
  std::vector<float> want =
      reference(lhs, rhs, std::vector<float>(64 * n), 64, k, n, false, true);
  for (size_t i = 0; i < out.size(); i += 97)
    ASSERT_NEAR(out[i], want[i], 1e-3f) << i;

  // Memory outside a registered file is never released.
  std::vector<float> heap = rhs;
  loom::runtime::releaseMappedWeight(heap.data(), heap.size() * 4);
  EXPECT_EQ(heap, rhs);
  loom::runtime::cpu::forgetPackedFilters();
  loom::runtime::unregisterMappedFile(&file);
  std::remove(path.c_str());
}

} // namespace
