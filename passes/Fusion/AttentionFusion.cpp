//===- AttentionFusion.cpp - softmax attention into one graph.attention ---===//
//
// `--loom-fuse-attention`: finds scaled dot-product attention written as
// separate ops, as ONNX exporters write it,
//
//   s = matmul(q, k^T)                (k^T: transpose_rhs, or a transpose)
//   s = s / c  or  s * c              (optional; c a scalar constant)
//   s = where(mask, fill, s)          (optional; or where(keep, s, fill))
//   p = softmax(s, axis = last)
//   o = matmul(p, v)
//
// and replaces it with one `graph.attention`, whose gradient is one
// `graph.attention_grad`: no [..., S, T] scores or probabilities are
// stored for the backward, and a target computes it tile by tile (the
// CUDA emitter's CudaEmitAttention.cpp). A constant mask that is exactly
// "key after query" with a fill of -1e4 or less becomes `causal` (the
// kernels skip the masked tiles). Runs before autodiff and mixed precision,
// on the CUDA target only (the CPU target has no attention kernel yet);
// `min-scores` leaves attentions with fewer scores unfused (loomc's
// --fused-attention=auto: where they are small, cuBLASLt's tensor-core
// GEMMs beat the fused CUDA-core kernels).
// Every softmax over scores that is left alone is reported with the reason.
//
//===----------------------------------------------------------------------===//

#include "passes/Fusion/Passes.h"
#include "passes/PassReport.h"

#include "dialects/graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace loom {
#define GEN_PASS_DEF_FUSEATTENTIONPASS
#include "passes/Fusion/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using namespace loom::graph;

namespace {

/// A causal mask's fill must leave masked keys no weight in practice.
constexpr double kCausalFillMax = -1.0e4;

RankedTensorType tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// The value of a one-element float or integer expression of constants
/// (exporters write a scale as `1 / pow(cast(8), 0.5)`, not as a number).
std::optional<double> scalarConstant(Value v, int depth = 0) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || !type.hasStaticShape() || type.getNumElements() != 1 ||
      depth > 8)
    return std::nullopt;
  Operation *op = v.getDefiningOp();
  if (!op)
    return std::nullopt;
  if (auto c = dyn_cast<ConstantOp>(op)) {
    auto attr = dyn_cast<DenseElementsAttr>(c.getValue());
    if (!attr)
      return std::nullopt;
    if (isa<FloatType>(attr.getElementType()))
      return (*attr.value_begin<APFloat>()).convertToDouble();
    if (attr.getElementType().isInteger(1))
      return std::nullopt;
    if (isa<IntegerType>(attr.getElementType()))
      return static_cast<double>((*attr.value_begin<APInt>()).getSExtValue());
    return std::nullopt;
  }
  auto operand = [&](unsigned i) {
    return scalarConstant(op->getOperand(i), depth + 1);
  };
  if (isa<CastOp>(op)) {
    std::optional<double> x = operand(0);
    if (x && isa<IntegerType>(type.getElementType()))
      x = std::trunc(*x);
    return x;
  }
  if (isa<SqrtOp>(op))
    if (auto x = operand(0))
      return std::sqrt(*x);
  if (isa<NegOp>(op))
    if (auto x = operand(0))
      return -*x;
  if (isa<PowOp, DivOp, MulOp, AddOp, SubOp>(op)) {
    std::optional<double> a = operand(0), b = operand(1);
    if (!a || !b)
      return std::nullopt;
    if (isa<PowOp>(op))
      return std::pow(*a, *b);
    if (isa<DivOp>(op))
      return *a / *b;
    if (isa<MulOp>(op))
      return *a * *b;
    return isa<AddOp>(op) ? *a + *b : *a - *b;
  }
  return std::nullopt;
}

