//===- CudaEmitAttention.cpp - fused attention kernels --------------------===//
//
// graph.attention and graph.attention_grad (made by --loom-fuse-attention)
// as FlashAttention-2-style kernels: the [S, T] scores never reach memory.
//
// * forward: a block of 4 warps takes BR query rows (R per warp) of one
//   batch-head; key and value tiles of 32 go through shared memory; lane l
//   scores key l of the tile against the warp's row, the row keeps an
//   online max and sum, and each lane accumulates its columns of the
//   output (the tile's probabilities broadcast by shuffles). Writes the
//   output and each row's log-sum-exp. Causal attention skips the tiles
//   after the block's last row.
// * backward: delta_i = dout_i . out_i (a warp per row); then dk and dv,
//   a block per BR keys, looping over query tiles (lane l on query l), the
//   probabilities recomputed from q, k and the log-sum-exp; then dq, a
//   block per BR query rows, looping over key tiles. Every gradient
//   element is summed by one thread in a fixed order: no atomics, the
//   same bits run to run.
//
// Everything accumulates in f32 (f16 and bf16 inputs are widened as they
// are loaded). Head sizes up to 128; rows per warp shrink so that shared
// memory stays within the static 48 KiB.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/cuda/CudaEmitInternal.h"

#include "llvm/ADT/StringExtras.h"

#include <cmath>

using namespace mlir;
using namespace loom::graph;

