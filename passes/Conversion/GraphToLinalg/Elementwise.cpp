//===- Elementwise.cpp - elementwise graph ops to linalg ------------------===//
//
// Each elementwise graph op is one linalg.generic over its result: the
// operands are read through NumPy broadcasting maps (dims aligned on the
// right, a size-1 dim the result widens read at index 0), the body is the
// scalar op in arith / math. Dropout is elementwise too: a mask drawn from
// the element's index.
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;
using namespace loom::graph;
using namespace loom::graph_to_linalg;

namespace {

/// The scalar body of an elementwise op: the result's element type, the
/// builder and location inside the generic, and the operands' elements.
struct Scalar {
  OpBuilder &b;
  Location loc;
  Type elem;
  ValueRange a;

  bool fp() const { return isFloat(elem); }
  /// A constant of the result's element type.
  Value cst(double v) const { return scalarConst(b, loc, elem, v); }
};

} // namespace

// One `body` per elementwise op: the element of the result.

static Value body(NegOp, const Scalar &s) {
  if (s.fp())
    return s.b.create<arith::NegFOp>(s.loc, s.a[0]);
  return s.b.create<arith::SubIOp>(s.loc, s.cst(0), s.a[0]);
}

static Value body(AbsOp, const Scalar &s) {
  if (s.elem.isUnsignedInteger())
    return s.a[0];
  if (s.fp())
    return s.b.create<math::AbsFOp>(s.loc, s.a[0]);
  return s.b.create<math::AbsIOp>(s.loc, s.a[0]);
}

/// The ops whose body is one math op of the same name on the operand.
template <typename MathOp> static Value unaryMath(const Scalar &s) {
  return s.b.create<MathOp>(s.loc, s.a[0]);
}
static Value body(ExpOp, const Scalar &s) { return unaryMath<math::ExpOp>(s); }
static Value body(LogOp, const Scalar &s) { return unaryMath<math::LogOp>(s); }
static Value body(SqrtOp, const Scalar &s) {
  return unaryMath<math::SqrtOp>(s);
}
static Value body(RsqrtOp, const Scalar &s) {
  return rsqrtScalar(s.b, s.loc, s.a[0]);
}
static Value body(TanhOp, const Scalar &s) {
  return unaryMath<math::TanhOp>(s);
}
static Value body(CosOp, const Scalar &s) { return unaryMath<math::CosOp>(s); }
static Value body(SinOp, const Scalar &s) { return unaryMath<math::SinOp>(s); }
static Value body(AtanOp, const Scalar &s) {
  return unaryMath<math::AtanOp>(s);
}
static Value body(ErfOp, const Scalar &s) { return unaryMath<math::ErfOp>(s); }
static Value body(FloorOp, const Scalar &s) {
  return unaryMath<math::FloorOp>(s);
}
static Value body(CeilOp, const Scalar &s) {
  return unaryMath<math::CeilOp>(s);
}
static Value body(RoundOp, const Scalar &s) {
  return unaryMath<math::RoundEvenOp>(s);
}

static Value body(SigmoidOp, const Scalar &s) {
  OpBuilder &b = s.b;
  Location loc = s.loc;
  // 1 / (1 + exp(-x))
  Value e = b.create<math::ExpOp>(loc, b.create<arith::NegFOp>(loc, s.a[0]));
  return b.create<arith::DivFOp>(loc, s.cst(1),
                                 b.create<arith::AddFOp>(loc, s.cst(1), e));
}

static Value body(ReluOp, const Scalar &s) {
  return maxScalar(s.b, s.loc, s.a[0], s.cst(0));
}

static Value body(GeluOp o, const Scalar &s) {
  OpBuilder &b = s.b;
  Location loc = s.loc;
  auto cst = [&](double v) { return s.cst(v); };
  Value x = s.a[0], inner;
  if (o.getApproximate() == GeluApproximation::tanh) {
    // tanh(sqrt(2 / pi) * (x + 0.044715 x^3))
    Value x3 =
        b.create<arith::MulFOp>(loc, x, b.create<arith::MulFOp>(loc, x, x));
    Value sum = b.create<arith::AddFOp>(
        loc, x, b.create<arith::MulFOp>(loc, cst(0.044715), x3));
    inner = b.create<math::TanhOp>(
        loc, b.create<arith::MulFOp>(loc, cst(std::sqrt(2 / M_PI)), sum));
  } else {
    inner = b.create<math::ErfOp>(
        loc, b.create<arith::MulFOp>(loc, x, cst(M_SQRT1_2)));
  }
  Value half = b.create<arith::MulFOp>(loc, cst(0.5), x);
  return b.create<arith::MulFOp>(loc, half,
                                 b.create<arith::AddFOp>(loc, cst(1), inner));
}

