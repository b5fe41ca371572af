//===- IntegerMatmul.cpp - the 8-bit integer GEMM ------------------------===//
//
// `out (+)= (lhs - lhsZero) x (rhs - rhsZero)`, exact in i32, for 8-bit
// operands (graph.matmul_integer; ONNX MatMulInteger, QLinearMatMul, and
// DequantizeLinear -> MatMul made integer by --loom-integer-matmul). Each
// product is oneDNN's integer GEMM: dnnl_gemm_u8s8s32 for an unsigned lhs,
// dnnl_gemm_s8s8s32 for a signed one; both take a signed rhs, so an
// unsigned rhs is copied less 128 (its zero point too). The zero points go
// to oneDNN as its A and B offsets.
//
// oneDNN's integer GEMM is exact only where the CPU has VNNI (AVX512-VNNI
// or AVX-VNNI): without it the u8 x s8 pairs are summed in saturating
// 16-bit lanes (vpmaddubsw), which is why ONNX Runtime's quantizer offers
// `reduce_range`. There, and for a zero point outside its operand's
// range, a plain loop computes the exact sums instead.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/cpu/Kernels.h"

#include "loom/common/CodegenAbi.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace loom::runtime::cpu;

namespace {

/// Whether oneDNN's integer GEMM sums exactly on this CPU (see the file
/// comment); LOOM_CPU_IGEMM=loops forces the loops.
bool exactOneDnn() {
  static const bool exact = [] {
    const char *e = std::getenv("LOOM_CPU_IGEMM");
    if (e && std::strcmp(e, "loops") == 0)
      return false;
    unsigned isa = dnnl_get_effective_cpu_isa();
    auto has = [&](unsigned bits) { return (isa & bits) == bits; };
    return has(dnnl_cpu_isa_avx512_core_vnni) || has(dnnl_cpu_isa_avx2_vnni);
  }();
  return exact;
}

/// An 8-bit operand as oneDNN takes it: row-major (`trans`: stored
/// transposed) with leading dim `ld`, and signed unless `toSigned` was
/// false. Copied (row-major, and less 128 when it is unsigned and must be
/// signed) when its strides do not fit or its type must change.
struct Bytes {
  const void *data;
  bool trans;
  int64_t ld;
};

Bytes bytesFor(const int8_t *base, int64_t rows, int64_t cols,
               int64_t rowStride, int64_t colStride, bool flip,
               std::vector<int8_t> &scratch) {
  if (cols == 1)
    colStride = 1;
  if (rows == 1)
    rowStride = colStride == 1 ? std::max<int64_t>(1, cols) : 1;
  if (!flip && colStride == 1 && rowStride >= std::max<int64_t>(1, cols))
    return {base, false, rowStride};
  if (!flip && rowStride == 1 && colStride >= std::max<int64_t>(1, rows))
    return {base, true, colStride};
  scratch.resize(static_cast<size_t>(rows * cols));
  // x ^ 0x80 is x - 128 for an unsigned byte read back signed.
  uint8_t mask = flip ? 0x80 : 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      scratch[r * cols + c] = static_cast<int8_t>(
          static_cast<uint8_t>(base[r * rowStride + c * colStride]) ^ mask);
  return {scratch.data(), false, std::max<int64_t>(1, cols)};
}

/// The value of byte `b` as its operand's type.
inline int32_t valueOf(int8_t b, bool isUnsigned) {
  return isUnsigned ? static_cast<uint8_t>(b) : b;
}

} // namespace