namespace loom::codegen::cuda::detail {

namespace {

constexpr int64_t kWarps = 4;
constexpr int64_t kTile = 32;
constexpr int64_t kMaxHeadDim = 128;
constexpr int64_t kStaticShared = 48 * 1024;

/// `text` with each `$NAME` of `values` replaced (longest names first, so
/// that `$DV` is not read as `$D` and `V`).
std::string
substitute(std::string text,
           std::vector<std::pair<std::string, std::string>> values) {
  llvm::sort(values, [](const auto &a, const auto &b) {
    return a.first.size() > b.first.size();
  });
  for (const auto &[name, value] : values) {
    std::string key = "$" + name;
    for (size_t at = text.find(key); at != std::string::npos;
         at = text.find(key, at + value.size()))
      text.replace(at, key.size(), value);
  }
  return text;
}

/// Appends `text` to `kernel`'s body, line by line.
void addLines(KernelText &kernel, llvm::StringRef text) {
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n');
  for (llvm::StringRef l : lines)
    if (!l.trim().empty())
      kernel.line(l.rtrim());
}

/// The sizes of one attention and the rows each warp takes.
struct Shape {
  int64_t bh = 1, s = 0, t = 0, d = 0, dv = 0;
  int64_t rows = 4; // per warp
};

FailureOr<Shape> shapeOfAttention(Operation *op, Value q, Value k, Value v) {
  Shape sh;
  ArrayRef<int64_t> qs = shapeOf(q), ks = shapeOf(k), vs = shapeOf(v);
  size_t r = qs.size();
  for (size_t i = 0; i + 2 < r; ++i)
    sh.bh *= qs[i];
  sh.s = qs[r - 2];
  sh.d = qs[r - 1];
  sh.t = ks[r - 2];
  sh.dv = vs[r - 1];
  Type elem = elemOf(q);
  if (!elem.isF32() && !elem.isF16() && !elem.isBF16()) {
    (void)emitUnsupported(op, "attention of f64 is not emitted yet");
    return failure();
  }
  if (sh.d > kMaxHeadDim || sh.dv > kMaxHeadDim) {
    (void)emitUnsupported(
        op, "attention with a head size over 128 is not emitted yet");
    return failure();
  }
  return sh;
}

/// Rows per warp (4, 2 or 1) such that `bytes(rows)` of shared memory fit.
int64_t rowsFitting(llvm::function_ref<int64_t(int64_t)> bytes) {
  for (int64_t rows : {4, 2})
    if (bytes(rows) <= kStaticShared)
      return rows;
  return 1;
}

/// The substitutions every attention kernel shares (the scores computed in
/// f32).
std::vector<std::pair<std::string, std::string>>
common(const Shape &sh, Type f32, double scale, double fill, bool causal,
       bool masked) {
  int64_t br = kWarps * sh.rows;
  return {{"S", std::to_string(sh.s)},
          {"T", std::to_string(sh.t)},
          {"D", std::to_string(sh.d)},
          {"DV", std::to_string(sh.dv)},
          {"DL", std::to_string((sh.d + 31) / 32)},
          {"DVL", std::to_string((sh.dv + 31) / 32)},
          {"R", std::to_string(sh.rows)},
          {"BR", std::to_string(br)},
          {"BC", std::to_string(kTile)},
          {"TILES", std::to_string((sh.s + br - 1) / br)},
          {"KTILES", std::to_string((sh.t + br - 1) / br)},
          {"SCALE", literal(scale, f32)},
          {"FILL", literal(fill, f32)},
          {"CAUSAL", causal ? "true" : "false"},
          {"MASKED", masked ? "true" : "false"},
          {"NEG_INF", literal(-INFINITY, f32)}};
}

/// The score of query i, key j (both valid) into `s`, and whether the
/// mask replaced it (`masked`), from the warp row's raw product.
constexpr const char *kScore = R"(
      float s = dots[rr] * $SCALE;
      bool masked = false;
      if ($MASKED && mask[(loom::i64)i * $T + j]) { s = $FILL; masked = true; }
)";

constexpr const char *kForward = R"(
constexpr int R = $R, BR = $BR, BC = $BC, D = $D, DV = $DV, DVL = $DVL;
__shared__ float qs[BR][D];
__shared__ float ks[BC][D + 1];
__shared__ float vs[BC][DV];
const loom::i64 bh = blockIdx.x / $TILES;
const int r0 = (int)(blockIdx.x % $TILES) * BR;
const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
const $ST *qb = q + bh * $S * D;
const $ST *kb = k + bh * $T * D;
const $ST *vb = v + bh * $T * DV;
loom::load_tile<BR, D, D>(qs, qb, r0, $S);
float m[R], l[R], acc[R][DVL];
#pragma unroll
for (int rr = 0; rr < R; ++rr) {
  m[rr] = $NEG_INF; l[rr] = 0.0f;
#pragma unroll
  for (int a = 0; a < DVL; ++a) acc[rr][a] = 0.0f;
}
const int kEnd = $CAUSAL ? (r0 + BR < $T ? r0 + BR : $T) : $T;
for (int j0 = 0; j0 < kEnd; j0 += BC) {
  __syncthreads();
  loom::load_tile<BC, D, D + 1>(ks, kb, j0, $T);
  loom::load_tile<BC, DV, DV>(vs, vb, j0, $T);
  __syncthreads();
  const int j = j0 + lane;
  // Lane j scores key j against the warp's R rows: each key element read
  // from shared memory once for the R rows.
  float dots[R];
  loom::dot_rows<R, D>(dots, qs + warp * R, ks[lane]);
  float p[R];
#pragma unroll
  for (int rr = 0; rr < R; ++rr) {
    const int i = r0 + warp * R + rr;
    float sv = $NEG_INF;
    if (i < $S && j < $T && !($CAUSAL && j > i)) {
$SCORE
      sv = s;
    }
    float mt = loom::warp_reduce(sv, loom::max_<float>);
    float mn = loom::max_(m[rr], mt);
    p[rr] = mn == $NEG_INF ? 0.0f : loom::exp_fast(sv - mn);
    float alpha = m[rr] == $NEG_INF ? 0.0f : loom::exp_fast(m[rr] - mn);
    l[rr] = l[rr] * alpha + loom::warp_reduce(p[rr], loom::add_<float>);
    m[rr] = mn;
#pragma unroll
    for (int a = 0; a < DVL; ++a) acc[rr][a] *= alpha;
  }
  loom::accumulate_tile<R, DVL, DV, DV>(acc, p, vs);
}
float inv[R];
#pragma unroll
for (int rr = 0; rr < R; ++rr) {
  inv[rr] = 1.0f / l[rr];
  const int i = r0 + warp * R + rr;
  if ($LSE && lane == 0 && i < $S) lse[bh * $S + i] = m[rr] + logf(l[rr]);
}
loom::store_rows<R, DVL, DV>(out, bh * $S + r0 + warp * R, $S, r0 + warp * R, acc, inv);
)";

constexpr const char *kDelta = R"(
const loom::i64 row = (loom::i64)blockIdx.x * 4 + (threadIdx.x >> 5);
const int lane = threadIdx.x & 31;
if (row < $ROWS) {
  float acc = 0.0f;
  for (int c = lane; c < $DV; c += 32)
    acc += loom::ld(dout[row * $DV + c]) * loom::ld(out[row * $DV + c]);
  acc = loom::warp_reduce(acc, loom::add_<float>);
  if (lane == 0) delta[row] = acc;
}
)";

