//===- CpuTransforms.cpp - passes of the CPU code path --------------------===//

#include "compiler/codegen/cpu/CpuTransforms.h"
#include "compiler/codegen/cpu/ConvLayout.h"
#include "loom/common/CodegenAbi.h"

#include "dialects/kernel/KernelOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/Path.h"

#include <cstring>

#include <optional>

using namespace mlir;

namespace loom::codegen {

#define GEN_PASS_DEF_CPUMATHAPPROXIMATIONPASS
#define GEN_PASS_DEF_CPUFUSIONPASS
#define GEN_PASS_DEF_CPULIBRARYCALLSPASS
#define GEN_PASS_DEF_CPUPROFILEHOOKSPASS
#define GEN_PASS_DEF_CPUINLINEKERNELSPASS
#define GEN_PASS_DEF_CPUSCALARACCUMULATORSPASS
#include "compiler/codegen/cpu/Passes.h.inc"

namespace {

/// Whether `op`'s body is `out + a * b` (either operand order).
bool isMulAdd(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  if (body.getNumArguments() != 3 || body.getOperations().size() != 3)
    return false;
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getValues()[0].getDefiningOp<arith::AddFOp>();
  if (!add)
    return false;
  Value a = body.getArgument(0), b = body.getArgument(1),
        c = body.getArgument(2);
  arith::MulFOp mul;
  if (add.getLhs() == c)
    mul = add.getRhs().getDefiningOp<arith::MulFOp>();
  else if (add.getRhs() == c)
    mul = add.getLhs().getDefiningOp<arith::MulFOp>();
  if (!mul)
    return false;
  return (mul.getLhs() == a && mul.getRhs() == b) ||
         (mul.getLhs() == b && mul.getRhs() == a);
}

/// Whether expression `e` is loop dim `d`.
bool isDim(AffineExpr e, int64_t d) {
  auto dim = dyn_cast<AffineDimExpr>(e);
  return dim && dim.getPosition() == d;
}

/// The shape flags (see loom_cpu_matmul_f32) when the loops and maps of
/// `op` are the matmul contraction --loom-graph-to-linalg emits: loops
/// (batch..., [m], [n], k), output (batch..., [m], [n]), inputs 0 and 1
/// (lhs, rhs) each with its batch dims right-aligned (a broadcast size-1
/// dim reads index 0), then its matrix dims; any further input is a
/// scalar (rank 0).
std::optional<int64_t> contractionFlags(linalg::GenericOp op) {
  if (op.getNumDpsInputs() < 2 || op.getNumDpsInits() != 1 ||
      !op.hasPureBufferSemantics())
    return std::nullopt;
  auto iterators = op.getIteratorTypesArray();
  int64_t loops = iterators.size(), k = loops - 1;
  for (int64_t i = 0; i < loops; ++i)
    if ((iterators[i] == utils::IteratorType::reduction) != (i == k))
      return std::nullopt;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  AffineMap lhs = maps[0], rhs = maps[1], out = maps.back();
  for (AffineMap scalar : ArrayRef(maps).slice(2, maps.size() - 3))
    if (scalar.getNumResults() != 0)
      return std::nullopt;
  if (out.getNumResults() != loops - 1)
    return std::nullopt;
  for (int64_t i = 0; i < loops - 1; ++i)
    if (!isDim(out.getResult(i), i))
      return std::nullopt;
  bool lhsVec = lhs.getNumResults() == 1, rhsVec = rhs.getNumResults() == 1;
  int64_t batch = loops - 1 - !lhsVec - !rhsVec;
  if (batch < 0)
    return std::nullopt;
  int64_t m = batch, n = batch + !lhsVec;
  int64_t flags = (lhsVec ? abi::kMatmulLhsVector : 0) |
                  (rhsVec ? abi::kMatmulRhsVector : 0);

  // Batch exprs of an operand with `own` batch dims.
  auto batchOk = [&](AffineMap map, int64_t matrixDims) {
    int64_t own = map.getNumResults() - matrixDims;
    if (own < 0 || own > batch)
      return false;
    for (int64_t j = 0; j < own; ++j) {
      AffineExpr e = map.getResult(j);
      auto c = dyn_cast<AffineConstantExpr>(e);
      if (!isDim(e, batch - own + j) && !(c && c.getValue() == 0))
        return false;
    }
    return true;
  };
  // The matrix exprs: (x, y) or, transposed, (y, x).
  auto matrix = [&](AffineMap map, int64_t x, int64_t y, bool &trans) {
    int64_t r = map.getNumResults();
    AffineExpr a = map.getResult(r - 2), b = map.getResult(r - 1);
    if (isDim(a, x) && isDim(b, y))
      return !(trans = false);
    if (isDim(a, y) && isDim(b, x))
      return (trans = true);
    return false;
  };
  bool trans = false;
  if (lhsVec) {
    if (!isDim(lhs.getResult(0), k))
      return std::nullopt;
  } else {
    if (!batchOk(lhs, 2) || !matrix(lhs, m, k, trans))
      return std::nullopt;
    flags |= trans ? abi::kMatmulTransposeLhs : 0;
  }
  if (rhsVec) {
    if (!isDim(rhs.getResult(0), k))
      return std::nullopt;
  } else {
    if (!batchOk(rhs, 2) || !matrix(rhs, k, n, trans))
      return std::nullopt;
    flags |= trans ? abi::kMatmulTransposeRhs : 0;
  }
  return flags;
}

/// The flags of loom_cpu_matmul_f32 when `op` is an f32 matmul
/// contraction (contractionFlags, body `out + lhs * rhs`).
std::optional<int64_t> matmulFlags(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 2 || !isMulAdd(op))
    return std::nullopt;
  for (Value v : op->getOperands()) {
    auto type = dyn_cast<MemRefType>(v.getType());
    if (!type || !type.getElementType().isF32())
      return std::nullopt;
  }
  return contractionFlags(op);
}

/// One operand of an integer matmul's body: block argument `arg` (an
/// 8-bit input) widened (`isUnsigned`: extui, else extsi) less its zero
/// point: the block argument of a scalar input (`zeroArg`), a constant
/// (`zeroConst`, already widened) or none (0).
struct IntegerOperand {
  BlockArgument arg;
  bool isUnsigned = false;
  BlockArgument zeroArg;
  int64_t zeroConst = 0;
};

/// `v` as `ext(arg)` or `ext(arg) - zero` (IntegerOperand).
std::optional<IntegerOperand> integerOperand(Value v) {
  IntegerOperand r;
  Value zero;
  if (auto sub = v.getDefiningOp<arith::SubIOp>()) {
    v = sub.getLhs();
    zero = sub.getRhs();
  }
  // `ext(x)` of an 8-bit x: its kind, and x.
  auto widened = [](Value e, bool &isUnsigned) -> Value {
    if (auto u = e.getDefiningOp<arith::ExtUIOp>()) {
      isUnsigned = true;
      return u.getIn();
    }
    if (auto si = e.getDefiningOp<arith::ExtSIOp>()) {
      isUnsigned = false;
      return si.getIn();
    }
    return Value();
  };
  auto arg = dyn_cast_or_null<BlockArgument>(widened(v, r.isUnsigned));
  if (!arg || !arg.getType().isInteger(8))
    return std::nullopt;
  r.arg = arg;
  if (!zero)
    return r;
  APInt c;
  if (matchPattern(zero, m_ConstantInt(&c))) {
    r.zeroConst = c.getSExtValue();
    return r;
  }
  bool zeroUnsigned = false;
  Value z = widened(zero, zeroUnsigned);
  if (z && zeroUnsigned == r.isUnsigned && matchPattern(z, m_ConstantInt(&c))) {
    r.zeroConst = r.isUnsigned ? c.getZExtValue() : c.getSExtValue();
    return r;
  }
  r.zeroArg = dyn_cast_or_null<BlockArgument>(z);
  if (!r.zeroArg || zeroUnsigned != r.isUnsigned ||
      !r.zeroArg.getType().isInteger(8))
    return std::nullopt;
  return r;
}

/// An integer matmul (graph.matmul_integer as --loom-graph-to-linalg
/// lowers it, after folds): the contraction of inputs 0 and 1 (8-bit) into
/// an i32 output with body `out + (ext(lhs) - zl) * (ext(rhs) - zr)`.
struct IntegerMatmul {
  IntegerOperand lhs, rhs;
  int64_t flags;
};

/// The operands of an integer product's body, `out + (ext(in0) - z0) *
/// (ext(in1) - z1)` into an i32 output (graph.matmul_integer's and
/// graph.conv_integer's lowerings, after folds): inputs 0 and 1, in order.
std::optional<std::pair<IntegerOperand, IntegerOperand>>
integerProductBody(linalg::GenericOp op) {
  auto out = dyn_cast<MemRefType>(op.getDpsInits()[0].getType());
  if (!out || !out.getElementType().isInteger(32))
    return std::nullopt;
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getValues()[0].getDefiningOp<arith::AddIOp>();
  if (!add)
    return std::nullopt;
  Value acc = body.getArguments().back();
  Value product = add.getLhs() == acc ? add.getRhs() : add.getLhs();
  auto mul = product.getDefiningOp<arith::MulIOp>();
  if (!mul || (add.getLhs() != acc && add.getRhs() != acc))
    return std::nullopt;
  std::optional<IntegerOperand> a = integerOperand(mul.getLhs()),
                                b = integerOperand(mul.getRhs());
  if (!a || !b)
    return std::nullopt;
  if (a->arg.getArgNumber() == 1)
    std::swap(a, b);
  if (a->arg.getArgNumber() != 0 || b->arg.getArgNumber() != 1)
    return std::nullopt;
  return std::make_pair(*a, *b);
}

std::optional<IntegerMatmul> integerMatmul(linalg::GenericOp op) {
  std::optional<int64_t> flags = contractionFlags(op);
  if (!flags)
    return std::nullopt;
  auto operands = integerProductBody(op);
  if (!operands)
    return std::nullopt;
  auto [a, b] = *operands;
  *flags |= (a.isUnsigned ? abi::kMatmulLhsUnsigned : 0) |
            (b.isUnsigned ? abi::kMatmulRhsUnsigned : 0);
  return IntegerMatmul{a, b, *flags};
}

/// The stride and dilation of window expression `e` over `loops` loop
/// dims when it is `d[out] * stride + d[k] * dilation` (both positive),
/// read off by evaluating it at unit vectors and checked linear; none
/// otherwise.
std::optional<std::pair<int64_t, int64_t>>
windowStep(AffineExpr e, int64_t loops, int64_t out, int64_t k) {
  MLIRContext *ctx = e.getContext();
  auto at = [&](int64_t oneAt, int64_t twoAt) -> std::optional<int64_t> {
    SmallVector<AffineExpr> values;
    for (int64_t d = 0; d < loops; ++d)
      values.push_back(
          getAffineConstantExpr(d == oneAt ? 1 : (d == twoAt ? 2 : 0), ctx));
    auto c = dyn_cast<AffineConstantExpr>(
        simplifyAffineExpr(e.replaceDims(values), 0, 0));
    if (!c)
      return std::nullopt;
    return c.getValue();
  };
  std::optional<int64_t> zero = at(-1, -1), s = at(out, -1), d = at(k, -1),
                         both = at(out, k);
  if (!zero || *zero != 0 || !s || !d || *s < 1 || *d < 1 || !both ||
      *both != *s + 2 * *d)
    return std::nullopt;
  for (int64_t other = 0; other < loops; ++other) {
    if (other == out || other == k)
      continue;
    std::optional<int64_t> v = at(other, -1);
    if (!v || *v != 0)
      return std::nullopt;
  }
  return std::make_pair(*s, *d);
}

/// The [N, C, H, W] buffer that 5-D buffer `v` ([N, G, C/G, H, W]) splits:
/// the source of the memref.expand_shape that made it; null otherwise.
Value ungrouped(Value v) {
  auto expand = v.getDefiningOp<memref::ExpandShapeOp>();
  if (!expand || expand.getSrcType().getRank() != 4)
    return {};
  SmallVector<ReassociationIndices> want = {{0}, {1, 2}, {3}, {4}};
  if (expand.getReassociationIndices() != want)
    return {};
  return expand.getSrc();
}

/// A 2-D integer convolution (graph.conv_integer as --loom-graph-to-linalg
/// lowers it): loops (n, g, o, oh, ow, c, kh, kw), the input [N, G, C/G,
/// H, W] read at (n, g, c, oh * sh + kh * dh, ow * sw + kw * dw), the
/// filter [G, O/G, C/G, kh, kw] at (g, o, c, kh, kw), further inputs
/// scalars, the i32 output [N, G, O/G, Ho, Wo] at (n, g, o, oh, ow); the
/// body integerProductBody's.
struct IntegerConv {
  IntegerOperand in, filter;
  int64_t strides[2], dilations[2];
  int64_t flags;
};

std::optional<IntegerConv> integerConv(linalg::GenericOp op) {
  if (op.getNumDpsInputs() < 2 || op.getNumDpsInits() != 1 ||
      !op.hasPureBufferSemantics() || op.getNumLoops() != 8)
    return std::nullopt;
  auto iterators = op.getIteratorTypesArray();
  for (int64_t i = 0; i < 8; ++i)
    if ((iterators[i] == utils::IteratorType::reduction) != (i >= 5))
      return std::nullopt;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  AffineMap in = maps[0], filter = maps[1], out = maps.back();
  for (AffineMap scalar : ArrayRef(maps).slice(2, maps.size() - 3))
    if (scalar.getNumResults() != 0)
      return std::nullopt;
  auto dims = [](AffineMap m, ArrayRef<int64_t> want) {
    if (m.getNumResults() != want.size())
      return false;
    for (auto [e, d] : llvm::zip(m.getResults(), want))
      if (!isDim(e, d))
        return false;
    return true;
  };
  if (!dims(out, {0, 1, 2, 3, 4}) || !dims(filter, {1, 2, 5, 6, 7}) ||
      in.getNumResults() != 5 || !isDim(in.getResult(0), 0) ||
      !isDim(in.getResult(1), 1) || !isDim(in.getResult(2), 5))
    return std::nullopt;
  IntegerConv conv;
  for (int64_t i = 0; i < 2; ++i) {
    std::optional<std::pair<int64_t, int64_t>> step =
        windowStep(in.getResult(3 + i), 8, 3 + i, 6 + i);
    if (!step)
      return std::nullopt;
    conv.strides[i] = step->first;
    conv.dilations[i] = step->second;
  }
  // The input and output as the [N, C, H, W] buffers they split (the
  // call's operands); an output allocated 5-D is split from a 4-D one.
  Value out5 = op.getDpsInits()[0];
  auto outAlloc = out5.getDefiningOp<memref::AllocOp>();
  if (!ungrouped(op.getDpsInputs()[0]) ||
      (!ungrouped(out5) &&
       !(outAlloc && outAlloc.getType().getLayout().isIdentity())))
    return std::nullopt;
  auto operands = integerProductBody(op);
  if (!operands)
    return std::nullopt;
  conv.in = operands->first;
  conv.filter = operands->second;
  conv.flags = (conv.in.isUnsigned ? abi::kIntegerConvInUnsigned : 0) |
               (conv.filter.isUnsigned ? abi::kIntegerConvFilterUnsigned : 0);
  return conv;
}

/// erf of f32 (scalars and vectors) as one rational function of x on
/// [-4, 4], x * P(x^2) / Q(x^2), and +-1 outside (XLA's and Eigen's
/// approximation: at most 4.5e-7 from erf, 7 ulp near +-1): 12 FMAs and a
/// divide, where MLIR's piecewise approximation takes two divides and ~20
/// selects. BERT's GELU is the loop it matters in: the largest of an int8
/// BERT after its matmuls.
struct RationalErf : OpRewritePattern<math::ErfOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::ErfOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!getElementTypeOrSelf(type).isF32())
      return failure();
    static constexpr double kP[] = {
        -2.72614225801306e-10, 2.77068142495902e-08,  -2.10102402082508e-06,
        -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
        -1.60960333262415e-02};
    static constexpr double kQ[] = {
        -1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
        -7.37332916720468e-03, -1.42647390514189e-02};
    Location loc = op.getLoc();
    auto constant = [&](double v) -> Value {
      TypedAttr attr = rewriter.getF32FloatAttr(static_cast<float>(v));
      if (auto vector = dyn_cast<VectorType>(type))
        attr = SplatElementsAttr::get(vector, attr);
      return rewriter.create<arith::ConstantOp>(loc, attr);
    };
    auto flags = op.getFastmath();
    Value x = rewriter.create<arith::MaximumFOp>(loc, op.getOperand(),
                                                 constant(-4.0), flags);
    x = rewriter.create<arith::MinimumFOp>(loc, x, constant(4.0), flags);
    Value x2 = rewriter.create<arith::MulFOp>(loc, x, x, flags);
    auto horner = [&](ArrayRef<double> coefficients) {
      Value acc = constant(coefficients.front());
      for (double c : coefficients.drop_front())
        acc = rewriter.create<math::FmaOp>(loc, acc, x2, constant(c), flags);
      return acc;
    };
    Value p = rewriter.create<arith::MulFOp>(loc, x, horner(kP), flags);
    rewriter.replaceOpWithNewOp<arith::DivFOp>(op, p, horner(kQ), flags);
    return success();
  }
};