static Value body(ClampOp o, const Scalar &s) {
  Value x = s.a[0];
  if (auto lo = o.getMin())
    x = maxScalar(s.b, s.loc, x, s.cst(lo->convertToDouble()));
  if (auto hi = o.getMax())
    x = minScalar(s.b, s.loc, x, s.cst(hi->convertToDouble()));
  return x;
}

static Value body(CastOp, const Scalar &s) {
  return convertScalar(s.b, s.loc, s.a[0], s.elem);
}

static Value body(AddOp, const Scalar &s) {
  return addScalar(s.b, s.loc, s.a[0], s.a[1]);
}

static Value body(SubOp, const Scalar &s) {
  return floatOrInt<arith::SubFOp, arith::SubIOp>(s.b, s.loc, s.a[0], s.a[1]);
}

static Value body(MulOp, const Scalar &s) {
  return mulScalar(s.b, s.loc, s.a[0], s.a[1]);
}

static Value body(DivOp, const Scalar &s) {
  return divScalar(s.b, s.loc, s.a[0], s.a[1]);
}

static Value body(PowOp, const Scalar &s) {
  return s.b.create<math::PowFOp>(s.loc, s.a[0], s.a[1]);
}

static Value body(MaxOp, const Scalar &s) {
  return maxScalar(s.b, s.loc, s.a[0], s.a[1]);
}

static Value body(MinOp, const Scalar &s) {
  return minScalar(s.b, s.loc, s.a[0], s.a[1]);
}

static Value body(RemOp, const Scalar &s) {
  return remScalar(s.b, s.loc, s.a[0], s.a[1]);
}

static Value body(ModOp, const Scalar &s) {
  OpBuilder &b = s.b;
  Location loc = s.loc;
  ValueRange a = s.a;
  bool fp = s.fp();
  // The truncated remainder, moved by rhs when its sign differs (never,
  // unsigned).
  Value r = remScalar(b, loc, a[0], a[1]);
  if (s.elem.isUnsignedInteger())
    return r;
  Value zero = s.cst(0);
  Value nonzero = compareScalar(b, loc, CompareDirection::ne, r, zero);
  Value rNeg = compareScalar(b, loc, CompareDirection::lt, r, zero);
  Value bNeg = compareScalar(b, loc, CompareDirection::lt, a[1], zero);
  Value fix = b.create<arith::AndIOp>(loc, nonzero,
                                      b.create<arith::XOrIOp>(loc, rNeg, bNeg));
  Value moved = fp ? (Value)b.create<arith::AddFOp>(loc, r, a[1])
                   : b.create<arith::AddIOp>(loc, r, a[1]);
  return b.create<arith::SelectOp>(loc, fix, moved, r);
}

static Value body(BitAndOp, const Scalar &s) {
  return s.b.create<arith::AndIOp>(s.loc, s.a[0], s.a[1]);
}
static Value body(BitOrOp, const Scalar &s) {
  return s.b.create<arith::OrIOp>(s.loc, s.a[0], s.a[1]);
}
static Value body(BitXorOp, const Scalar &s) {
  return s.b.create<arith::XOrIOp>(s.loc, s.a[0], s.a[1]);
}
static Value body(BitNotOp, const Scalar &s) {
  return s.b.create<arith::XOrIOp>(s.loc, s.a[0], s.cst(-1));
}

/// A shift by the bit width or more (an unsigned comparison: a negative
/// signed amount counts as huge) gives what shifting one bit at a time
/// would: 0, or -1 for a right shift of a negative signed value. arith's
/// shifts are poison there.
static Value shift(const Scalar &s, bool left) {
  OpBuilder &b = s.b;
  Location loc = s.loc;
  Value x = s.a[0], n = s.a[1];
  Value over = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::uge, n,
                                       s.cst(s.elem.getIntOrFloatBitWidth()));
  if (left)
    return b.create<arith::SelectOp>(loc, over, s.cst(0),
                                     b.create<arith::ShLIOp>(loc, x, n));
  if (s.elem.isUnsignedInteger())
    return b.create<arith::SelectOp>(loc, over, s.cst(0),
                                     b.create<arith::ShRUIOp>(loc, x, n));
  Value capped = b.create<arith::SelectOp>(
      loc, over, s.cst(s.elem.getIntOrFloatBitWidth() - 1), n);
  return b.create<arith::ShRSIOp>(loc, x, capped);
}
static Value body(ShiftLeftOp, const Scalar &s) { return shift(s, true); }
static Value body(ShiftRightOp, const Scalar &s) { return shift(s, false); }

