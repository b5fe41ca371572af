//===- IntegerMatmul.cpp - dequantized matmuls as integer matmuls ---------===//
//
// `--loom-integer-matmul` (Passes.td): matmul(dequantize(a), dequantize(b))
// of 8-bit tensors becomes graph.matmul_integer, widened to f32 and scaled
// once: sum_k sa (a - za) sb[n] (b - zb) = sa sb[n] sum_k (a - za)(b - zb).
//
//===----------------------------------------------------------------------===//

#include "passes/Quantization/Passes.h"

#include "passes/Quantization/Dequantized.h"

#include "dialects/graph/TensorBytes.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace loom::graph;
using namespace loom::quantization;

namespace loom {
#define GEN_PASS_DEF_INTEGERMATMULPASS
#include "passes/Quantization/Passes.h.inc"
} // namespace loom

namespace {

/// A matmul operand that is a dequantize of 8-bit integers, or a reshape
/// of one with a per-tensor scale (the dequantize of the reshaped
/// integers).
struct Operand {
  DequantizeOp dq;
  ReshapeOp reshape;
  /// The dim of the integers the scale varies along (-1: none).
  int64_t varies = -1;
};

std::optional<Operand> dequantizedOperand(Value v) {
  Operand o;
  o.reshape = v.getDefiningOp<ReshapeOp>();
  o.dq = dequantizedBytes(o.reshape ? o.reshape.getX() : v);
  if (!o.dq)
    return std::nullopt;
  o.varies =
      varyingDim(tensorOf(o.dq.getScale()), tensorOf(o.dq.getX()).getRank());
  if (o.varies == -2 || (o.reshape && o.varies != -1))
    return std::nullopt;
  return o;
}

/// Rewrites `mm` when it fits (see Passes.td); true when it did.
bool rewrite(MatmulOp mm) {
  std::optional<Operand> l = dequantizedOperand(mm.getLhs()),
                         r = dequantizedOperand(mm.getRhs());
  if (!l || !r)
    return false;
  DequantizeOp lhs = l->dq, rhs = r->dq;
  // The lhs scale per tensor; the rhs scale per tensor or along n (the
  // last dim of a rhs matrix, the one before it when transposed).
  RankedTensorType rt = tensorOf(rhs.getX());
  int64_t nDim = rt.getRank() - (mm.getTransposeRhs() ? 2 : 1);
  bool perColumn = r->varies >= 0 && rt.getRank() >= 2 && r->varies == nDim;
  if (l->varies != -1 || (r->varies != -1 && !perColumn))
    return false;

  OpBuilder b(mm);
  Location loc = mm.getLoc();
  // The integers, reshaped as their dequantized values were.
  auto bytes = [&](Operand o) -> Value {
    if (!o.reshape)
      return o.dq.getX();
    return b.create<ReshapeOp>(loc, o.dq.getX(), o.reshape.getShape());
  };
  Value za = asScalar(b, lhs.getZeroPoint()),
        zb = asScalar(b, rhs.getZeroPoint());
  if (!za || !zb)
    return false;
  // The scales as a scalar and a scalar or [n] vector (which broadcasts
  // along the result's last dim).
  auto reshaped = [&](Value v, ArrayRef<int64_t> shape) -> Value {
    if (tensorOf(v).getShape() == shape)
      return v;
    return b.create<ReshapeOp>(loc, v, shape);
  };
  Value sa = reshaped(lhs.getScale(), {});
  // (n from the scale itself, whose shape is static where the rhs's may
  // not be.)
  RankedTensorType st = tensorOf(rhs.getScale());
  if (perColumn && !st.hasStaticShape())
    return false;
  int64_t n = perColumn ? st.getNumElements() : 1;
  Value sb =
      perColumn ? reshaped(rhs.getScale(), {n}) : reshaped(rhs.getScale(), {});
  auto product = b.create<MatmulIntegerOp>(loc, bytes(*l), bytes(*r), za, zb,
                                           mm.getTransposeLhsAttr(),
                                           mm.getTransposeRhsAttr());
  Value widened =
      b.create<CastOp>(loc, product.getResult(), b.getF32Type()).getResult();
  Value scale = b.create<MulOp>(loc, sa, sb);
  Value y = b.create<MulOp>(loc, widened, scale);
  mm.getResult().replaceAllUsesWith(y);
  mm.erase();
  // The dequantized copies go when nothing else reads them.
  if (l->reshape && l->reshape->use_empty())
    l->reshape.erase();
  if (r->reshape && r->reshape != l->reshape && r->reshape->use_empty())
    r->reshape.erase();
  if (lhs->use_empty())
    lhs.erase();
  if (rhs != lhs && rhs->use_empty())
    rhs.erase();
  return true;
}

/// `weights-nk`: a constant 8-bit K x N rhs becomes a constant N x K read
/// with transpose_rhs (the same product); `done` keeps one transposed copy
/// of a weight several products read.
void storeRhsTransposed(MatmulIntegerOp mm,
                        DenseMap<Operation *, Value> &done) {
  auto c = mm.getRhs().getDefiningOp<ConstantOp>();
  RankedTensorType type = tensorOf(mm.getRhs());
  if (mm.getTransposeRhs() || !c || type.getRank() != 2 ||
      !type.hasStaticShape() || type.getElementTypeBitWidth() != 8)
    return;
  Value &weight = done[c];
  if (!weight) {
    FailureOr<std::string> bytes = tensorBytes(c.getValue());
    int64_t k = type.getDimSize(0), n = type.getDimSize(1);
    if (failed(bytes) || static_cast<int64_t>(bytes->size()) != k * n) {
      done.erase(c);
      return;
    }
    std::string nk(bytes->size(), '\0');
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < n; ++j)
        nk[j * k + i] = (*bytes)[i * n + j];
    ElementsAttr value =
        elementsFromBytes(RankedTensorType::get({n, k}, type.getElementType()),
                          std::move(nk), "weight_nk");
    if (!value) {
      done.erase(c);
      return;
    }
    OpBuilder b(c);
    b.setInsertionPointAfter(c);
    weight = b.create<ConstantOp>(c.getLoc(), value);
  }
  mm.getRhsMutable().assign(weight);
  mm.setTransposeRhs(true);
}

struct IntegerMatmulPass
    : loom::impl::IntegerMatmulPassBase<IntegerMatmulPass> {
  using IntegerMatmulPassBase::IntegerMatmulPassBase;
  void runOnOperation() override {
    SmallVector<MatmulOp> matmuls;
    getOperation().walk([&](MatmulOp mm) { matmuls.push_back(mm); });
    for (MatmulOp mm : matmuls)
      rewrite(mm);
    if (!weightsNK)
      return;
    DenseMap<Operation *, Value> done;
    getOperation().walk(
        [&](MatmulIntegerOp mm) { storeRhsTransposed(mm, done); });
    for (auto &[constant, weight] : done)
      if (constant->use_empty())
        constant->erase();
  }
};

} // namespace