/// The elements of a static i1 expression of constants (a constant, a
/// slice of one, a comparison with a boolean scalar), row-major; none
/// when it is computed at run time.
std::optional<std::vector<bool>> boolConstant(Value v, int depth = 0) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || !type.hasStaticShape() || !type.getElementType().isInteger(1) ||
      depth > 8)
    return std::nullopt;
  Operation *op = v.getDefiningOp();
  if (!op)
    return std::nullopt;
  int64_t n = type.getNumElements();
  if (auto c = dyn_cast<ConstantOp>(op)) {
    auto attr = dyn_cast<DenseElementsAttr>(c.getValue());
    if (!attr)
      return std::nullopt;
    std::vector<bool> bits;
    bits.reserve(n);
    for (bool b : attr.getValues<bool>())
      bits.push_back(b);
    if (attr.isSplat())
      bits.assign(n, bits.empty() ? false : bits.front());
    return bits;
  }
  if (auto cast = dyn_cast<CastOp>(op))
    return boolConstant(cast.getX(), depth + 1);
  if (auto cmp = dyn_cast<CompareOp>(op)) {
    if (cmp.getDirection() != CompareDirection::eq &&
        cmp.getDirection() != CompareDirection::ne)
      return std::nullopt;
    // One side a boolean scalar: the other side, or its negation.
    for (auto [tensor, scalar] : {std::pair(cmp.getLhs(), cmp.getRhs()),
                                  std::pair(cmp.getRhs(), cmp.getLhs())}) {
      std::optional<std::vector<bool>> s = boolConstant(scalar, depth + 1);
      if (!s || s->size() != 1 || tensorOf(tensor) != type)
        continue;
      std::optional<std::vector<bool>> bits = boolConstant(tensor, depth + 1);
      if (!bits)
        return std::nullopt;
      bool flip = (cmp.getDirection() == CompareDirection::eq) != s->front();
      if (flip)
        bits->flip();
      return bits;
    }
    return std::nullopt;
  }
  if (auto slice = dyn_cast<SliceOp>(op)) {
    auto in = tensorOf(slice.getX());
    std::optional<std::vector<bool>> bits =
        boolConstant(slice.getX(), depth + 1);
    if (!bits || !in.hasStaticShape())
      return std::nullopt;
    // Unit steps: each dim starts at its (normalized, clamped) start.
    int64_t rank = in.getRank();
    SmallVector<int64_t> start(rank);
    for (int64_t d = 0; d < rank; ++d) {
      if (slice.getSteps()[d] != 1)
        return std::nullopt;
      int64_t dim = in.getDimSize(d), st = slice.getStarts()[d];
      if (st < 0)
        st = std::max<int64_t>(0, st + dim);
      start[d] = std::min(st, dim);
    }
    std::vector<bool> out(n);
    ArrayRef<int64_t> os = type.getShape();
    for (int64_t e = 0; e < n; ++e) {
      int64_t rest = e, from = 0, stride = 1;
      for (int64_t d = rank - 1; d >= 0; --d) {
        int64_t i = rest % os[d];
        rest /= os[d];
        from += (start[d] + i) * stride;
        stride *= in.getDimSize(d);
      }
      out[e] = (*bits)[from];
    }
    return out;
  }
  return std::nullopt;
}

/// One softmax over scores and what became of it.
struct Candidate {
  SoftmaxOp softmax;
  std::string why; // empty: fused
  int64_t heads = 0, s = 0, t = 0, d = 0, dv = 0;
  bool causal = false, masked = false;
  double scale = 1.0;
};

class Matcher {
public:
  Matcher(int64_t maxHeadDim, int64_t minScores)
      : maxHeadDim(maxHeadDim), minScores(minScores) {}