static Value body(CompareOp o, const Scalar &s) {
  return compareScalar(s.b, s.loc, o.getDirection(), s.a[0], s.a[1]);
}

static Value body(WhereOp, const Scalar &s) {
  return s.b.create<arith::SelectOp>(s.loc, s.a[0], s.a[1], s.a[2]);
}

static Value body(BroadcastToOp, const Scalar &s) { return s.a[0]; }

/// saturate(roundeven(x / scale) + zero_point), in x's float type, then
/// converted to the result's integer type (unsigned or signed).
static Value body(QuantizeOp o, const Scalar &s) {
  OpBuilder &b = s.b;
  Location loc = s.loc;
  Value x = s.a[0];
  Type f = x.getType();
  Value q =
      b.create<math::RoundEvenOp>(loc, b.create<arith::DivFOp>(loc, x, s.a[1]));
  q = b.create<arith::AddFOp>(loc, q, convertScalar(b, loc, s.a[2], f));
  auto [lo, hi] = o.getSaturationRange();
  q = minScalar(b, loc, maxScalar(b, loc, q, scalarConst(b, loc, f, lo)),
                scalarConst(b, loc, f, hi));
  return convertScalar(b, loc, q, s.elem);
}

/// (x - zero_point) * scale: the difference exact in a wider signed
/// integer, then in the result's float type.
static Value body(DequantizeOp, const Scalar &s) {
  OpBuilder &b = s.b;
  Location loc = s.loc;
  Type wide = s.a[0].getType().getIntOrFloatBitWidth() < 32 ? b.getI32Type()
                                                            : b.getI64Type();
  Value d = b.create<arith::SubIOp>(loc, convertScalar(b, loc, s.a[0], wide),
                                    convertScalar(b, loc, s.a[2], wide));
  return b.create<arith::MulFOp>(loc, convertScalar(b, loc, d, s.elem), s.a[1]);
}

/// (clamp(roundeven(x / scale) + z, qmin, qmax) - z) * scale with
/// z = clamp(roundeven(zero_point), qmin, qmax), all in x's float type.
static Value body(FakeQuantizeOp o, const Scalar &s) {
  OpBuilder &b = s.b;
  Location loc = s.loc;
  Value lo = s.cst((double)(int64_t)o.getQmin()),
        hi = s.cst((double)(int64_t)o.getQmax());
  auto clamp = [&](Value v) {
    return minScalar(b, loc, maxScalar(b, loc, v, lo), hi);
  };
  Value z = clamp(b.create<math::RoundEvenOp>(loc, s.a[2]));
  Value q = b.create<math::RoundEvenOp>(
      loc, b.create<arith::DivFOp>(loc, s.a[0], s.a[1]));
  q = clamp(b.create<arith::AddFOp>(loc, q, z));
  return b.create<arith::MulFOp>(loc, b.create<arith::SubFOp>(loc, q, z),
                                 s.a[1]);
}

namespace {

/// An elementwise op as one linalg.generic over its result whose operands
/// are read through broadcasting maps and whose body is `body(op, ...)`.
template <typename OpT>
struct ElementwiseLowering final : OpRewritePattern<OpT> {
  using OpRewritePattern<OpT>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpT op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    Type elem = type.getElementType();
    FailureOr<Value> lowered =
        elementwise(rewriter, op.getLoc(), type, op->getOperands(),
                    [&](OpBuilder &b, Location l, ValueRange a) {
                      return body(op, Scalar{b, l, elem, a});
                    });
    if (failed(lowered))
      return failure();
    rewriter.replaceOp(op, *lowered);
    return success();
  }
};

} // namespace

