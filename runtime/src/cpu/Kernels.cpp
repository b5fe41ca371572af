//===- Kernels.cpp - library kernels the generated CPU code calls ---------===//
//
// GEMM is oneDNN's sgemm on CPUs with AVX-512 (about twice OpenBLAS
// 0.3.21's speed there: OpenBLAS runs its Haswell kernels on Zen 4) and
// OpenBLAS's sgemm on the others (1.8x oneDNN's speed on an AVX2-only
// EPYC: 47 vs 85 ms for the MLP at batch 64, bench/cpu_inference) when
// the run is single-threaded: with more threads OpenBLAS's own pthreads
// fight the OpenMP threads that run convolution images, and oneDNN stays.
// LOOM_CPU_GEMM=onednn|openblas overrides the choice. A matrix times a
// vector is OpenBLAS's sgemv (on one OpenBLAS thread, split over the
// OpenMP threads), which reads the matrix once at memory speed where
// oneDNN's sgemm is about 35% slower there. A rhs that is a weight of the
// artifact (kMatmulConstantRhs) goes to oneDNN's matmul primitive instead,
// which keeps it packed in its blocked layout (MatmulPrimitive.cpp; 10-25%
// faster than sgemm, which packs it again on every call, at GPT-2's 128
// rows, and 1.5-2.4x faster than sgemv for one row;
// LOOM_CPU_PACKED_WEIGHTS=0 turns it off). Convolutions are in
// Convolution.cpp.
//
// Generated code calls these through MLIR's C interface
// (`_mlir_ciface_<name>`, memrefs passed as pointers to unranked
// descriptors). They are exported by libloom_runtime.so, which the loader
// puts in the global symbol scope before it loads an artifact's code.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/cpu/Kernels.h"
#include "runtime/src/cpu/MatmulPrimitive.h"

#include "loom/common/CodegenAbi.h"
#include "runtime/src/ThreadPool.h"

#include <cblas.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

namespace loom::runtime::cpu {

View view(const Unranked *u) {
  auto *words = static_cast<int64_t *>(u->descriptor);
  auto *aligned = reinterpret_cast<float *>(static_cast<intptr_t>(words[1]));
  return {aligned + words[2], u->rank, words + 3, words + 3 + u->rank};
}

char *elementsOf(const Unranked *u, int64_t elementBytes) {
  auto *words = static_cast<int64_t *>(u->descriptor);
  return reinterpret_cast<char *>(static_cast<intptr_t>(words[1])) +
         words[2] * elementBytes;
}

} // namespace loom::runtime::cpu

using namespace loom::runtime::cpu;

namespace {

/// The calling thread's run's thread count (the runtime's, else OpenMP's).
int runThreads() {
  int threads = loom::runtime::currentThreads();
  return threads > 0 ? threads : omp_get_max_threads();
}

} // namespace

namespace loom::runtime::cpu {

/// Whether this call's GEMMs go to oneDNN (else OpenBLAS): see the file
/// comment. Decided on the calling thread, which carries the run's thread
/// count.
bool gemmOnOneDnn() {
  static const int forced = [] {
    const char *e = std::getenv("LOOM_CPU_GEMM");
    return !e ? -1 : std::strcmp(e, "openblas") != 0;
  }();
  if (forced >= 0)
    return forced;
  if (__builtin_cpu_supports("avx512f"))
    return true;
  return runThreads() != 1;
}

/// LOOM_CPU_PACKED_WEIGHTS=0: the artifact's weights go to sgemm like
/// any other rhs (for comparisons).
static bool packedWeightsOff() {
  static const bool off = [] {
    const char *e = std::getenv("LOOM_CPU_PACKED_WEIGHTS");
    return e && std::strcmp(e, "0") == 0;
  }();
  return off;
}

/// C = A * B + beta * C (row-major) with oneDNN's or OpenBLAS's sgemm;
/// beta 0 does not read C.
void sgemm(bool oneDnn, bool transA, bool transB, int64_t m, int64_t n,
           int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb,
           float beta, float *c, int64_t ldc) {
  if (oneDnn) {
    dnnl_sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', m, n, k, 1.0f, a, lda, b,
               ldb, beta, c, ldc);
    return;
  }
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), 1.0f, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
              static_cast<int>(ldc));
}

} // namespace loom::runtime::cpu

