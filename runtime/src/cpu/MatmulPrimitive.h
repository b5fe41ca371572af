//===- MatmulPrimitive.h - oneDNN's matmul primitive ------------*- C++ -*-===//
//
// The f32 and 8-bit GEMMs' shared path through oneDNN's matmul primitive,
// with weights of the artifact kept packed (MatmulPrimitive.cpp). Internal
// to the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CPU_MATMULPRIMITIVE_H
#define LOOM_RUNTIME_CPU_MATMULPRIMITIVE_H

#include <oneapi/dnnl/dnnl.h>

#include <cstdint>
#include <functional>

namespace loom::runtime::cpu {

/// One product's shape, layouts and types, as the primitive is keyed:
/// A [M, K] (leading dim lda, [K, M] when transA), B [K, N] likewise, C
/// [M, N] row-major with leading dim ldc.
struct PrimitiveShape {
  int64_t M, N, K, lda, ldb, ldc;
  bool transA, transB;
  /// C += A B (a sum post-op), else C = A B.
  bool accumulate;
  /// A's zero point is a run-time scalar (the 8-bit path).
  bool srcZeroPoint;
  dnnl_data_type_t src, wei, dst;
};

/// C (+)= (A - srcZero) B with the primitive; B is made by `rhs()` (called
/// only when B is not kept packed already); a `constantB` (an artifact's
/// weight) is kept packed under `key`, its address. False when oneDNN has
/// no implementation for the shape or refused before writing C.
bool matmulPrimitive(const PrimitiveShape &shape, const void *a,
                     int32_t srcZero, const std::function<const void *()> &rhs,
                     bool constantB, const void *key, void *c);

} // namespace loom::runtime::cpu

#endif // LOOM_RUNTIME_CPU_MATMULPRIMITIVE_H