struct CpuMathApproximationPass
    : impl::CpuMathApproximationPassBase<CpuMathApproximationPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RationalErf>(&getContext(), /*benefit=*/2);
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
    // Reductions may reassociate (so LLVM vectorizes them, as every BLAS
    // and ORT do) and multiply-adds may contract into FMAs.
    getOperation()->walk([](linalg::GenericOp op) {
      bool reduction = llvm::is_contained(op.getIteratorTypesArray(),
                                          utils::IteratorType::reduction);
      auto flags = arith::FastMathFlags::contract;
      if (reduction)
        flags = flags | arith::FastMathFlags::reassoc;
      op.getRegion().walk([&](arith::ArithFastMathInterface math) {
        // Not on float conversions: with contract, canonicalization folds
        // extf(truncf(x)) to x, and a fused chain of f16/bf16 ops would
        // skip the roundings its types say (results that would depend on
        // fusion decisions).
        if (isa<arith::ExtFOp, arith::TruncFOp>(math))
          return;
        math->setAttr(math.getFastMathAttrName(),
                      arith::FastMathFlagsAttr::get(op.getContext(), flags));
      });
    });
  }
};

struct CpuFusionPass : impl::CpuFusionPassBase<CpuFusionPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(
        patterns, [](OpOperand *operand) {
          auto consumer = dyn_cast<linalg::GenericOp>(operand->getOwner());
          if (consumer && linalg::isaContractionOpInterface(consumer))
            return false;
          // A producer with several users is computed once and stored,
          // not recomputed inside each of them (softmax's three passes
          // would each redo the scaling, masking and exp).
          return operand->get().hasOneUse();
        });
    linalg::GenericOp::getCanonicalizationPatterns(patterns, &getContext());
    // A kernel.fusion whose body folded away (x / 1) forwards its operands.
    kernel::FusionOp::getCanonicalizationPatterns(patterns, &getContext());
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