namespace {

/// y = op(A) x + beta y, A row-major m x n (op: A^T when `trans`), with
/// OpenBLAS's sgemv. OpenBLAS keeps to one thread of its own (its pthreads
/// fought OpenMP's: after a oneDNN convolution, whose OpenMP threads spin
/// a while, ResNet-18's 512 x 1000 classifier took 1.5-2.8 ms instead of
/// 0.11 at two threads); a large multi-threaded product is split over the
/// OpenMP threads instead, each taking a block of y.
void sgemv(bool trans, int64_t m, int64_t n, const float *a, int64_t lda,
           const float *x, int64_t incx, float beta, float *y, int64_t incy) {
  static const bool single = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)single;
  auto part = [&](int64_t lo, int64_t hi) {
    // Rows [lo, hi) of A, or its columns [lo, hi) when transposed.
    if (lo >= hi)
      return;
    cblas_sgemv(CblasRowMajor, trans ? CblasTrans : CblasNoTrans,
                static_cast<int>(trans ? m : hi - lo),
                static_cast<int>(trans ? hi - lo : n), 1.0f,
                trans ? a + lo : a + lo * lda, static_cast<int>(lda), x,
                static_cast<int>(incx), beta, y + lo * incy,
                static_cast<int>(incy));
  };
  int64_t outputs = trans ? n : m;
  int threads = runThreads();
  // Below a quarter million elements one thread reads A in microseconds.
  if (threads <= 1 || m * n < (int64_t{1} << 18) || outputs < 64) {
    part(0, outputs);
    return;
  }
  // Blocks of y a multiple of 16 (whole cache lines of it).
  int64_t chunk = (outputs + threads - 1) / threads;
  chunk = (chunk + 15) / 16 * 16;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int t = 0; t < threads; ++t)
    part(std::min(outputs, t * chunk), std::min(outputs, (t + 1) * chunk));
}

} // namespace

namespace loom::runtime::cpu {

MatmulPlan planMatmul(const View &L, const View &R, const View &O,
                      int64_t flags) {
  using namespace loom::abi;
  MatmulPlan p;
  bool transL = flags & kMatmulTransposeLhs,
       transR = flags & kMatmulTransposeRhs;
  p.lhsVec = flags & kMatmulLhsVector;
  p.rhsVec = flags & kMatmulRhsVector;
  int64_t om = (p.lhsVec ? 0 : 1) + (p.rhsVec ? 0 : 1);
  p.batch = O.rank - om;
  // Sizes and strides of the matrices (a vector is one row or column).
  if (p.lhsVec) {
    p.M = 1, p.K = L.sizes[L.rank - 1];
    p.lsm = 0, p.lsk = L.strides[L.rank - 1];
  } else {
    int64_t a = L.rank - 2, b = L.rank - 1;
    p.M = transL ? L.sizes[b] : L.sizes[a];
    p.K = transL ? L.sizes[a] : L.sizes[b];
    p.lsm = transL ? L.strides[b] : L.strides[a];
    p.lsk = transL ? L.strides[a] : L.strides[b];
  }
  if (p.rhsVec) {
    p.N = 1, p.rsk = R.strides[R.rank - 1], p.rsn = 0;
  } else {
    int64_t a = R.rank - 2, b = R.rank - 1;
    p.N = transR ? R.sizes[a] : R.sizes[b];
    p.rsk = transR ? R.strides[b] : R.strides[a];
    p.rsn = transR ? R.strides[a] : R.strides[b];
  }
  p.osm = p.lhsVec ? 0 : O.strides[p.batch];
  p.osn = p.rhsVec ? 0 : O.strides[O.rank - 1];
  p.count = 1;
  for (int64_t i = 0; i < p.batch; ++i)
    p.count *= O.sizes[i];
  // A batch of row-major lhs matrices times one shared rhs (a Linear layer
  // on [batch, tokens, features]) is one GEMM with count * M rows when the
  // lhs and output rows run on with one stride across the batch dims: the
  // rhs is packed once instead of once per matrix.
  int64_t rm = p.rhsVec ? 1 : 2;
  if (p.count > 1 && !p.lhsVec && !transL && L.rank == O.rank) {
    bool shared = true;
    for (int64_t i = 0; shared && i < R.rank - rm; ++i)
      shared = R.sizes[i] == 1;
    bool rows = shared;
    int64_t lstride = p.lsm, ostride = p.osm, size = p.M;
    for (int64_t i = p.batch; rows && i-- > 0;) {
      rows = L.sizes[i] == O.sizes[i] && L.strides[i] == size * lstride &&
             O.strides[i] == size * ostride;
      lstride = L.strides[i], ostride = O.strides[i], size = O.sizes[i];
    }
    if (rows) {
      p.M *= p.count;
      p.count = 1;
    }
  }
  // The stride of a vector's missing dim is never used: one BLAS accepts.
  if (p.N == 1)
    p.osn = 1;
  if (p.M == 1 && p.osn == 1)
    p.osm = std::max<int64_t>(1, p.N);
  return p;
}

void forEachMatrix(const MatmulPlan &p, const View &L, const View &R,
                   const View &O,
                   const std::function<void(int64_t, int64_t, int64_t)> &f) {
  int64_t lm = p.lhsVec ? 1 : 2, rm = p.rhsVec ? 1 : 2;
  std::vector<int64_t> idx(static_cast<size_t>(p.batch), 0);
  for (int64_t b = 0; b < p.count; ++b) {
    // Offsets of this batch element in each operand (broadcast dims
    // contribute nothing).
    int64_t offL = 0, offR = 0, offO = 0;
    for (int64_t i = 0; i < p.batch; ++i) {
      offO += idx[i] * O.strides[i];
      int64_t jl = i - (p.batch - (L.rank - lm));
      if (jl >= 0 && L.sizes[jl] != 1)
        offL += idx[i] * L.strides[jl];
      int64_t jr = i - (p.batch - (R.rank - rm));
      if (jr >= 0 && R.sizes[jr] != 1)
        offR += idx[i] * R.strides[jr];
    }
    f(offL, offR, offO);
    for (int64_t i = p.batch; i-- > 0;) {
      if (++idx[i] < O.sizes[i])
        break;
      idx[i] = 0;
    }
  }
}

} // namespace loom::runtime::cpu