constexpr const char *kBackwardKV = R"(
constexpr int R = $R, BR = $BR, BC = $BC, D = $D, DV = $DV, DL = $DL, DVL = $DVL;
__shared__ float ksh[BR][D];
__shared__ float vsh[BR][DV];
__shared__ float qs[BC][D + 1];
__shared__ float dos[BC][DV + 1];
__shared__ float lses[BC], deltas[BC];
const loom::i64 bh = blockIdx.x / $KTILES;
const int k0 = (int)(blockIdx.x % $KTILES) * BR;
const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
const $ST *qb = q + bh * $S * D;
const $ST *kb = k + bh * $T * D;
const $ST *vb = v + bh * $T * DV;
const $ST *dob = dout + bh * $S * DV;
loom::load_tile<BR, D, D>(ksh, kb, k0, $T);
loom::load_tile<BR, DV, DV>(vsh, vb, k0, $T);
float dk[R][DL], dv[R][DVL];
#pragma unroll
for (int rr = 0; rr < R; ++rr) {
#pragma unroll
  for (int a = 0; a < DL; ++a) dk[rr][a] = 0.0f;
#pragma unroll
  for (int a = 0; a < DVL; ++a) dv[rr][a] = 0.0f;
}
// Causal: queries before the block's first key see none of its keys.
const int iStart = $CAUSAL ? (k0 / BC) * BC : 0;
for (int i0 = iStart; i0 < $S; i0 += BC) {
  __syncthreads();
  loom::load_tile<BC, D, D + 1>(qs, qb, i0, $S);
  loom::load_tile<BC, DV, DV + 1>(dos, dob, i0, $S);
  if (threadIdx.x < BC) {
    int i = i0 + threadIdx.x;
    lses[threadIdx.x] = i < $S ? lse[bh * $S + i] : 0.0f;
    deltas[threadIdx.x] = i < $S ? delta[bh * $S + i] : 0.0f;
  }
  __syncthreads();
  const int i = i0 + lane;
  // Lane i against the warp's R keys: each q and dout element read once.
  float dots[R], dps[R];
  loom::dot_rows<R, D>(dots, ksh + warp * R, qs[lane]);
  loom::dot_rows<R, DV>(dps, vsh + warp * R, dos[lane]);
  float p[R], ds[R];
#pragma unroll
  for (int rr = 0; rr < R; ++rr) {
    const int j = k0 + warp * R + rr;
    p[rr] = 0.0f;
    ds[rr] = 0.0f;
    if (j < $T && i < $S && !($CAUSAL && j > i)) {
$SCORE
      p[rr] = loom::exp_fast(s - lses[lane]);
      ds[rr] = masked ? 0.0f : p[rr] * (dps[rr] - deltas[lane]);
    }
  }
  loom::accumulate_tile<R, DVL, DV, DV + 1>(dv, p, dos);
  loom::accumulate_tile<R, DL, D, D + 1>(dk, ds, qs);
}
float scale[R], one[R];
#pragma unroll
for (int rr = 0; rr < R; ++rr) {
  scale[rr] = $SCALE;
  one[rr] = 1.0f;
}
loom::store_rows<R, DL, D>(dkOut, bh * $T + k0 + warp * R, $T, k0 + warp * R, dk, scale);
loom::store_rows<R, DVL, DV>(dvOut, bh * $T + k0 + warp * R, $T, k0 + warp * R, dv, one);
)";