/// Whether `op` only writes `value` into every element of `buffer`: a
/// linalg.fill or a generic/map without inputs yielding it.
bool fills(Operation *op, Value buffer, function_ref<bool(Value)> value) {
  if (auto fill = dyn_cast<linalg::FillOp>(op))
    return fill.output() == buffer && value(fill.value());
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || !isa<linalg::GenericOp, linalg::MapOp>(op) ||
      linalgOp.getNumDpsInputs() != 0 || linalgOp.getNumDpsInits() != 1 ||
      linalgOp.getDpsInits()[0] != buffer ||
      !llvm::all_of(linalgOp.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }))
    return false;
  Block &body = op->getRegion(0).front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (yield.getValues().size() != 1)
    return false;
  // The body: index ops (linalg.map's) and the yield of a value from above.
  for (Operation &inner : body.without_terminator())
    if (!isa<linalg::IndexOp>(inner))
      return false;
  Value v = yield.getValues()[0];
  return v.getParentRegion() != &op->getRegion(0) && value(v);
}

bool isZero(Value v) { return matchPattern(v, m_AnyZeroFloat()); }

/// Whether the ops strictly between `from` and `to` (one block) can
/// neither write a buffer that existed before `from` nor free one: pure
/// ops, allocations, and linalg ops that write only buffers allocated
/// among them.
bool onlyFreshWritesBetween(Operation *from, Operation *to) {
  if (from->getBlock() != to->getBlock() || !from->isBeforeInBlock(to))
    return false;
  for (Operation *op = from->getNextNode(); op != to; op = op->getNextNode()) {
    if (isPure(op) || isa<memref::AllocOp, memref::AllocaOp>(op))
      continue;
    auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
    if (!linalgOp)
      return false;
    for (Value init : linalgOp.getDpsInits()) {
      Operation *def = init.getDefiningOp();
      if (!isa_and_nonnull<memref::AllocOp>(def) || !from->isBeforeInBlock(def))
        return false;
    }
  }
  return true;
}

/// A convolution or pooling input padded with a constant (tensor.pad,
/// bufferized): an allocation filled with it and the source copied into a
/// window of it.
struct ZeroPadded {
  Value source;
  int64_t top, left, bottom, right;
  SmallVector<Operation *> ops; // to erase once the kernel pads instead
};

