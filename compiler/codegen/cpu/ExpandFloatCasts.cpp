//===- ExpandFloatCasts.cpp - 16-bit float conversions without libcalls ---===//
//
// --loom-cpu-expand-float-casts: LLVM lowers some conversions of f16 and
// bf16 to compiler-rt calls (__truncsfbf2, __truncdfhf2; __extendhfsf2 and
// __truncsfhf2 without F16C) that a shared object loaded by the runtime
// cannot resolve. This pass writes them as integer arithmetic on the bits:
//
//   integer <-> 16-bit float   through f64 (exact up to 32-bit integers) or
//                              f32 (to integers: every 16-bit float is one)
//   other arith on 16 bits     in f32 (upstream emulate-unsupported-floats)
//   f64 -> 16 bits             f64 -> f32 rounded to odd, then to nearest
//                              even: correctly rounded
//   16 bits -> f64             through f32 (exact)
//   bf16 <-> f32               upstream populateExpandBFloat16Patterns
//   f16 <-> f32 (soft-f16)     below; otherwise LLVM emits F16C
//
// Every f32 -> 16-bit rounding is to nearest even; NaN stays NaN, infinities
// stay, and overflow gives infinity.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/cpu/CpuTransforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace loom::codegen {

#define GEN_PASS_DEF_CPUEXPANDFLOATCASTSPASS
#include "compiler/codegen/cpu/Passes.h.inc"

namespace {

/// `like` (a scalar or a vector type) with element type `elem`.
Type withElement(Type like, Type elem) {
  if (auto v = dyn_cast<VectorType>(like))
    return v.clone(elem);
  return elem;
}

/// Builds integer and float arithmetic on scalars or vectors of one shape.
struct Bits {
  PatternRewriter &b;
  Location loc;
  Type like;

  Type i(unsigned width) const {
    return withElement(like, b.getIntegerType(width));
  }
  Type f32() const { return withElement(like, b.getF32Type()); }
  Type f64() const { return withElement(like, b.getF64Type()); }
  Value constant(Type type, int64_t v) const {
    Type elem = getElementTypeOrSelf(type);
    TypedAttr attr = b.getIntegerAttr(elem, v);
    if (auto vec = dyn_cast<VectorType>(type))
      attr = SplatElementsAttr::get(vec, attr);
    return b.create<arith::ConstantOp>(loc, type, attr);
  }
  Value bitcast(Type type, Value v) const {
    return b.create<arith::BitcastOp>(loc, type, v);
  }
  Value add(Value x, Value y) const {
    return b.create<arith::AddIOp>(loc, x, y);
  }
  Value sub(Value x, Value y) const {
    return b.create<arith::SubIOp>(loc, x, y);
  }
  Value andi(Value x, Value y) const {
    return b.create<arith::AndIOp>(loc, x, y);
  }
  Value ori(Value x, Value y) const {
    return b.create<arith::OrIOp>(loc, x, y);
  }
  Value shl(Value x, Value y) const {
    return b.create<arith::ShLIOp>(loc, x, y);
  }
  Value shr(Value x, Value y) const {
    return b.create<arith::ShRUIOp>(loc, x, y);
  }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) const {
    return b.create<arith::CmpIOp>(loc, p, x, y);
  }
  Value select(Value c, Value x, Value y) const {
    return b.create<arith::SelectOp>(loc, c, x, y);
  }
};

/// f64 -> f32 rounded to odd: rounded toward zero, and the last bit set
/// when inexact. Rounding that to a format of at most 11 bits of precision
/// is then the correctly rounded f64 -> 16-bit conversion.
Value truncToOdd(const Bits &k, Value x) {
  Value t = k.b.create<arith::TruncFOp>(k.loc, k.f32(), x);
  Value back = k.b.create<arith::ExtFOp>(k.loc, k.f64(), t);
  // Ordered: false for NaN, which stays the NaN `t` holds.
  Value inexact =
      k.b.create<arith::CmpFOp>(k.loc, arith::CmpFPredicate::ONE, back, x);
  // Magnitudes compare as integers; `back` is farther from zero than `x`
  // when `t` was rounded away from zero.
  Value mag = k.constant(k.i(64), 0x7fffffffffffffffll);
  Value away =
      k.cmp(arith::CmpIPredicate::ugt, k.andi(k.bitcast(k.i(64), back), mag),
            k.andi(k.bitcast(k.i(64), x), mag));
  Value bits = k.bitcast(k.i(32), t);
  Value one = k.constant(k.i(32), 1);
  // Past f32's range `t` is infinity: one step toward zero is FLT_MAX,
  // which any 16-bit format rounds to infinity again.
  Value towardZero = k.select(away, k.sub(bits, one), bits);
  return k.bitcast(k.f32(), k.select(inexact, k.ori(towardZero, one), bits));
}