extern "C" {

/// out[batch..., m, n] += lhs[batch..., m, k] * rhs[batch..., k, n], f32.
/// `flags`: bit 0 lhs holds [k, m] (transposed), bit 1 rhs holds [n, k],
/// bit 2 lhs is a vector [k] (no m dim), bit 3 rhs is a vector [k] (no n
/// dim), bit 4 the output is overwritten (=) instead of accumulated into
/// (the generated code drops its zero fill). Batch dims broadcast
/// NumPy-style (right-aligned, size 1 widens).
__attribute__((visibility("default"))) void
LOOM_ABI_CIFACE(LOOM_ABI_CPU_MATMUL_F32)(Unranked *lhsU, Unranked *rhsU,
                                         Unranked *outU, int64_t flags) {
  bool oneDnn = gemmOnOneDnn();
  bool overwrite = flags & loom::abi::kMatmulOverwrite;
  float beta = overwrite ? 0.0f : 1.0f;
  View L = view(lhsU), R = view(rhsU), O = view(outU);
  MatmulPlan p = planMatmul(L, R, O, flags);
  int64_t M = p.M, N = p.N, K = p.K;
  if (M == 0 || N == 0)
    return;
  // A weight of the artifact read in place goes to oneDNN's matmul
  // primitive, which keeps it packed (MatmulPrimitive.cpp).
  bool keep =
      oneDnn && (flags & loom::abi::kMatmulConstantRhs) && !packedWeightsOff();
  std::vector<float> packL, packR, packO;
  forEachMatrix(p, L, R, O, [&](int64_t offL, int64_t offR, int64_t offO) {
    auto same = [](float v) { return v; };
    Matrix<float> a = gemmMatrix<float>(L.data + offL, M, K, p.lsm, p.lsk,
                                        false, packL, same);
    Matrix<float> bm = gemmMatrix<float>(R.data + offR, K, N, p.rsk, p.rsn,
                                         false, packR, same);
    GemmOutput<float> out(O.data + offO, p, overwrite, packO);
    float *cdata = out.data;
    if (K == 0) {
      // Nothing to add; an overwritten output is zero.
      if (overwrite && !out.packed())
        for (int64_t r = 0; r < M; ++r)
          for (int64_t col = 0; col < N; ++col)
            cdata[r * out.ld + col] = 0.0f;
    } else if (N > 1 && keep && bm.data == R.data + offR &&
               matmulPrimitive(
                   {M, N, K, a.ld, bm.ld, out.ld, a.trans, bm.trans,
                    /*accumulate=*/!overwrite,
                    /*srcZeroPoint=*/false, dnnl_f32, dnnl_f32, dnnl_f32},
                   a.data, 0, [&] { return bm.data; }, true, bm.data, cdata)) {
      // Done on the weight kept packed; for one row too, where it reads
      // the packed weight at about twice sgemv's speed on two threads (the
      // MLP at batch 1, bench/cpu_inference).
    } else if (M == 1) {
      // A row times a matrix: sgemv reads the matrix once, where sgemm
      // would pack it first.
      int incx = a.trans ? static_cast<int>(a.ld) : 1;
      sgemv(!bm.trans, bm.trans ? N : K, bm.trans ? K : N, bm.data, bm.ld,
            a.data, incx, beta, cdata, 1);
    } else if (N == 1) {
      int incx = bm.trans ? 1 : static_cast<int>(bm.ld);
      sgemv(a.trans, a.trans ? K : M, a.trans ? M : K, a.data, a.ld, bm.data,
            incx, beta, cdata, out.ld);
    } else {
      sgemm(oneDnn, a.trans, bm.trans, M, N, K, a.data, a.ld, bm.data, bm.ld,
            beta, cdata, out.ld);
    }
    out.finish();
  });
}

} // extern "C"