constexpr const char *kBackwardQ = R"(
constexpr int R = $R, BR = $BR, BC = $BC, D = $D, DV = $DV, DL = $DL;
__shared__ float qs[BR][D];
__shared__ float dos[BR][DV];
__shared__ float ks[BC][D + 1];
__shared__ float vs[BC][DV + 1];
const loom::i64 bh = blockIdx.x / $TILES;
const int r0 = (int)(blockIdx.x % $TILES) * BR;
const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
const $ST *qb = q + bh * $S * D;
const $ST *kb = k + bh * $T * D;
const $ST *vb = v + bh * $T * DV;
const $ST *dob = dout + bh * $S * DV;
loom::load_tile<BR, D, D>(qs, qb, r0, $S);
loom::load_tile<BR, DV, DV>(dos, dob, r0, $S);
float dq[R][DL], lsei[R], deltai[R];
#pragma unroll
for (int rr = 0; rr < R; ++rr) {
  const int i = r0 + warp * R + rr;
  lsei[rr] = i < $S ? lse[bh * $S + i] : 0.0f;
  deltai[rr] = i < $S ? delta[bh * $S + i] : 0.0f;
#pragma unroll
  for (int a = 0; a < DL; ++a) dq[rr][a] = 0.0f;
}
const int kEnd = $CAUSAL ? (r0 + BR < $T ? r0 + BR : $T) : $T;
for (int j0 = 0; j0 < kEnd; j0 += BC) {
  __syncthreads();
  loom::load_tile<BC, D, D + 1>(ks, kb, j0, $T);
  loom::load_tile<BC, DV, DV + 1>(vs, vb, j0, $T);
  __syncthreads();
  const int j = j0 + lane;
  // Lane j against the warp's R rows: each k and v element read once.
  float dots[R], dps[R];
  loom::dot_rows<R, D>(dots, qs + warp * R, ks[lane]);
  loom::dot_rows<R, DV>(dps, dos + warp * R, vs[lane]);
  float ds[R];
#pragma unroll
  for (int rr = 0; rr < R; ++rr) {
    const int i = r0 + warp * R + rr;
    ds[rr] = 0.0f;
    if (i < $S && j < $T && !($CAUSAL && j > i)) {
$SCORE
      float p = loom::exp_fast(s - lsei[rr]);
      ds[rr] = masked ? 0.0f : p * (dps[rr] - deltai[rr]);
    }
  }
  loom::accumulate_tile<R, DL, D, D + 1>(dq, ds, ks);
}
float scale[R];
#pragma unroll
for (int rr = 0; rr < R; ++rr) scale[rr] = $SCALE;
loom::store_rows<R, DL, D>(dqOut, bh * $S + r0 + warp * R, $S, r0 + warp * R, dq, scale);
)";

/// Declares `name` in `kernel` as the pointer parameter `param`: the
/// templates read their operands by fixed names.
void alias(KernelText &kernel, const std::string &param, llvm::StringRef name) {
  kernel.line("auto *" + name.str() + " = " + param + ";");
}

/// Declares each operand's pointer (its buffer, or scratch a map kernel
/// computes it into) under its name; a null operand (no mask) as a null
/// `const bool *`.
LogicalResult
aliasInputs(RegionEmitter &region, KernelText &kernel,
            llvm::ArrayRef<std::pair<Value, llvm::StringRef>> operands) {
  for (auto [value, name] : operands) {
    if (!value) {
      kernel.line("const bool *" + name.str() + " = nullptr;");
      continue;
    }
    FailureOr<int> buffer = operandBuffer(region, value);
    if (failed(buffer))
      return failure();
    alias(kernel, kernel.param(*buffer, elemOf(value), false), name);
  }
  return success();
}

/// Declares result `value`'s pointer (scratch when the region does not
/// yield it) under `name`.
void aliasOutput(RegionEmitter &region, KernelText &kernel, Value value,
                 llvm::StringRef what, llvm::StringRef name) {
  alias(kernel,
        kernel.param(region.bufferOrScratch(value, what), elemOf(value), true),
        name);
}

/// A kernel template with its score computation and `values` filled in
/// (kScore first: it holds further names).
std::string
instantiate(const char *tmpl,
            const std::vector<std::pair<std::string, std::string>> &values) {
  return substitute(substitute(tmpl, {{"SCORE", kScore}}), values);
}