/// `user`'s `input` when it is padded with a constant that `fillValue`
/// accepts, read by `user` alone.
std::optional<ZeroPadded> padded(Operation *user, Value input,
                                 function_ref<bool(Value)> fillValue) {
  auto alloc = input.getDefiningOp<memref::AllocOp>();
  if (!alloc)
    return std::nullopt;
  Operation *fill = nullptr;
  memref::SubViewOp window;
  SmallVector<memref::DimOp> dims;
  for (Operation *other : alloc->getUsers()) {
    if (other == user)
      continue;
    if (auto dim = dyn_cast<memref::DimOp>(other))
      dims.push_back(dim);
    else if (fills(other, alloc, fillValue) && !fill)
      fill = other;
    else if (auto sub = dyn_cast<memref::SubViewOp>(other); sub && !window)
      window = sub;
    else
      return std::nullopt;
  }
  if (!fill || !window || !window->hasOneUse())
    return std::nullopt;
  auto copy = dyn_cast<memref::CopyOp>(*window->user_begin());
  if (!copy || copy.getTarget() != window.getResult() ||
      !fill->isBeforeInBlock(copy) || !onlyFreshWritesBetween(copy, user))
    return std::nullopt;
  auto full = cast<MemRefType>(alloc.getType());
  auto part = dyn_cast<MemRefType>(copy.getSource().getType());
  ArrayRef<int64_t> offsets = window.getStaticOffsets();
  if (!part || part.getRank() != 4 ||
      window.getStaticSizes() != part.getShape() ||
      !llvm::all_of(window.getStaticStrides(),
                    [](int64_t s) { return s == 1; }))
    return std::nullopt;
  // Batch and channels whole; rows and columns padded by known amounts.
  for (int64_t d = 0; d < 4; ++d)
    if (ShapedType::isDynamic(offsets[d]) || (d < 2 && offsets[d] != 0) ||
        (d >= 2 && (full.isDynamicDim(d) || part.isDynamicDim(d))) ||
        (d < 2 && full.getDimSize(d) != part.getDimSize(d)))
      return std::nullopt;
  // Sizes read off the padded buffer (the output's batch size): batch and
  // channels read off the source instead, rows and columns are constants.
  Value source = copy.getSource();
  for (memref::DimOp dim : dims) {
    std::optional<int64_t> d = dim.getConstantIndex();
    Operation *def = source.getDefiningOp();
    bool before =
        def ? def->getBlock() == dim->getBlock() && def->isBeforeInBlock(dim)
            : cast<BlockArgument>(source).getOwner() == dim->getBlock();
    if (!d || (*d < 2 && !before))
      return std::nullopt;
  }
  for (memref::DimOp dim : dims) {
    OpBuilder b(dim);
    int64_t d = *dim.getConstantIndex();
    Value size =
        d < 2
            ? b.create<memref::DimOp>(dim.getLoc(), source, d).getResult()
            : b.create<arith::ConstantIndexOp>(dim.getLoc(), full.getDimSize(d))
                  .getResult();
    dim.replaceAllUsesWith(size);
    dim->erase();
  }
  ZeroPadded p;
  p.source = source;
  p.top = offsets[2], p.left = offsets[3];
  p.bottom = full.getDimSize(2) - p.top - part.getDimSize(2);
  p.right = full.getDimSize(3) - p.left - part.getDimSize(3);
  p.ops = {copy, window, fill, alloc};
  return p;
}

std::optional<ZeroPadded> zeroPadded(linalg::Conv2DNchwFchwOp conv) {
  return padded(conv, conv.getInputs()[0], isZero);
}

bool isNegativeInfinity(Value v) {
  FloatAttr f;
  return matchPattern(v, m_Constant(&f)) && f.getValue().isInfinity() &&
         f.getValue().isNegative();
}

/// A 2-D max pooling as --loom-graph-to-linalg lowers graph.max_pool over
/// f32 NCHW: loops (n, c, oh, ow, kh, kw), the input read at (n, c, oh *
/// sh + kh * dh, ow * sw + kw * dw), a [kh, kw] buffer giving the window's
/// shape, the output at (n, c, oh, ow) filled with -inf right before, the
/// body max(out, in), or max(out, max(in, 0)) where a ReLU before the
/// pooling was fused into it (the same as a ReLU after it).
struct MaxPool {
  int64_t kernel[2], strides[2], dilations[2];
  bool relu;
};

std::optional<MaxPool> maxPool(linalg::GenericOp op) {
  auto f32x4 = [](Value v) {
    auto type = dyn_cast<MemRefType>(v.getType());
    return type && type.getRank() == 4 && type.getElementType().isF32();
  };
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      !op.hasPureBufferSemantics() || op.getNumLoops() != 6 ||
      !f32x4(op.getDpsInputs()[0]) || !f32x4(op.getDpsInits()[0]))
    return std::nullopt;
  auto iterators = op.getIteratorTypesArray();
  for (int64_t i = 0; i < 6; ++i)
    if ((iterators[i] == utils::IteratorType::reduction) != (i >= 4))
      return std::nullopt;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  auto window = dyn_cast<MemRefType>(op.getDpsInputs()[1].getType());
  if (!window || !window.hasStaticShape() || window.getRank() != 2 ||
      maps[1].getNumResults() != 2 || !isDim(maps[1].getResult(0), 4) ||
      !isDim(maps[1].getResult(1), 5) || maps[2].getNumResults() != 4 ||
      maps[0].getNumResults() != 4 || !isDim(maps[0].getResult(0), 0) ||
      !isDim(maps[0].getResult(1), 1))
    return std::nullopt;
  for (int64_t d = 0; d < 4; ++d)
    if (!isDim(maps[2].getResult(d), d))
      return std::nullopt;
  MaxPool pool;
  // `o * stride + k * dilation`: its coefficients, read off at unit
  // vectors (and checked linear).
  MLIRContext *ctx = op.getContext();
  for (int64_t i = 0; i < 2; ++i) {
    AffineExpr e = maps[0].getResult(2 + i);
    auto at = [&](int64_t oneAt, int64_t twoAt) -> std::optional<int64_t> {
      SmallVector<AffineExpr> values;
      for (int64_t d = 0; d < 6; ++d)
        values.push_back(getAffineConstantExpr(d == oneAt   ? 1
                                               : d == twoAt ? 2
                                                            : 0,
                                               ctx));
      auto c = dyn_cast<AffineConstantExpr>(
          simplifyAffineExpr(e.replaceDims(values), 0, 0));
      return c ? std::optional<int64_t>(c.getValue()) : std::nullopt;
    };
    std::optional<int64_t> zero = at(-1, -1), s = at(2 + i, -1),
                           d = at(4 + i, -1), both = at(2 + i, 4 + i);
    if (!zero || *zero != 0 || !s || !d || *s < 1 || *d < 1 || !both ||
        *both != *s + 2 * *d)
      return std::nullopt;
    for (int64_t other = 0; other < 6; ++other)
      if (other != 2 + i && other != 4 + i) {
        std::optional<int64_t> v = at(other, -1);
        if (!v || *v != 0)
          return std::nullopt;
      }
    pool.kernel[i] = window.getDimSize(i);
    pool.strides[i] = *s;
    pool.dilations[i] = *d;
  }
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  Value in = body.getArgument(0), out = body.getArgument(2);
  pool.relu = false;
  if (body.getOperations().size() == 3) {
    auto relu = dyn_cast<arith::MaximumFOp>(body.front());
    if (!relu || !((relu.getLhs() == in && isZero(relu.getRhs())) ||
                   (relu.getRhs() == in && isZero(relu.getLhs()))))
      return std::nullopt;
    in = relu.getResult();
    pool.relu = true;
  }
  auto max = dyn_cast<arith::MaximumFOp>(yield.getValues()[0].getDefiningOp());
  if (body.getOperations().size() != 2 + pool.relu || !max ||
      !((max.getLhs() == in && max.getRhs() == out) ||
        (max.getLhs() == out && max.getRhs() == in)))
    return std::nullopt;
  auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
  if (!fill || fill.output() != op.getDpsInits()[0] ||
      !isNegativeInfinity(fill.value()))
    return std::nullopt;
  return pool;
}