  /// Fuses the attention ending at `softmax`; the reason when it cannot.
  std::string fuse(Candidate &c) {
    SoftmaxOp softmax = c.softmax;
    auto xt = tensorOf(softmax.getX());
    int64_t rank = xt.getRank();
    if (static_cast<int64_t>(softmax.getAxis()) != rank - 1)
      return "the softmax is not over the last dim";
    if (!softmax->hasOneUse())
      return "the probabilities have other users than one matmul";
    auto pv = dyn_cast<MatmulOp>(*softmax->user_begin());
    if (!pv || pv.getLhs() != softmax.getResult() || pv.getTransposeLhs() ||
        pv.getTransposeRhs())
      return "the probabilities are not the left operand of a plain matmul";

    // Back from the softmax: where, then scale, then the scores' matmul.
    Value x = softmax.getX();
    SmallVector<Operation *> chain; // to erase, users first
    Value mask;
    std::optional<double> fill;
    bool invert = false;
    if (auto where = x.getDefiningOp<WhereOp>()) {
      if (!where->hasOneUse())
        return "the masked scores have other users";
      if ((fill = scalarConstant(where.getX()))) {
        x = where.getY();
      } else if ((fill = scalarConstant(where.getY()))) {
        x = where.getX();
        invert = true;
      } else {
        return "the mask's fill is not a scalar constant";
      }
      mask = where.getCond();
      chain.push_back(where);
    }
    double scale = 1.0;
    if (auto div = x.getDefiningOp<DivOp>()) {
      std::optional<double> c = scalarConstant(div.getRhs());
      if (!c || *c == 0)
        return "the scores are divided by something other than a constant";
      if (!div->hasOneUse())
        return "the scaled scores have other users";
      scale = 1.0 / *c;
      chain.push_back(div);
      x = div.getLhs();
    } else if (auto mul = x.getDefiningOp<MulOp>()) {
      std::optional<double> c = scalarConstant(mul.getRhs());
      Value other = mul.getLhs();
      if (!c) {
        c = scalarConstant(mul.getLhs());
        other = mul.getRhs();
      }
      if (!c)
        return "the scores are multiplied by something other than a constant";
      if (!mul->hasOneUse())
        return "the scaled scores have other users";
      scale = *c;
      chain.push_back(mul);
      x = other;
    } else if (x.getDefiningOp<AddOp>()) {
      return "an additive mask is not fused yet";
    }
    auto qk = x.getDefiningOp<MatmulOp>();
    if (!qk)
      return "the scores are not a matmul's";
    if (!qk->hasOneUse())
      return "the scores have other users";
    if (qk.getTransposeLhs())
      return "the query side is transposed";
    if (tensorOf(qk.getResult()).getShape() != xt.getShape() ||
        tensorOf(qk.getResult()).getElementType() != xt.getElementType())
      return "the scores change shape or type before the softmax";

    // The operands: q [..., S, D], k [..., T, D], v [..., T, Dv], equal
    // static batch dims, one float type.
    Value q = qk.getLhs(), k = qk.getRhs(), v = pv.getRhs();
    bool kTransposed = qk.getTransposeRhs();
    auto qt = tensorOf(q), kt = tensorOf(k), vt = tensorOf(v);
    if (!qt.hasStaticShape() || !kt.hasStaticShape() || !vt.hasStaticShape())
      return "a dynamic shape";
    if (qt.getRank() != rank || kt.getRank() != rank || vt.getRank() != rank)
      return "q, k and v do not all have the scores' rank (broadcast batch)";
    for (int64_t i = 0; i + 2 < rank; ++i)
      if (kt.getDimSize(i) != qt.getDimSize(i) ||
          vt.getDimSize(i) != qt.getDimSize(i))
        return "q, k and v have different batch dims (broadcast)";
    Type elem = qt.getElementType();
    if (!elem.isF32() && !elem.isF16() && !elem.isBF16())
      return "not f32, f16 or bf16";
    int64_t s = qt.getDimSize(rank - 2), d = qt.getDimSize(rank - 1);
    int64_t t = xt.getDimSize(rank - 1), dv = vt.getDimSize(rank - 1);
    if (d > maxHeadDim || dv > maxHeadDim)
      return "a head size over " + std::to_string(maxHeadDim);
    if (xt.getNumElements() < minScores)
      return std::to_string(xt.getNumElements()) + " scores, fewer than " +
             std::to_string(minScores) +
             ": the unfused matmuls and softmax are faster at this size";

    // The mask: [S, T] after dropping leading 1s; a constant "key after
    // query" one is causal.
    bool causal = false;
    if (mask) {
      auto mt = tensorOf(mask);
      if (!mt.hasStaticShape())
        return "a dynamic mask shape";
      ArrayRef<int64_t> ms = mt.getShape();
      while (!ms.empty() && ms.front() == 1 && ms.size() > 2)
        ms = ms.drop_front();
      if (ms.size() != 2 || ms[0] != s || ms[1] != t)
        return "the mask is not [S, T] (broadcast over the batch)";
      std::optional<std::vector<bool>> bits = boolConstant(mask);
      if (bits && s == t && *fill <= kCausalFillMax) {
        causal = true;
        for (int64_t i = 0; i < s && causal; ++i)
          for (int64_t j = 0; j < t; ++j)
            if (((*bits)[i * t + j] != invert) != (j > i)) {
              causal = false;
              break;
            }
      }
    }

    // Rewrite at the second matmul (every operand dominates it).
    OpBuilder b(pv);
    Location loc = softmax.getLoc();
    if (kTransposed == false) {
      // matmul(q, kT) with kT [..., D, T]: k itself, read through a
      // transpose of kT's last two dims (the transpose of a transpose
      // folds away).
      SmallVector<int64_t> perm;
      for (int64_t i = 0; i < rank; ++i)
        perm.push_back(i);
      std::swap(perm[rank - 1], perm[rank - 2]);
      k = b.create<TransposeOp>(loc, k, b.getDenseI64ArrayAttr(perm));
    }
    Value maskOperand;
    if (mask && !causal) {
      maskOperand = mask;
      if (tensorOf(mask).getRank() != 2)
        maskOperand =
            b.create<ReshapeOp>(loc, mask, b.getDenseI64ArrayAttr({s, t}));
      if (invert) {
        auto boolT = RankedTensorType::get({}, b.getI1Type());
        Value no = b.create<ConstantOp>(
            loc, DenseElementsAttr::get(boolT, b.getBoolAttr(false)));
        Value yes = b.create<ConstantOp>(
            loc, DenseElementsAttr::get(boolT, b.getBoolAttr(true)));
        maskOperand = b.create<WhereOp>(loc, maskOperand, no, yes);
      }
    }
    double fillValue = fill ? *fill : -INFINITY;
    auto attention = b.create<AttentionOp>(
        loc, q, k, v, maskOperand, b.getF64FloatAttr(scale),
        b.getF64FloatAttr(fillValue), causal ? b.getUnitAttr() : UnitAttr());
    pv.getResult().replaceAllUsesWith(attention.getOut());
    pv->erase();
    softmax->erase();
    for (Operation *op : chain)
      op->erase();
    qk->erase();

    c.heads = 1;
    for (int64_t i = 0; i + 2 < rank; ++i)
      c.heads *= qt.getDimSize(i);
    c.s = s;
    c.t = t;
    c.d = d;
    c.dv = dv;
    c.causal = causal;
    c.masked = maskOperand != nullptr;
    c.scale = scale;
    return "";
  }

private:
  int64_t maxHeadDim, minScores;
};