/// f16 -> f32 (exact). The 15 bits of exponent and mantissa shifted into an
/// f32's place read as the value times 2^-112, normal or subnormal; all
/// ones in the exponent (infinity, NaN) becomes all ones.
Value extendHalf(const Bits &k, Value h) {
  Value h32 = k.b.create<arith::ExtUIOp>(k.loc, k.i(32), k.bitcast(k.i(16), h));
  Value sign =
      k.shl(k.andi(h32, k.constant(k.i(32), 0x8000)), k.constant(k.i(32), 16));
  Value em = k.andi(h32, k.constant(k.i(32), 0x7fff));
  Value shifted = k.shl(em, k.constant(k.i(32), 13));
  Value scale = k.bitcast(k.f32(), k.constant(k.i(32), (127 + 112) << 23));
  Value scaled =
      k.b.create<arith::MulFOp>(k.loc, k.bitcast(k.f32(), shifted), scale);
  Value special =
      k.cmp(arith::CmpIPredicate::uge, em, k.constant(k.i(32), 0x7c00));
  Value bits =
      k.select(special, k.ori(shifted, k.constant(k.i(32), 0x7f800000)),
               k.bitcast(k.i(32), scaled));
  return k.bitcast(k.f32(), k.ori(bits, sign));
}

/// f32 -> f16, to nearest even (F. Giesen's float_to_half_fast3_rtne):
/// NaN -> quiet NaN, at least 65536 -> infinity (65520 up to it rounds
/// there too), subnormal results through an f32 addition that rounds them,
/// normal ones by adding the rounding bias to the bits.
Value truncateToHalf(const Bits &k, Value x) {
  auto c = [&](int64_t v) { return k.constant(k.i(32), v); };
  Value bits = k.bitcast(k.i(32), x);
  Value sign = k.andi(bits, c(0x80000000ll));
  Value a = k.andi(bits, c(0x7fffffff));
  Value infOrNan = k.select(k.cmp(arith::CmpIPredicate::ugt, a, c(0x7f800000)),
                            c(0x7e00), c(0x7c00));
  // Subnormal: adding 0.5 leaves the rounded f16 mantissa in the low bits.
  Value magic = c(126 << 23);
  Value sum = k.b.create<arith::AddFOp>(k.loc, k.bitcast(k.f32(), a),
                                        k.bitcast(k.f32(), magic));
  Value subnormal = k.sub(k.bitcast(k.i(32), sum), magic);
  // Normal: rebias the exponent and round the 13 dropped bits to even.
  Value odd = k.andi(k.shr(a, c(13)), c(1));
  Value normal = k.shr(k.add(k.add(a, c(-(112 << 23) + 0xfff)), odd), c(13));
  Value o =
      k.select(k.cmp(arith::CmpIPredicate::uge, a, c(0x47800000)), infOrNan,
               k.select(k.cmp(arith::CmpIPredicate::ult, a, c(113 << 23)),
                        subnormal, normal));
  Value half = k.ori(o, k.shr(sign, c(16)));
  return k.bitcast(withElement(k.like, k.b.getF16Type()),
                   k.b.create<arith::TruncIOp>(k.loc, k.i(16), half));
}

/// extf from 16 bits to f64 through f32; with `softF16`, f16 -> f32 too.
struct ExtendFrom16 : OpRewritePattern<arith::ExtFOp> {
  ExtendFrom16(MLIRContext *ctx, bool softF16)
      : OpRewritePattern(ctx), softF16(softF16) {}
  bool softF16;

  LogicalResult matchAndRewrite(arith::ExtFOp op,
                                PatternRewriter &b) const override {
    Value in = op.getIn();
    if (!isNarrowFloat(in.getType()))
      return failure();
    Bits k{b, op.getLoc(), op.getType()};
    bool half = getElementTypeOrSelf(in.getType()).isF16();
    if (getElementTypeOrSelf(op.getType()).isF64()) {
      Value f32 = b.create<arith::ExtFOp>(op.getLoc(), k.f32(), in);
      b.replaceOpWithNewOp<arith::ExtFOp>(op, op.getType(), f32);
      return success();
    }
    if (!half || !softF16)
      return failure(); // bf16 -> f32: the upstream pattern.
    b.replaceOp(op, extendHalf(k, in));
    return success();
  }
};

