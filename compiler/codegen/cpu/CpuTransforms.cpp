//===- CpuTransforms.cpp - passes of the CPU code path --------------------===//

#include "compiler/codegen/cpu/CpuTransforms.h"
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

/// The kernel's flags (see loom_cpu_matmul_f32) when `op` is the matmul
/// contraction --loom-graph-to-linalg emits: loops (batch..., [m], [n], k),
/// output (batch..., [m], [n]), each operand's batch dims right-aligned
/// (a broadcast size-1 dim reads index 0), then its matrix dims.
std::optional<int64_t> matmulFlags(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      !op.hasPureBufferSemantics() || !isMulAdd(op))
    return std::nullopt;
  for (Value v : op->getOperands()) {
    auto type = dyn_cast<MemRefType>(v.getType());
    if (!type || !type.getElementType().isF32())
      return std::nullopt;
  }
  auto iterators = op.getIteratorTypesArray();
  int64_t loops = iterators.size(), k = loops - 1;
  for (int64_t i = 0; i < loops; ++i)
    if ((iterators[i] == utils::IteratorType::reduction) != (i == k))
      return std::nullopt;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  AffineMap lhs = maps[0], rhs = maps[1], out = maps[2];
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

struct CpuMathApproximationPass
    : impl::CpuMathApproximationPassBase<CpuMathApproximationPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
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

  static bool allF32Memrefs(Operation *op) {
    return llvm::all_of(op->getOperandTypes(), [](Type t) {
      auto m = dyn_cast<MemRefType>(t);
      return m && m.getElementType().isF32();
    });
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<Operation *, SmallVector<int64_t>>> calls;
    SmallVector<StringRef> names;
    module.walk([&](Operation *op) {
      if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
        if (auto flags = matmulFlags(generic)) {
          // A zero fill of the output right before: the kernel overwrites
          // it instead (flag 16), one pass over the output fewer.
          auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
          if (fill && fill.output() == generic.getDpsInits()[0] &&
              matchPattern(fill.value(), m_AnyZeroFloat())) {
            *flags |= abi::kMatmulOverwrite;
            fill->erase();
          }
          calls.push_back({op, {*flags}});
          names.push_back(abi::kCpuMatmulF32);
        }
      } else if (auto conv = dyn_cast<linalg::Conv2DNchwFchwOp>(op)) {
        if (!conv.hasPureBufferSemantics() || !allF32Memrefs(op))
          return;
        auto s = conv.getStrides().getValues<int64_t>();
        auto d = conv.getDilations().getValues<int64_t>();
        calls.push_back({op, {s[0], s[1], d[0], d[1]}});
        names.push_back(abi::kCpuConv2dNchwF32);
      }
    });
    for (auto [call, name] : llvm::zip(calls, names))
      replaceByCall(module, call.first, name, call.second);
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