/// The bias a convolution's output is initialized with: a generic
/// broadcasting a [F] buffer along the channel dim, right before it.
Value channelBias(linalg::Conv2DNchwFchwOp conv) {
  auto init = dyn_cast_or_null<linalg::GenericOp>(conv->getPrevNode());
  Value out = conv.getOutputs()[0];
  if (!init || init.getNumDpsInputs() != 1 || init.getNumDpsInits() != 1 ||
      init.getDpsInits()[0] != out)
    return {};
  SmallVector<AffineMap> maps = init.getIndexingMapsArray();
  Value bias = init.getDpsInputs()[0];
  auto type = dyn_cast<MemRefType>(bias.getType());
  Block &body = init.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (!type || type.getRank() != 1 || !type.getElementType().isF32() ||
      maps[0].getNumResults() != 1 || !isDim(maps[0].getResult(0), 1) ||
      !maps[1].isIdentity() || body.getOperations().size() != 1 ||
      yield.getValues()[0] != body.getArgument(0))
    return {};
  return bias;
}

/// The ReLU that is the only reader of the convolution's output `out`: a
/// generic `max(x, 0)` into a fresh buffer of the same type that nothing
/// used before it.
linalg::GenericOp onlyRelu(linalg::Conv2DNchwFchwOp conv) {
  Value out = conv.getOutputs()[0];
  if (!out.getDefiningOp<memref::AllocOp>())
    return {};
  linalg::GenericOp relu;
  for (Operation *user : out.getUsers()) {
    if (user == conv.getOperation())
      continue;
    auto generic = dyn_cast<linalg::GenericOp>(user);
    if (relu || !generic)
      return {};
    relu = generic;
  }
  if (!relu || relu->getBlock() != conv->getBlock() ||
      relu.getNumDpsInputs() != 1 || relu.getNumDpsInits() != 1 ||
      relu.getDpsInputs()[0] != out ||
      relu.getDpsInits()[0].getType() != out.getType() ||
      !llvm::all_of(relu.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }))
    return {};
  Block &body = relu.getRegion().front();
  if (body.getOperations().size() != 2)
    return {};
  auto max = dyn_cast<arith::MaximumFOp>(body.front());
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (!max || yield.getValues()[0] != max.getResult() ||
      !((max.getLhs() == body.getArgument(0) && isZero(max.getRhs())) ||
        (max.getRhs() == body.getArgument(0) && isZero(max.getLhs()))))
    return {};
  Value result = relu.getDpsInits()[0];
  auto alloc = result.getDefiningOp<memref::AllocOp>();
  if (!alloc)
    return {};
  for (Operation *user : result.getUsers())
    if (user != relu.getOperation() &&
        (user->getBlock() != relu->getBlock() || user->isBeforeInBlock(relu)))
      return {};
  return relu;
}

/// Whether buffer `v` is read only while the artifact is loaded: a weight
/// argument of the function (loomc compile's outlined constants: the
/// argument's graph.weight attribute, or kWeightArgsAttr where the
/// argument attributes were dropped) or a constant global, seen through
/// views.
bool isConstantBuffer(Value v) {
  while (true) {
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
      if (!func || !arg.getOwner()->isEntryBlock())
        return false;
      if (func.getArgAttr(arg.getArgNumber(), "graph.weight"))
        return true;
      auto weights = func->getAttrOfType<DenseI64ArrayAttr>(kWeightArgsAttr);
      return weights &&
             llvm::is_contained(weights.asArrayRef(), arg.getArgNumber());
    }
    Operation *def = v.getDefiningOp();
    if (auto get = dyn_cast_or_null<memref::GetGlobalOp>(def)) {
      auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
          def, get.getNameAttr());
      return global && global.getConstant();
    }
    auto view = dyn_cast_or_null<ViewLikeOpInterface>(def);
    if (!view)
      return false;
    v = view.getViewSource();
  }
}