/// truncf to 16 bits from f64 (through f32 rounded to odd); with
/// `softF16`, f32 -> f16.
struct TruncateTo16 : OpRewritePattern<arith::TruncFOp> {
  TruncateTo16(MLIRContext *ctx, bool softF16)
      : OpRewritePattern(ctx), softF16(softF16) {}
  bool softF16;

  LogicalResult matchAndRewrite(arith::TruncFOp op,
                                PatternRewriter &b) const override {
    if (!isNarrowFloat(op.getType()))
      return failure();
    Value in = op.getIn();
    Bits k{b, op.getLoc(), in.getType()};
    if (getElementTypeOrSelf(in.getType()).isF64()) {
      b.replaceOpWithNewOp<arith::TruncFOp>(op, op.getType(),
                                            truncToOdd(k, in));
      return success();
    }
    if (!getElementTypeOrSelf(op.getType()).isF16() || !softF16)
      return failure(); // f32 -> bf16: the upstream pattern.
    b.replaceOp(op, truncateToHalf(k, in));
    return success();
  }
};

/// Integer -> 16-bit float through f32 (exact up to 24 bits) or f64 (exact
/// up to 53 bits), then one rounding to 16 bits.
template <typename Op> struct IntToNarrowFloat : OpRewritePattern<Op> {
  using OpRewritePattern<Op>::OpRewritePattern;
  LogicalResult matchAndRewrite(Op op, PatternRewriter &b) const override {
    if (!isNarrowFloat(op.getType()))
      return failure();
    Bits k{b, op.getLoc(), op.getType()};
    unsigned width =
        getElementTypeOrSelf(op.getIn().getType()).getIntOrFloatBitWidth();
    Value wide =
        b.create<Op>(op.getLoc(), width <= 24 ? k.f32() : k.f64(), op.getIn());
    b.replaceOpWithNewOp<arith::TruncFOp>(op, op.getType(), wide);
    return success();
  }
};

/// 16-bit float -> integer through f32 (exact).
template <typename Op> struct NarrowFloatToInt : OpRewritePattern<Op> {
  using OpRewritePattern<Op>::OpRewritePattern;
  LogicalResult matchAndRewrite(Op op, PatternRewriter &b) const override {
    if (!isNarrowFloat(op.getIn().getType()))
      return failure();
    Bits k{b, op.getLoc(), op.getIn().getType()};
    Value f32 = b.create<arith::ExtFOp>(op.getLoc(), k.f32(), op.getIn());
    b.replaceOpWithNewOp<Op>(op, op.getType(), f32);
    return success();
  }
};

struct CpuExpandFloatCastsPass
    : impl::CpuExpandFloatCastsPassBase<CpuExpandFloatCastsPass> {
  using CpuExpandFloatCastsPassBase::CpuExpandFloatCastsPassBase;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    Operation *root = getOperation();
    // Conversions to and from integers first, so that the emulation below
    // does not route them through f32 (double rounding from i32).
    RewritePatternSet ints(ctx);
    ints.add<
        IntToNarrowFloat<arith::SIToFPOp>, IntToNarrowFloat<arith::UIToFPOp>,
        NarrowFloatToInt<arith::FPToSIOp>, NarrowFloatToInt<arith::FPToUIOp>>(
        ctx);
    if (failed(applyPatternsAndFoldGreedily(root, std::move(ints))))
      return signalPassFailure();

    // Arithmetic left on 16 bits: in f32, between extf and truncf.
    TypeConverter converter;
    arith::populateEmulateUnsupportedFloatsConversions(
        converter, {BFloat16Type::get(ctx), Float16Type::get(ctx)},
        Float32Type::get(ctx));
    RewritePatternSet emulate(ctx);
    arith::populateEmulateUnsupportedFloatsPatterns(emulate, converter);
    ConversionTarget target(*ctx);
    arith::populateEmulateUnsupportedFloatsLegality(target, converter);
    // Selects included: LLVM lowers a select of f16 values through
    // __extendhfsf2 on x86, even with F16C.
    if (failed(applyPartialConversion(root, target, std::move(emulate))))
      return signalPassFailure();

    RewritePatternSet casts(ctx);
    casts.add<ExtendFrom16, TruncateTo16>(ctx, softF16);
    arith::populateExpandBFloat16Patterns(casts);
    if (failed(applyPatternsAndFoldGreedily(root, std::move(casts))))
      return signalPassFailure();
  }
};

} // namespace
} // namespace loom::codegen