/// The identity unless `training`. In training, the element at row-major
/// index i is kept when the top 24 bits of the (i+1)-th SplitMix64 draw
/// from `seed`, as a fraction of 2^24, are >= ratio; kept elements are
/// scaled by 1 / (1 - ratio), the others are 0. The mask depends on the
/// seed and the index only, never on x.
static Value lowerDropout(OpBuilder &builder, DropoutOp o) {
  Location loc = o.getLoc();
  Value x = o.getX();
  double ratio = o.getRatio().convertToDouble();
  if (!o.getTraining() || ratio == 0)
    return x;
  RankedTensorType xt = tensorType(x);
  Type elem = xt.getElementType();
  SmallVector<Value> dims;
  for (int64_t i = 0; i < xt.getRank(); ++i)
    dims.push_back(dimOf(builder, loc, x, i));
  auto i64 = [&](OpBuilder &b, Location l, uint64_t v) -> Value {
    return b.create<arith::ConstantOp>(l, b.getI64IntegerAttr(v));
  };
  auto threshold = (uint64_t)std::ceil(ratio * (1 << 24));
  Value scale = scalarConst(builder, loc, elem, 1 / (1 - ratio));
  return mapLike(
      builder, loc, x, elem, {}, {},
      [&](OpBuilder &b, Location l, ValueRange a) -> Value {
        Value index = b.create<arith::ConstantIndexOp>(l, 0);
        for (auto [i, d] : llvm::enumerate(dims))
          index =
              b.create<arith::AddIOp>(l, b.create<arith::MulIOp>(l, index, d),
                                      b.create<linalg::IndexOp>(l, i));
        Value n = b.create<arith::IndexCastOp>(l, b.getI64Type(), index);
        n = b.create<arith::AddIOp>(l, n, i64(b, l, 1));
        Value z = b.create<arith::AddIOp>(
            l, i64(b, l, o.getSeed()),
            b.create<arith::MulIOp>(l, n, i64(b, l, 0x9E3779B97F4A7C15ull)));
        for (auto [shift, mul] :
             {std::pair<uint64_t, uint64_t>{30, 0xBF58476D1CE4E5B9ull},
              {27, 0x94D049BB133111EBull},
              {31, 0}}) {
          z = b.create<arith::XOrIOp>(
              l, z, b.create<arith::ShRUIOp>(l, z, i64(b, l, shift)));
          if (mul)
            z = b.create<arith::MulIOp>(l, z, i64(b, l, mul));
        }
        Value bits = b.create<arith::ShRUIOp>(l, z, i64(b, l, 40));
        Value keep = b.create<arith::CmpIOp>(l, arith::CmpIPredicate::uge, bits,
                                             i64(b, l, threshold));
        return b.create<arith::SelectOp>(
            l, keep, b.create<arith::MulFOp>(l, a[0], scale),
            scalarConst(b, l, elem, 0));
      });
}

void loom::populateGraphToLinalgElementwisePatterns(
    RewritePatternSet &patterns) {
  patterns
      .add<ElementwiseLowering<NegOp>, ElementwiseLowering<AbsOp>,
           ElementwiseLowering<ExpOp>, ElementwiseLowering<LogOp>,
           ElementwiseLowering<SqrtOp>, ElementwiseLowering<RsqrtOp>,
           ElementwiseLowering<TanhOp>, ElementwiseLowering<CosOp>,
           ElementwiseLowering<SinOp>, ElementwiseLowering<AtanOp>,
           ElementwiseLowering<ErfOp>, ElementwiseLowering<FloorOp>,
           ElementwiseLowering<CeilOp>, ElementwiseLowering<RoundOp>,
           ElementwiseLowering<SigmoidOp>, ElementwiseLowering<ReluOp>,
           ElementwiseLowering<GeluOp>, ElementwiseLowering<ClampOp>,
           ElementwiseLowering<CastOp>, ElementwiseLowering<AddOp>,
           ElementwiseLowering<SubOp>, ElementwiseLowering<MulOp>,
           ElementwiseLowering<DivOp>, ElementwiseLowering<PowOp>,
           ElementwiseLowering<MaxOp>, ElementwiseLowering<MinOp>,
           ElementwiseLowering<RemOp>, ElementwiseLowering<ModOp>,
           ElementwiseLowering<CompareOp>, ElementwiseLowering<WhereOp>,
           ElementwiseLowering<BroadcastToOp>, ElementwiseLowering<QuantizeOp>,
           ElementwiseLowering<DequantizeOp>, ElementwiseLowering<BitAndOp>,
           ElementwiseLowering<BitOrOp>, ElementwiseLowering<BitXorOp>,
           ElementwiseLowering<BitNotOp>, ElementwiseLowering<ShiftLeftOp>,
           ElementwiseLowering<ShiftRightOp>,
           LowerOpPattern<DropoutOp, lowerDropout>>(patterns.getContext());
  patterns.add<ElementwiseLowering<FakeQuantizeOp>>(patterns.getContext());
}
