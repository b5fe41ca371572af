//===- Kernels.h - what the CPU library kernels share -----------*- C++ -*-===//
//
// The memref descriptors the generated code passes (MLIR's C interface)
// and the GEMM the kernels of Kernels.cpp and Convolution.cpp call.
// Internal to the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CPU_KERNELS_H
#define LOOM_RUNTIME_CPU_KERNELS_H

#include <cstdint>
#include <functional>

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

} // namespace loom::runtime::cpu

#endif // LOOM_RUNTIME_CPU_KERNELS_H
