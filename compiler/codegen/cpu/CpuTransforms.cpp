//===- CpuTransforms.cpp - passes of the CPU code path --------------------===//

#include "compiler/codegen/cpu/CpuTransforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <optional>

using namespace mlir;

namespace loom::codegen {
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
/// contraction --graph-to-linalg emits: loops (batch..., [m], [n], k),
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
  int64_t flags = (lhsVec ? 4 : 0) | (rhsVec ? 8 : 0);

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
    flags |= trans ? 1 : 0;
  }
  if (rhsVec) {
    if (!isDim(rhs.getResult(0), k))
      return std::nullopt;
  } else {
    if (!batchOk(rhs, 2) || !matrix(rhs, k, n, trans))
      return std::nullopt;
    flags |= trans ? 2 : 0;
  }
  if ((lhsVec && !batchOk(lhs, 1)) || (rhsVec && !batchOk(rhs, 1)))
    return std::nullopt;
  return flags;
}

struct CpuFusionPass : PassWrapper<CpuFusionPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CpuFusionPass)
  StringRef getArgument() const final { return "loom-cpu-fusion"; }
  StringRef getDescription() const final {
    return "fuse elementwise linalg ops, never into a matmul";
  }
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(
        patterns, [](OpOperand *operand) {
          auto consumer = dyn_cast<linalg::GenericOp>(operand->getOwner());
          return !(consumer && linalg::isaContractionOpInterface(consumer));
        });
    linalg::GenericOp::getCanonicalizationPatterns(patterns, &getContext());
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

struct CpuLibraryCallsPass
    : PassWrapper<CpuLibraryCallsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CpuLibraryCallsPass)
  StringRef getArgument() const final { return "loom-cpu-library-calls"; }
  StringRef getDescription() const final {
    return "f32 matmuls and convolutions to the runtime's kernels";
  }
  /// Declares `name(memref<*xf32> x3, i64 x ints)` with a C interface.
  static void declare(ModuleOp module, StringRef name, unsigned ints) {
    if (module.lookupSymbol<func::FuncOp>(name))
      return;
    OpBuilder b(module.getBodyRegion());
    auto unranked = UnrankedMemRefType::get(b.getF32Type(), 0);
    SmallVector<Type> args(3, unranked);
    args.append(ints, b.getI64Type());
    auto decl = b.create<func::FuncOp>(module.getLoc(), name,
                                       b.getFunctionType(args, {}));
    decl.setPrivate();
    decl->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                  b.getUnitAttr());
  }

  /// Replaces `op` by a call of `name` on its three memref operands (as
  /// unranked memrefs) and `ints`.
  static void replaceByCall(ModuleOp module, Operation *op, StringRef name,
                            ArrayRef<int64_t> ints) {
    declare(module, name, ints.size());
    OpBuilder b(op);
    Location loc = op->getLoc();
    auto unranked = UnrankedMemRefType::get(b.getF32Type(), 0);
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
          calls.push_back({op, {*flags}});
          names.push_back("loom_cpu_matmul_f32");
        }
      } else if (auto conv = dyn_cast<linalg::Conv2DNchwFchwOp>(op)) {
        if (!conv.hasPureBufferSemantics() || !allF32Memrefs(op))
          return;
        auto s = conv.getStrides().getValues<int64_t>();
        auto d = conv.getDilations().getValues<int64_t>();
        calls.push_back({op, {s[0], s[1], d[0], d[1]}});
        names.push_back("loom_cpu_conv2d_nchw_f32");
      }
    });
    for (auto [call, name] : llvm::zip(calls, names))
      replaceByCall(module, call.first, name, call.second);
  }
};

} // namespace

std::unique_ptr<Pass> createCpuFusionPass() {
  return std::make_unique<CpuFusionPass>();
}

std::unique_ptr<Pass> createCpuLibraryCallsPass() {
  return std::make_unique<CpuLibraryCallsPass>();
}

} // namespace loom::codegen