/// Whether `softmax` reads scores: a matmul, maybe through a scale and a
/// mask (the softmaxes the report speaks of).
bool readsScores(SoftmaxOp softmax) {
  Value x = softmax.getX();
  for (int step = 0; step < 3 && x.getDefiningOp(); ++step) {
    Operation *op = x.getDefiningOp();
    if (isa<MatmulOp>(op))
      return true;
    if (auto where = dyn_cast<WhereOp>(op))
      x = scalarConstant(where.getX()) ? where.getY() : where.getX();
    else if (isa<DivOp, MulOp, AddOp>(op))
      x = op->getOperand(0).getDefiningOp<ConstantOp>() ? op->getOperand(1)
                                                        : op->getOperand(0);
    else
      return false;
  }
  return isa_and_nonnull<MatmulOp>(x.getDefiningOp());
}

class FuseAttentionPass
    : public loom::impl::FuseAttentionPassBase<FuseAttentionPass> {
public:
  using FuseAttentionPassBase::FuseAttentionPassBase;
  report::Sink *sink = nullptr;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::vector<Candidate> candidates;
    module.walk([&](SoftmaxOp softmax) {
      if (readsScores(softmax))
        candidates.push_back({softmax});
    });
    Matcher matcher(maxHeadDim, minScores);
    llvm::json::Array fused, left;
    for (Candidate &c : candidates) {
      std::string where = report::describe(c.softmax);
      c.why = matcher.fuse(c);
      if (c.why.empty()) {
        fused.push_back(llvm::json::Object{
            {"at", where},
            {"heads", c.heads},
            {"queries", c.s},
            {"keys", c.t},
            {"head_size", c.d},
            {"causal", c.causal},
            {"mask", c.masked},
            {"scale", c.scale},
            {"scores_bytes_not_stored", c.heads * c.s * c.t * 4}});
        if (summary)
          llvm::errs() << "fused attention at " << where << ": " << c.heads
                       << " heads x " << c.s << " queries x " << c.t
                       << " keys, head size " << c.d
                       << (c.causal   ? ", causal"
                           : c.masked ? ", masked"
                                      : "")
                       << "\n";
      } else {
        left.push_back(llvm::json::Object{{"at", where}, {"reason", c.why}});
        if (summary)
          llvm::errs() << "attention at " << where << " not fused: " << c.why
                       << "\n";
      }
    }
    llvm::json::Object out{{"fused", std::move(fused)},
                           {"not_fused", std::move(left)}};
    if (failed(report::emit(sink, "attention", module, "loom-fuse-attention",
                            report, std::move(out))))
      signalPassFailure();
  }
};

} // namespace

std::unique_ptr<Pass>
loom::createFuseAttentionPass(const FuseAttentionPassOptions &options,
                              report::Sink *sink) {
  auto pass = std::make_unique<FuseAttentionPass>(options);
  pass->sink = sink;
  return pass;
}