struct CpuLibraryCallsPass
    : impl::CpuLibraryCallsPassBase<CpuLibraryCallsPass> {
  /// Replaces `op` by a call of `name(memref<*xf32> x3, i64 x ints)` on
  /// its three memref operands (as unranked memrefs) and `ints`.
  static void replaceByCall(ModuleOp module, Operation *op, StringRef name,
                            ArrayRef<int64_t> ints) {
    OpBuilder b(op);
    Location loc = op->getLoc();
    auto unranked = UnrankedMemRefType::get(b.getF32Type(), 0);
    SmallVector<Type> types(3, unranked);
    types.append(ints.size(), b.getI64Type());
    declareRuntimeFunction(module, name, b.getFunctionType(types, {}),
                           /*cInterface=*/true);
    SmallVector<Value> args;
    for (Value v : op->getOperands())
      args.push_back(b.create<memref::CastOp>(loc, unranked, v));
    for (int64_t i : ints)
      args.push_back(b.create<arith::ConstantIntOp>(loc, i, 64));
    b.create<func::CallOp>(loc, name, TypeRange{}, args);
    op->erase();
  }

  /// An integer matmul becomes a call of loom_cpu_matmul_i8(lhs, rhs, out,
  /// lhs zero, rhs zero, flags), the zero points loaded and widened to
  /// i32 here.
  static void replaceIntegerMatmul(ModuleOp module, linalg::GenericOp op,
                                   const IntegerMatmul &m) {
    OpBuilder b(op);
    Location loc = op->getLoc();
    Type i8 = b.getI8Type(), i32 = b.getI32Type();
    auto bytes = UnrankedMemRefType::get(i8, 0),
         ints = UnrankedMemRefType::get(i32, 0);
    declareRuntimeFunction(
        module, abi::kCpuMatmulI8,
        b.getFunctionType({bytes, bytes, ints, i32, i32, b.getI64Type()}, {}),
        /*cInterface=*/true);
    auto zero = [&](const IntegerOperand &x) -> Value {
      if (!x.zeroArg)
        return b.create<arith::ConstantIntOp>(loc, x.zeroConst, 32);
      Value z = b.create<memref::LoadOp>(
          loc, op.getDpsInputs()[x.zeroArg.getArgNumber()], ValueRange{});
      if (x.isUnsigned)
        return b.create<arith::ExtUIOp>(loc, i32, z);
      return b.create<arith::ExtSIOp>(loc, i32, z);
    };
    SmallVector<Value> args = {
        b.create<memref::CastOp>(loc, bytes, op.getDpsInputs()[0]),
        b.create<memref::CastOp>(loc, bytes, op.getDpsInputs()[1]),
        b.create<memref::CastOp>(loc, ints, op.getDpsInits()[0]),
        zero(m.lhs),
        zero(m.rhs),
        b.create<arith::ConstantIntOp>(loc, m.flags, 64)};
    b.create<func::CallOp>(loc, abi::kCpuMatmulI8, TypeRange{}, args);
    op->erase();
  }

  /// An integer convolution becomes a call of loom_cpu_conv2d_i8(in,
  /// filter, out, in zero, filter zero, strides, dilations, padding,
  /// flags) on the [N, C, H, W] input and output and the grouped filter,
  /// the zero points loaded and widened to i32 here; the input comes
  /// padded (with its zero point), so the call's padding is 0.
  /// The 5-D allocation `alloc` ([N, G, O/G, H, W]) as the split of a 4-D
  /// one ([N, O, H, W]), which its users' views back to 4-D read directly.
  static void ungroupAllocation(memref::AllocOp alloc) {
    OpBuilder b(alloc);
    Location loc = alloc.getLoc();
    MemRefType t = alloc.getType();
    auto sizes = alloc.getMixedSizes();
    SmallVector<int64_t> shape = {t.getDimSize(0),
                                  t.getDimSize(1) * t.getDimSize(2),
                                  t.getDimSize(3), t.getDimSize(4)};
    SmallVector<Value> dynamic;
    for (int64_t d : {0, 3, 4})
      if (t.isDynamicDim(d))
        dynamic.push_back(cast<Value>(sizes[d]));
    auto flat = b.create<memref::AllocOp>(
        loc, MemRefType::get(shape, t.getElementType()), dynamic,
        alloc.getAlignmentAttr());
    SmallVector<ReassociationIndices> split = {{0}, {1, 2}, {3}, {4}};
    Value view =
        b.create<memref::ExpandShapeOp>(loc, t.getShape(), flat, split, sizes);
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers())) {
      auto collapse = dyn_cast<memref::CollapseShapeOp>(user);
      if (collapse && collapse.getReassociationIndices() == split &&
          collapse.getType() == flat.getType()) {
        collapse.replaceAllUsesWith(flat.getResult());
        collapse->erase();
      }
    }
    alloc.replaceAllUsesWith(view);
    alloc->erase();
  }

  static func::CallOp replaceIntegerConv(ModuleOp module, linalg::GenericOp op,
                                         const IntegerConv &c) {
    if (auto alloc = op.getDpsInits()[0].getDefiningOp<memref::AllocOp>())
      ungroupAllocation(alloc);
    OpBuilder b(op);
    Location loc = op->getLoc();
    Type i8 = b.getI8Type(), i32 = b.getI32Type(), i64 = b.getI64Type();
    auto bytes = UnrankedMemRefType::get(i8, 0),
         ints = UnrankedMemRefType::get(i32, 0);
    SmallVector<Type> types = {bytes, bytes, ints, i32, i32};
    types.append(9, i64);
    declareRuntimeFunction(module, abi::kCpuConv2dI8,
                           b.getFunctionType(types, {}), /*cInterface=*/true);
    auto zero = [&](const IntegerOperand &x) -> Value {
      if (!x.zeroArg)
        return b.create<arith::ConstantIntOp>(loc, x.zeroConst, 32);
      Value z = b.create<memref::LoadOp>(
          loc, op.getDpsInputs()[x.zeroArg.getArgNumber()], ValueRange{});
      if (x.isUnsigned)
        return b.create<arith::ExtUIOp>(loc, i32, z);
      return b.create<arith::ExtSIOp>(loc, i32, z);
    };
    SmallVector<Value> args = {
        b.create<memref::CastOp>(loc, bytes, ungrouped(op.getDpsInputs()[0])),
        b.create<memref::CastOp>(loc, bytes, op.getDpsInputs()[1]),
        b.create<memref::CastOp>(loc, ints, ungrouped(op.getDpsInits()[0])),
        zero(c.in), zero(c.filter)};
    for (int64_t v :
         {c.strides[0], c.strides[1], c.dilations[0], c.dilations[1],
          int64_t(0), int64_t(0), int64_t(0), int64_t(0), c.flags})
      args.push_back(b.create<arith::ConstantIntOp>(loc, v, 64));
    auto call =
        b.create<func::CallOp>(loc, abi::kCpuConv2dI8, TypeRange{}, args);
    Value in = op.getDpsInputs()[0], out = op.getDpsInits()[0];
    op->erase();
    // The grouped views go when nothing else reads them.
    for (Value v : {in, out})
      if (v.use_empty())
        v.getDefiningOp()->erase();
    return call;
  }

  static bool allF32Memrefs(Operation *op) {
    return llvm::all_of(op->getOperandTypes(), [](Type t) {
      auto m = dyn_cast<MemRefType>(t);
      return m && m.getElementType().isF32();
    });
  }

  /// The conv call's operands: in, filter, out, bias; strides (2),
  /// dilations (2), padding (4), flags.
  static constexpr unsigned kConvMemrefs = 4, kConvInts = 9;

  /// A convolution becomes a call of loom_cpu_conv2d_nchw_f32(in, filter,
  /// out, bias, strides, dilations, padding, flags), taking in what is
  /// around it: the zero padding of its input (the kernel pads), the
  /// zero fill or bias broadcast of its output (overwritten, the bias
  /// added by the kernel) and a ReLU that is the output's only reader.
  static func::CallOp replaceConv(ModuleOp module,
                                  linalg::Conv2DNchwFchwOp conv) {
    Value in = conv.getInputs()[0], filter = conv.getInputs()[1],
          out = conv.getOutputs()[0];
    int64_t flags = 0;
    int64_t pad[4] = {0, 0, 0, 0};
    if (std::optional<ZeroPadded> padded = zeroPadded(conv)) {
      in = padded->source;
      pad[0] = padded->top, pad[1] = padded->left;
      pad[2] = padded->bottom, pad[3] = padded->right;
      conv->setOperand(0, in);
      for (Operation *op : padded->ops)
        op->erase();
    }
    Value bias;
    Operation *init = conv->getPrevNode();
    if (init && fills(init, out, isZero)) {
      flags |= abi::kConvOverwrite;
      init->erase();
    } else if ((bias = channelBias(conv))) {
      flags |= abi::kConvOverwrite | abi::kConvBias;
      init->erase();
    }
    if (linalg::GenericOp relu =
            (flags & abi::kConvOverwrite) ? onlyRelu(conv) : nullptr) {
      flags |= abi::kConvRelu;
      Value result = relu.getDpsInits()[0];
      relu->erase();
      result.replaceAllUsesWith(out);
      result.getDefiningOp()->erase();
    }
    if (isConstantBuffer(filter))
      flags |= abi::kConvConstantFilter;

    OpBuilder b(conv);
    Location loc = conv.getLoc();
    auto unranked = UnrankedMemRefType::get(b.getF32Type(), 0);
    SmallVector<Type> types(kConvMemrefs, unranked);
    types.append(kConvInts, b.getI64Type());
    declareRuntimeFunction(module, abi::kCpuConv2dNchwF32,
                           b.getFunctionType(types, {}), /*cInterface=*/true);
    SmallVector<Value> args;
    // Without a bias the filter stands in (never read as one).
    for (Value v : {in, filter, out, bias ? bias : filter})
      args.push_back(b.create<memref::CastOp>(loc, unranked, v));
    auto s = conv.getStrides().getValues<int64_t>();
    auto d = conv.getDilations().getValues<int64_t>();
    for (int64_t i :
         {s[0], s[1], d[0], d[1], pad[0], pad[1], pad[2], pad[3], flags})
      args.push_back(b.create<arith::ConstantIntOp>(loc, i, 64));
    auto call =
        b.create<func::CallOp>(loc, abi::kCpuConv2dNchwF32, TypeRange{}, args);
    conv->erase();
    return call;
  }

  /// The max pooling's call operands: in, out; window (2), strides (2),
  /// dilations (2), padding (4), flags.
  static constexpr unsigned kPoolMemrefs = 2, kPoolInts = 11;

  /// A max pooling becomes a call of loom_cpu_maxpool2d_f32(in, out,
  /// window, strides, dilations, padding, flags), taking in the -inf
  /// padding of its input (the kernel pads), the -inf fill of its output
  /// (overwritten) and a ReLU fused into it (kPoolRelu).
  static func::CallOp replaceMaxPool(ModuleOp module, linalg::GenericOp op,
                                     const MaxPool &pool) {
    Value in = op.getDpsInputs()[0], out = op.getDpsInits()[0];
    int64_t pad[4] = {0, 0, 0, 0};
    if (std::optional<ZeroPadded> p = padded(op, in, isNegativeInfinity)) {
      in = p->source;
      pad[0] = p->top, pad[1] = p->left, pad[2] = p->bottom, pad[3] = p->right;
      op->setOperand(0, in);
      for (Operation *dead : p->ops)
        dead->erase();
    }
    auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
    if (!fill || fill.output() != out)
      return {};
    fill->erase(); // the kernel overwrites the -inf fill
    OpBuilder b(op);
    Location loc = op.getLoc();
    auto unranked = UnrankedMemRefType::get(b.getF32Type(), 0);
    SmallVector<Type> types(kPoolMemrefs, unranked);
    types.append(kPoolInts, b.getI64Type());
    declareRuntimeFunction(module, abi::kCpuMaxPool2dF32,
                           b.getFunctionType(types, {}), /*cInterface=*/true);
    SmallVector<Value> args;
    for (Value v : {in, out})
      args.push_back(b.create<memref::CastOp>(loc, unranked, v));
    for (int64_t i :
         {pool.kernel[0], pool.kernel[1], pool.strides[0], pool.strides[1],
          pool.dilations[0], pool.dilations[1], pad[0], pad[1], pad[2], pad[3],
          pool.relu ? int64_t(abi::kPoolRelu) : int64_t(0)})
      args.push_back(b.create<arith::ConstantIntOp>(loc, i, 64));
    auto call =
        b.create<func::CallOp>(loc, abi::kCpuMaxPool2dF32, TypeRange{}, args);
    Value window = op.getDpsInputs()[1];
    op->erase();
    if (auto alloc = window.getDefiningOp<memref::AllocOp>();
        alloc && alloc->use_empty())
      alloc->erase();
    return call;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<Operation *, SmallVector<int64_t>>> calls;
    SmallVector<StringRef> names;
    SmallVector<linalg::Conv2DNchwFchwOp> convs;
    SmallVector<std::pair<linalg::GenericOp, IntegerMatmul>> integerMatmuls;
    SmallVector<std::pair<linalg::GenericOp, MaxPool>> maxPools;
    SmallVector<std::pair<linalg::GenericOp, IntegerConv>> integerConvs;
    // A zero fill of the output right before: the kernel overwrites it
    // instead (kMatmulOverwrite), one pass over the output fewer.
    auto dropZeroFill = [](linalg::GenericOp generic) -> int64_t {
      auto fill = dyn_cast_or_null<linalg::FillOp>(generic->getPrevNode());
      if (!fill || fill.output() != generic.getDpsInits()[0] ||
          !(matchPattern(fill.value(), m_AnyZeroFloat()) ||
            matchPattern(fill.value(), m_Zero())))
        return 0;
      fill->erase();
      return abi::kMatmulOverwrite;
    };
    module.walk([&](Operation *op) {
      if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
        if (auto flags = matmulFlags(generic)) {
          *flags |= dropZeroFill(generic);
          if (isConstantBuffer(generic.getDpsInputs()[1]))
            *flags |= abi::kMatmulConstantRhs;
          calls.push_back({op, {*flags}});
          names.push_back(abi::kCpuMatmulF32);
        } else if (auto m = integerMatmul(generic)) {
          m->flags |= dropZeroFill(generic);
          if (isConstantBuffer(generic.getDpsInputs()[1]))
            m->flags |= abi::kMatmulConstantRhs;
          integerMatmuls.push_back({generic, *m});
        } else if (auto pool = maxPool(generic)) {
          maxPools.push_back({generic, *pool});
        } else if (auto ic = integerConv(generic)) {
          if (dropZeroFill(generic))
            ic->flags |= abi::kIntegerConvOverwrite;
          if (isConstantBuffer(generic.getDpsInputs()[1]))
            ic->flags |= abi::kIntegerConvConstantFilter;
          integerConvs.push_back({generic, *ic});
        }
      } else if (auto conv = dyn_cast<linalg::Conv2DNchwFchwOp>(op)) {
        if (conv.hasPureBufferSemantics() && allF32Memrefs(op))
          convs.push_back(conv);
      }
    });
    for (auto [call, name] : llvm::zip(calls, names))
      replaceByCall(module, call.first, name, call.second);
    for (auto &[generic, m] : integerMatmuls)
      replaceIntegerMatmul(module, generic, m);
    SmallVector<func::CallOp> integerConvCalls;
    for (auto &[generic, c] : integerConvs)
      integerConvCalls.push_back(replaceIntegerConv(module, generic, c));
    SmallVector<func::CallOp> convCalls;
    for (linalg::Conv2DNchwFchwOp conv : convs)
      convCalls.push_back(replaceConv(module, conv));
    // Convolutions and poolings, and the layout of the buffers between
    // them (ConvLayout.cpp).
    constexpr unsigned kConvFlags = kConvMemrefs + kConvInts - 1,
                       kPoolFlags = kPoolMemrefs + kPoolInts - 1;
    SmallVector<LayoutCall> layoutCalls;
    for (func::CallOp call : convCalls)
      layoutCalls.push_back(
          {call, 0, 2, kConvFlags, abi::kConvInNhwc, abi::kConvOutNhwc});
    foldResidualAdds(layoutCalls, abi::kConvOverwrite, abi::kConvRelu);
    // The integer convolutions take NHWC too (no residual folding: their
    // results are i32 sums).
    constexpr unsigned kIntegerConvFlags = 13;
    for (func::CallOp call : integerConvCalls)
      layoutCalls.push_back({call, 0, 2, kIntegerConvFlags,
                             abi::kIntegerConvInNhwc,
                             abi::kIntegerConvOutNhwc});
    for (auto &[generic, pool] : maxPools)
      if (func::CallOp call = replaceMaxPool(module, generic, pool))
        layoutCalls.push_back(
            {call, 0, 1, kPoolFlags, abi::kPoolInNhwc, abi::kPoolOutNhwc});
    chooseNhwcLayouts(layoutCalls);
  }
};

} // namespace

