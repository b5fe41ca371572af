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

/// Whether this call's GEMMs go to oneDNN (else OpenBLAS): see Kernels.cpp.
/// Decided on the calling thread, which carries the run's thread count.
bool gemmOnOneDnn();

/// C = A * B + beta * C (row-major) with oneDNN's or OpenBLAS's sgemm;
/// beta 0 does not read C.
void sgemm(bool oneDnn, bool transA, bool transB, int64_t m, int64_t n,
           int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb,
           float beta, float *c, int64_t ldc);

/// Drops the filters the convolutions keep reordered (see
/// kConvConstantFilter): called when an artifact's weights go away.
void forgetPackedFilters();

} // namespace loom::runtime::cpu

#endif // LOOM_RUNTIME_CPU_KERNELS_H
