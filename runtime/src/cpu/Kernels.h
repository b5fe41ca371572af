//===- Kernels.h - what the CPU library kernels share -----------*- C++ -*-===//
//
// The memref descriptors the generated code passes (MLIR's C interface)
// and the GEMM the kernels of Kernels.cpp and Convolution.cpp call.
// Internal to the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CPU_KERNELS_H
#define LOOM_RUNTIME_CPU_KERNELS_H

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

namespace loom::runtime::cpu {

/// MLIR's unranked memref descriptor, and a view of the ranked one it
/// points to: allocated, aligned, offset, sizes[rank], strides[rank].
struct Unranked {
  int64_t rank;
  void *descriptor;
};

struct View {
  float *data;
  int64_t rank;
  const int64_t *sizes;
  const int64_t *strides;
};

View view(const Unranked *u);

/// The first element of `u`'s view when its elements are `elementBytes`
/// wide (View::data assumes 4).
char *elementsOf(const Unranked *u, int64_t elementBytes);

/// How a matmul call (loom::abi::MatmulFlags, loom_cpu_matmul_f32) maps to
/// GEMMs: `count` products of M x K by K x N, each operand's strides
/// (lsm, lsk: lhs along m and k; rsk, rsn; osm, osn) in elements; batch
/// dims that run on with the rows fold into M.
struct MatmulPlan {
  bool lhsVec = false, rhsVec = false;
  int64_t batch = 0, count = 1;
  int64_t M = 0, N = 0, K = 0;
  int64_t lsm = 0, lsk = 0, rsk = 0, rsn = 0, osm = 0, osn = 0;
};

MatmulPlan planMatmul(const View &lhs, const View &rhs, const View &out,
                      int64_t flags);

/// A GEMM operand of `rows x cols` elements: row-major with leading dim
/// `ld`, or (`trans`) column-major.
template <typename T> struct Matrix {
  const T *data;
  bool trans;
  int64_t ld;
};

/// The matrix at `base` with element strides `rowStride`, `colStride` as a
/// GEMM reads it: in place when one stride is 1 (and `pack` is false),
/// else copied row-major into `scratch` through `convert`.
template <typename T, typename Convert>
Matrix<T> gemmMatrix(const T *base, int64_t rows, int64_t cols,
                     int64_t rowStride, int64_t colStride, bool pack,
                     std::vector<T> &scratch, Convert convert) {
  // The stride of a dim of size 1 is never used: pick the one BLAS likes.
  if (cols == 1)
    colStride = 1;
  if (rows == 1)
    rowStride = colStride == 1 ? std::max<int64_t>(1, cols) : 1;
  if (!pack && colStride == 1 && rowStride >= std::max<int64_t>(1, cols))
    return {base, false, rowStride};
  if (!pack && rowStride == 1 && colStride >= std::max<int64_t>(1, rows))
    return {base, true, colStride};
  scratch.resize(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      scratch[r * cols + c] = convert(base[r * rowStride + c * colStride]);
  return {scratch.data(), false, std::max<int64_t>(1, cols)};
}

/// The output of one product, `c` with the plan's strides, as a GEMM
/// writes it: in place when its rows are dense, else a row-major copy in
/// `pack` (holding c's values unless `overwrite`) that finish() writes
/// back.
template <typename T> class GemmOutput {
public:
  GemmOutput(T *c, const MatmulPlan &p, bool overwrite, std::vector<T> &pack)
      : c_(c), p_(p), pack_(pack),
        packed_(!(p.osn == 1 && p.osm >= std::max<int64_t>(1, p.N))) {
    data = c;
    ld = p.osm;
    if (!packed_)
      return;
    pack.resize(static_cast<size_t>(p.M * p.N));
    for (int64_t r = 0; r < p.M; ++r)
      for (int64_t col = 0; col < p.N; ++col)
        pack[r * p.N + col] = overwrite ? T(0) : c[r * p.osm + col * p.osn];
    data = pack.data();
    ld = std::max<int64_t>(1, p.N);
  }
  bool packed() const { return packed_; }
  void finish() {
    if (packed_)
      for (int64_t r = 0; r < p_.M; ++r)
        for (int64_t col = 0; col < p_.N; ++col)
          c_[r * p_.osm + col * p_.osn] = pack_[r * p_.N + col];
  }

  T *data;
  int64_t ld;

private:
  T *c_;
  const MatmulPlan &p_;
  std::vector<T> &pack_;
  bool packed_;
};

/// Calls `f(lhsOffset, rhsOffset, outOffset)` (in elements) for each of
/// the plan's `count` products, batch dims broadcast NumPy-style.
void forEachMatrix(const MatmulPlan &plan, const View &lhs, const View &rhs,
                   const View &out,
                   const std::function<void(int64_t, int64_t, int64_t)> &f);

/// Whether this call's GEMMs go to oneDNN (else OpenBLAS): see Kernels.cpp.
/// Decided on the calling thread, which carries the run's thread count.
bool gemmOnOneDnn();

/// C = A * B + beta * C (row-major) with oneDNN's or OpenBLAS's sgemm;
/// beta 0 does not read C.
void sgemm(bool oneDnn, bool transA, bool transB, int64_t m, int64_t n,
           int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb,
           float beta, float *c, int64_t ldc);

/// Drops the filters the convolutions keep reordered (see
/// kConvConstantFilter) and the rhs the integer matmuls keep packed
/// (kMatmulConstantRhs): called when an artifact's weights go away.
void forgetPackedFilters();

/// The integer matmuls' part of forgetPackedFilters (IntegerMatmul.cpp).
void forgetPackedMatmulRhs();

/// Drops the filters the integer convolutions keep reordered
/// (kIntegerConvConstantFilter; IntegerConvolution.cpp): called with
/// forgetPackedFilters when an artifact's weights go away.
void forgetPackedIntegerConvFilters();

} // namespace loom::runtime::cpu

#endif // LOOM_RUNTIME_CPU_KERNELS_H