func::FuncOp declareRuntimeFunction(ModuleOp module, StringRef name,
                                    FunctionType type, bool cInterface) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  // After the declarations already at the top, so they keep their order.
  Block *body = module.getBody();
  auto at = llvm::find_if(*body, [](Operation &op) {
    auto f = dyn_cast<func::FuncOp>(op);
    return !f || !f.isDeclaration();
  });
  OpBuilder b(body, at);
  auto decl = b.create<func::FuncOp>(module.getLoc(), name, type);
  decl.setPrivate();
  if (cInterface)
    decl->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                  b.getUnitAttr());
  return decl;
}

std::string sourceOf(Location loc) {
  while (auto fused = dyn_cast<FusedLoc>(loc)) {
    if (fused.getLocations().empty())
      break;
    loc = fused.getLocations().front();
  }
  if (auto named = dyn_cast<NameLoc>(loc))
    return " @" + named.getName().str();
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return (" @" + llvm::sys::path::filename(file.getFilename().getValue()) +
            ":" + llvm::Twine(file.getLine()))
        .str();
  return "";
}

namespace {

/// The kernel.fusion region `loc` was inlined from (see
/// CpuInlineKernelsPass), or "".
StringRef regionOf(Location loc) {
  for (auto fused = dyn_cast<FusedLoc>(loc); fused;
       fused = fused.getLocations().empty()
                   ? FusedLoc()
                   : dyn_cast<FusedLoc>(fused.getLocations().front()))
    if (auto name = dyn_cast_or_null<StringAttr>(fused.getMetadata()))
      return name.getValue();
  return "";
}

/// A readable kernel name: the fused region it belongs to, what it
/// computes, its shape, where it came from.
std::string kernelName(Operation *op) {
  std::string name;
  llvm::raw_string_ostream os(name);
  StringRef region = regionOf(op->getLoc());
  if (!region.empty())
    os << region << ": ";
  if (auto call = dyn_cast<func::CallOp>(op)) {
    os << call.getCallee().drop_front(strlen(abi::kCpuKernelPrefix));
  } else if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
    // The body's arithmetic, e.g. "generic(addf,maximumf)".
    os << "generic(";
    bool first = true;
    for (Operation &inner : generic.getRegion().front().without_terminator()) {
      os << (first ? "" : ",") << inner.getName().stripDialect();
      first = false;
    }
    os << ")";
  } else {
    os << op->getName().stripDialect();
  }
  // The shape of the output (or of the first operand).
  Value shaped =
      op->getNumOperands() ? op->getOperand(op->getNumOperands() - 1) : Value();
  // Library calls take (inputs..., output, ints...): the third operand.
  if (isa<func::CallOp>(op) && op->getNumOperands() > 2)
    shaped = op->getOperand(2);
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    if (linalgOp.getNumDpsInits())
      shaped = linalgOp.getDpsInits()[0];
  if (shaped)
    if (auto type = dyn_cast<ShapedType>(shaped.getType())) {
      if (auto castOp = shaped.getDefiningOp<memref::CastOp>())
        type = cast<ShapedType>(castOp.getSource().getType());
      if (type.hasRank()) {
        os << " ";
        llvm::interleave(
            type.getShape(), os,
            [&](int64_t d) {
              if (ShapedType::isDynamic(d))
                os << "?";
              else
                os << d;
            },
            "x");
      }
    }
  os << sourceOf(op->getLoc());
  return name;
}