extern "C" {

/// out[batch..., m, n] (+)= sum_k (lhs[..., m, k] - lhsZero) * (rhs[..., k,
/// n] - rhsZero) in i32; shapes, broadcasting and `flags` as
/// loom_cpu_matmul_f32's, plus kMatmulLhsUnsigned / kMatmulRhsUnsigned.
__attribute__((visibility("default"))) void
LOOM_ABI_CIFACE(LOOM_ABI_CPU_MATMUL_I8)(Unranked *lhsU, Unranked *rhsU,
                                        Unranked *outU, int32_t lhsZero,
                                        int32_t rhsZero, int64_t flags) {
  using namespace loom::abi;
  bool overwrite = flags & kMatmulOverwrite;
  bool lhsU8 = flags & kMatmulLhsUnsigned, rhsU8 = flags & kMatmulRhsUnsigned;
  View L = view(lhsU), R = view(rhsU), O = view(outU);
  auto *lhs = reinterpret_cast<const int8_t *>(elementsOf(lhsU, 1));
  auto *rhs = reinterpret_cast<const int8_t *>(elementsOf(rhsU, 1));
  auto *out = reinterpret_cast<int32_t *>(elementsOf(outU, 4));
  MatmulPlan p = planMatmul(L, R, O, flags);
  int64_t M = p.M, N = p.N, K = p.K;
  if (M == 0 || N == 0)
    return;
  // oneDNN's offsets: A's as its type (u8 or s8), B's as s8; an unsigned
  // rhs is flipped to signed (b - 128), so its zero point is too.
  int32_t ao = lhsZero, bo = rhsU8 ? rhsZero - 128 : rhsZero;
  bool inRange = (lhsU8 ? ao >= 0 && ao <= 255 : ao >= -128 && ao <= 127) &&
                 bo >= -128 && bo <= 127;
  bool oneDnn = exactOneDnn() && inRange && K > 0;
  std::vector<int8_t> packL, packR;
  std::vector<int32_t> packO;
  forEachMatrix(p, L, R, O, [&](int64_t offL, int64_t offR, int64_t offO) {
    int32_t *c = out + offO;
    if (!oneDnn) {
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          const int8_t *a = lhs + offL + m * p.lsm;
          const int8_t *b = rhs + offR + n * p.rsn;
          int32_t sum = 0;
          for (int64_t k = 0; k < K; ++k)
            sum += (valueOf(a[k * p.lsk], lhsU8) - lhsZero) *
                   (valueOf(b[k * p.rsk], rhsU8) - rhsZero);
          int32_t &o = c[m * p.osm + n * p.osn];
          o = overwrite ? sum : o + sum;
        }
      return;
    }
    Bytes a = bytesFor(lhs + offL, M, K, p.lsm, p.lsk, false, packL);
    Bytes b = bytesFor(rhs + offR, K, N, p.rsk, p.rsn, rhsU8, packR);
    bool packedOut = !(p.osn == 1 && p.osm >= std::max<int64_t>(1, N));
    int32_t *cdata = c;
    int64_t ldc = p.osm;
    if (packedOut) {
      packO.resize(static_cast<size_t>(M * N));
      for (int64_t r = 0; r < M; ++r)
        for (int64_t col = 0; col < N; ++col)
          packO[r * N + col] = overwrite ? 0 : c[r * p.osm + col * p.osn];
      cdata = packO.data();
      ldc = std::max<int64_t>(1, N);
    }
    const int32_t co = 0;
    float beta = overwrite ? 0.0f : 1.0f;
    char ta = a.trans ? 'T' : 'N', tb = b.trans ? 'T' : 'N';
    auto *bData = static_cast<const int8_t *>(b.data);
    if (lhsU8)
      dnnl_gemm_u8s8s32(ta, tb, 'F', M, N, K, 1.0f,
                        static_cast<const uint8_t *>(a.data), a.ld,
                        static_cast<uint8_t>(ao), bData, b.ld,
                        static_cast<int8_t>(bo), beta, cdata, ldc, &co);
    else
      dnnl_gemm_s8s8s32(ta, tb, 'F', M, N, K, 1.0f,
                        static_cast<const int8_t *>(a.data), a.ld,
                        static_cast<int8_t>(ao), bData, b.ld,
                        static_cast<int8_t>(bo), beta, cdata, ldc, &co);
    if (packedOut)
      for (int64_t r = 0; r < M; ++r)
        for (int64_t col = 0; col < N; ++col)
          c[r * p.osm + col * p.osn] = packO[r * N + col];
  });
}

} // extern "C"
