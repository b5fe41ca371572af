//===- IntegerMatmul.cpp - the 8-bit integer GEMM ------------------------===//
//
// `out (+)= (lhs - lhsZero) x (rhs - rhsZero)`, exact in i32, for 8-bit
// operands (graph.matmul_integer; ONNX MatMulInteger, QLinearMatMul, and
// DequantizeLinear -> MatMul made integer by --loom-integer-matmul).
// oneDNN takes a signed rhs only, so an unsigned rhs is read less 128 (its
// zero point too; a weight the primitive keeps packed is converted once). When
// the rhs zero point is then 0 (symmetric weights, the common case) each
// product is oneDNN's matmul primitive (brgemm, on AMX or VNNI: 3-4x the GEMM
// API's speed at 64-128 rows), the lhs zero point a run-time attribute,
// accumulation a sum post-op (MatmulPrimitive.cpp: set up once per shape, a
// rhs that is a weight of the artifact, kMatmulConstantRhs, packed once).
// Otherwise it is oneDNN's integer GEMM API: dnnl_gemm_u8s8s32 for an unsigned
// lhs, dnnl_gemm_s8s8s32 for a signed one, the zero points as its A and B
// offsets.
//
// oneDNN's integer GEMM is exact only where the CPU has VNNI (AVX512-VNNI
// or AVX-VNNI): without it the u8 x s8 pairs are summed in saturating
// 16-bit lanes (vpmaddubsw), which is why ONNX Runtime's quantizer offers
// `reduce_range`. There, and for a zero point outside its operand's
// range, a plain loop computes the exact sums instead.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/cpu/Kernels.h"
#include "runtime/src/cpu/MatmulPrimitive.h"
#include "runtime/src/cpu/OneDnn.h"

#include "loom/common/CodegenAbi.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <vector>

using namespace loom::runtime::cpu;

namespace {

/// LOOM_CPU_IGEMM: "loops" forces the exact loops, "gemm" oneDNN's GEMM
/// API; otherwise (Default) the primitive where it applies.
enum class Forced { Default, Gemm, Loops };

Forced forced() {
  static const Forced f = [] {
    const char *e = std::getenv("LOOM_CPU_IGEMM");
    if (e && std::strcmp(e, "loops") == 0)
      return Forced::Loops;
    if (e && std::strcmp(e, "gemm") == 0)
      return Forced::Gemm;
    return Forced::Default;
  }();
  return f;
}

/// Whether oneDNN's integer GEMM sums exactly on this CPU (see the file
/// comment), and is not forced off.
bool exactOneDnn() { return forced() != Forced::Loops && int8SumsExact(); }

/// An 8-bit operand as oneDNN reads it, signed unless its type is left
/// alone: an unsigned one to be made signed (`flip`) is copied less 128 (x
/// ^ 0x80 is x - 128 for an unsigned byte read back signed).
Matrix<int8_t> bytesFor(const int8_t *base, int64_t rows, int64_t cols,
                        int64_t rowStride, int64_t colStride, bool flip,
                        std::vector<int8_t> &scratch) {
  uint8_t mask = flip ? 0x80 : 0;
  return gemmMatrix<int8_t>(
      base, rows, cols, rowStride, colStride, flip, scratch, [mask](int8_t x) {
        return static_cast<int8_t>(static_cast<uint8_t>(x) ^ mask);
      });
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
  // A rhs that stays where it is can be kept packed; a copy cannot.
  bool constantRhs = flags & kMatmulConstantRhs;
  std::vector<int8_t> packL, packR;
  std::vector<int32_t> packO;
  // The exact sums, one at a time.
  auto loops = [&](int64_t offL, int64_t offR, int32_t *c) {
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
  };
  forEachMatrix(p, L, R, O, [&](int64_t offL, int64_t offR, int64_t offO) {
    int32_t *c = out + offO;
    if (!oneDnn) {
      loops(offL, offR, c);
      return;
    }
    Matrix<int8_t> a = bytesFor(lhs + offL, M, K, p.lsm, p.lsk, false, packL);
    // The rhs as oneDNN reads it: an unsigned one is a dense row-major copy
    // less 128, made only when it is read (a weight the primitive keeps
    // packed is copied once).
    std::optional<Matrix<int8_t>> made;
    auto rhsBytes = [&]() -> const Matrix<int8_t> & {
      if (!made)
        made = bytesFor(rhs + offR, K, N, p.rsk, p.rsn, rhsU8, packR);
      return *made;
    };
    Matrix<int8_t> layout =
        rhsU8 ? Matrix<int8_t>{nullptr, false, std::max<int64_t>(1, N)}
              : rhsBytes();
    GemmOutput<int32_t> outMatrix(c, p, overwrite, packO);
    int32_t *cdata = outMatrix.data;
    int64_t ldc = outMatrix.ld;
    const int32_t co = 0;
    float beta = overwrite ? 0.0f : 1.0f;
    PrimitiveShape shape{M,
                         N,
                         K,
                         a.ld,
                         layout.ld,
                         ldc,
                         a.trans,
                         layout.trans,
                         /*accumulate=*/!overwrite,
                         /*srcZeroPoint=*/true,
                         lhsU8 ? dnnl_u8 : dnnl_s8,
                         dnnl_s8,
                         dnnl_s32};
    // A rhs read in place (or its signed copy) can be kept packed under
    // its address; a copy for its strides cannot.
    bool keep = constantRhs && (rhsU8 || layout.data == rhs + offR);
    bool done = bo == 0 && forced() == Forced::Default &&
                matmulPrimitive(
                    shape, a.data, ao, [&] { return rhsBytes().data; }, keep,
                    rhs + offR, cdata);
    if (!done) {
      const Matrix<int8_t> &b = rhsBytes();
      char ta = a.trans ? 'T' : 'N', tb = b.trans ? 'T' : 'N';
      auto *bData = static_cast<const int8_t *>(b.data);
      dnnl_status_t status =
          lhsU8 ? dnnl_gemm_u8s8s32(ta, tb, 'F', M, N, K, 1.0f,
                                    reinterpret_cast<const uint8_t *>(a.data),
                                    a.ld, static_cast<uint8_t>(ao), bData, b.ld,
                                    static_cast<int8_t>(bo), beta, cdata, ldc,
                                    &co)
                : dnnl_gemm_s8s8s32(ta, tb, 'F', M, N, K, 1.0f,
                                    static_cast<const int8_t *>(a.data), a.ld,
                                    static_cast<int8_t>(ao), bData, b.ld,
                                    static_cast<int8_t>(bo), beta, cdata, ldc,
                                    &co);
      if (status != dnnl_success) {
        // oneDNN refused (out of memory for its packing): the exact loops,
        // into the output itself.
        loops(offL, offR, c);
        return;
      }
    }
    outMatrix.finish();
  });
}

} // extern "C"