LogicalResult emitAttentionRegion(RegionEmitter &region, AttentionOp op) {
  FailureOr<Shape> shape =
      shapeOfAttention(op, op.getQ(), op.getK(), op.getV());
  if (failed(shape))
    return failure();
  Shape sh = *shape;
  sh.rows = rowsFitting([&](int64_t rows) {
    return 4 * (kWarps * rows * sh.d + kTile * (sh.d + 1) + kTile * sh.dv);
  });
  bool lse = region.bufferOfResult(op.getLse()) >= 0;
  KernelText kernel(region, region.kernelName());
  if (failed(aliasInputs(region, kernel,
                         {{op.getQ(), "q"},
                          {op.getK(), "k"},
                          {op.getV(), "v"},
                          {op.getMask(), "mask"}})))
    return failure();
  aliasOutput(region, kernel, op.getOut(), "attention", "out");
  if (lse)
    aliasOutput(region, kernel, op.getLse(), "attention_lse", "lse");
  else
    kernel.line("float *lse = nullptr;");
  auto values = common(sh, elemOf(op.getLse()), op.getScale().convertToDouble(),
                       op.getFill().convertToDouble(), op.getCausal(),
                       bool(op.getMask()));
  values.push_back({"ST", storageType(elemOf(op.getQ()))});
  values.push_back({"LSE", lse ? "true" : "false"});
  addLines(kernel, instantiate(kForward, values));
  int64_t blocks = sh.bh * ((sh.s + kWarps * sh.rows - 1) / (kWarps * sh.rows));
  region.addKernel(kernel, blocks, kWarps * 32, "fused attention");
  return success();
}

LogicalResult emitAttentionGradRegion(RegionEmitter &region,
                                      AttentionGradOp op) {
  FailureOr<Shape> shape =
      shapeOfAttention(op, op.getQ(), op.getK(), op.getV());
  if (failed(shape))
    return failure();
  Shape sh = *shape;
  sh.rows = rowsFitting([&](int64_t rows) {
    return 4 * (kWarps * rows * (sh.d + sh.dv) + kTile * (sh.d + 1) +
                kTile * (sh.dv + 1) + 2 * kTile);
  });
  Type f32 = elemOf(op.getLse());
  auto values = common(sh, f32, op.getScale().convertToDouble(),
                       op.getFill().convertToDouble(), op.getCausal(),
                       bool(op.getMask()));
  values.push_back({"ST", storageType(elemOf(op.getQ()))});

  // delta_i = dout_i . out_i, into f32 scratch.
  int64_t rows = sh.bh * sh.s;
  int delta = region.newScratch(f32, {rows}, "attention_delta");
  {
    KernelText kernel(region, region.kernelName());
    if (failed(aliasInputs(region, kernel,
                           {{op.getDout(), "dout"}, {op.getOut(), "out"}})))
      return failure();
    alias(kernel, kernel.param(delta, f32, true), "delta");
    addLines(kernel, substitute(kDelta, {{"ROWS", std::to_string(rows)},
                                         {"DV", std::to_string(sh.dv)}}));
    region.addKernel(kernel, (rows + 3) / 4, 128, "attention delta");
  }

  // The two gradient kernels read the same operands.
  auto operands = [&](KernelText &kernel) -> LogicalResult {
    if (failed(aliasInputs(region, kernel,
                           {{op.getQ(), "q"},
                            {op.getK(), "k"},
                            {op.getV(), "v"},
                            {op.getDout(), "dout"},
                            {op.getLse(), "lse"},
                            {op.getMask(), "mask"}})))
      return failure();
    alias(kernel, kernel.param(delta, f32, false), "delta");
    return success();
  };
  int64_t br = kWarps * sh.rows;
  {
    KernelText kernel(region, region.kernelName());
    if (failed(operands(kernel)))
      return failure();
    aliasOutput(region, kernel, op.getDk(), "attention_dk", "dkOut");
    aliasOutput(region, kernel, op.getDv(), "attention_dv", "dvOut");
    addLines(kernel, instantiate(kBackwardKV, values));
    region.addKernel(kernel, sh.bh * ((sh.t + br - 1) / br), kWarps * 32,
                     "fused attention backward: dk, dv");
  }
  {
    KernelText kernel(region, region.kernelName());
    if (failed(operands(kernel)))
      return failure();
    aliasOutput(region, kernel, op.getDq(), "attention_dq", "dqOut");
    addLines(kernel, instantiate(kBackwardQ, values));
    region.addKernel(kernel, sh.bh * ((sh.s + br - 1) / br), kWarps * 32,
                     "fused attention backward: dq");
  }
  return success();
}

} // namespace

void registerAttentionEmitters(OpEmitterTable &table) {
  table.addWholeRegion(emitAttentionRegion);
  table.addWholeRegion(emitAttentionGradRegion);
  table.addValue<AttentionOp, AttentionGradOp>(
      [](KernelText &, Operation *op, Value, const Idx &) {
        return emitUnsupported(op, "fused attention is a kernel of its own "
                                   "and fuses into no other kernel");
      });
}

} // namespace loom::codegen::cuda::detail