bool isKernel(Operation *op) {
  if (isa<linalg::LinalgOp, memref::CopyOp>(op))
    return true;
  auto call = dyn_cast<func::CallOp>(op);
  return call && call.getCallee().starts_with(abi::kCpuKernelPrefix);
}

struct CpuProfileHooksPass
    : impl::CpuProfileHooksPassBase<CpuProfileHooksPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    OpBuilder b(module.getBodyRegion());
    Type i64 = b.getI64Type();
    for (StringRef hook : {abi::kRtProfileBegin, abi::kRtProfileEnd})
      declareRuntimeFunction(module, hook, b.getFunctionType({i64}, {}),
                             /*cInterface=*/false);
    SmallVector<Attribute> names;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isDeclaration() || func.isPrivate())
        continue;
      SmallVector<Operation *> kernels;
      for (Operation &op : func.getBody().getOps())
        if (isKernel(&op))
          kernels.push_back(&op);
      for (Operation *op : kernels) {
        names.push_back(b.getStringAttr(kernelName(op)));
        OpBuilder at(op);
        Value id =
            at.create<arith::ConstantIntOp>(op->getLoc(), names.size() - 1, 64);
        at.create<func::CallOp>(op->getLoc(), abi::kRtProfileBegin, TypeRange{},
                                id);
        at.setInsertionPointAfter(op);
        at.create<func::CallOp>(op->getLoc(), abi::kRtProfileEnd, TypeRange{},
                                id);
      }
    }
    module->setAttr(kKernelNamesAttr, b.getArrayAttr(names));
  }
};

struct CpuInlineKernelsPass
    : impl::CpuInlineKernelsPassBase<CpuInlineKernelsPass> {
  void runOnOperation() override {
    SmallVector<kernel::FusionOp> fusions;
    getOperation()->walk([&](kernel::FusionOp op) { fusions.push_back(op); });
    for (kernel::FusionOp fusion : fusions) {
      Block &body = fusion.getBody().front();
      for (auto [arg, operand] :
           llvm::zip(body.getArguments(), fusion.getInputs()))
        arg.replaceAllUsesWith(operand);
      kernel::YieldOp yield = fusion.getYield();
      fusion.replaceAllUsesWith(yield.getValues());
      // The profile hooks name each kernel after its region.
      StringAttr name = fusion.getNameAttr();
      for (Operation &op :
           llvm::make_early_inc_range(body.without_terminator())) {
        op.setLoc(FusedLoc::get(op.getContext(), {op.getLoc()}, name));
        op.moveBefore(fusion);
      }
      fusion.erase();
    }
  }
};

struct CpuScalarAccumulatorsPass
    : impl::CpuScalarAccumulatorsPassBase<CpuScalarAccumulatorsPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isDeclaration())
        continue;
      SmallVector<linalg::GenericOp> reductions;
      func.walk([&](linalg::GenericOp op) {
        if (op.hasPureBufferSemantics() && op.getNumDpsInits() == 1 &&
            op.getNumLoops() > 0 &&
            cast<MemRefType>(op.getDpsInits()[0].getType()).getRank() == 0)
          reductions.push_back(op);
      });
      for (linalg::GenericOp op : reductions) {
        OpOperand *init = op.getDpsInitOperand(0);
        Value out = init->get();
        auto type = MemRefType::get(
            {}, cast<MemRefType>(out.getType()).getElementType());
        // At the top of the function: LLVM promotes only the entry
        // block's allocas to registers.
        OpBuilder b(&func.getBody().front(), func.getBody().front().begin());
        Location loc = op.getLoc();
        Value acc = b.create<memref::AllocaOp>(loc, type);
        b.setInsertionPoint(op);
        b.create<memref::StoreOp>(loc, b.create<memref::LoadOp>(loc, out), acc);
        init->set(acc);
        b.setInsertionPointAfter(op);
        b.create<memref::StoreOp>(loc, b.create<memref::LoadOp>(loc, acc), out);
      }
    }
  }
};

} // namespace

void registerCpuPasses() { registerCpuCodegenPasses(); }

} // namespace loom::codegen
