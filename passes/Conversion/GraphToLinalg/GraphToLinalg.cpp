//===- GraphToLinalg.cpp - graph ops to linalg on tensors -----------------===//
//
// `--loom-graph-to-linalg`, the first step of the CPU code path: the graph
// dialect is illegal, and each family of its ops (Elementwise.cpp,
// Reductions.cpp, Contractions.cpp, DataMovement.cpp, Resize.cpp,
// DynamicShapes.cpp) has patterns that build the op's replacement in
// linalg, tensor, arith, math, scf and cf right before it.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/Passes.h"

#include "LoweringUtils.h"

#include "dialects/graph/GraphDialect.h"
#include "dialects/kernel/KernelOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/Rewrite/PatternApplicator.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace loom {
#define GEN_PASS_DEF_GRAPHTOLINALGPASS
#include "passes/Conversion/Passes.h.inc"
} // namespace loom

using namespace mlir;

namespace {

/// What the lowering produces: graph ops are illegal; kernel.fusion regions
/// and the functions stay.
ConversionTarget loweringTarget(MLIRContext &ctx) {
  ConversionTarget target(ctx);
  target.addIllegalDialect<loom::graph::GraphDialect>();
  target.addLegalDialect<arith::ArithDialect, cf::ControlFlowDialect,
                         linalg::LinalgDialect, math::MathDialect,
                         scf::SCFDialect, tensor::TensorDialect,
                         loom::kernel::KernelDialect, func::FuncDialect>();
  return target;
}

/// Applies `patterns` once to each op under `root` that `target` marks
/// illegal, in program order, with the insertion point right before the
/// op, so that each op sees its operands already lowered; reports every op
/// left illegal. The walk-based driver of later MLIR releases
/// (walkAndApplyPatterns): MLIR 19's dialect conversion folds each illegal
/// op before its patterns run, which would turn small graph.iota and
/// static graph.fill_like into constants and drop graph.grad_all_reduce,
/// changing what this pass emits. The walk is post-order: the ops in a
/// region (graph.if, graph.loop) are lowered before the op that holds it,
/// whose pattern replaces the region's terminator (graph.yield, skipped
/// here).
LogicalResult applyLoweringPatterns(Operation *root,
                                    const ConversionTarget &target,
                                    const FrozenRewritePatternSet &patterns) {
  SmallVector<Operation *> ops;
  root->walk([&](Operation *op) {
    if (target.isIllegal(op) && !op->hasTrait<OpTrait::IsTerminator>())
      ops.push_back(op);
  });
  PatternApplicator applicator(patterns);
  applicator.applyDefaultCostModel();
  PatternRewriter rewriter(root->getContext());
  bool failedAny = false;
  for (Operation *op : ops) {
    rewriter.setInsertionPoint(op);
    if (succeeded(applicator.matchAndRewrite(op, rewriter)))
      continue;
    op->emitError() << "'" << op->getName()
                    << "' has no lowering to linalg yet";
    failedAny = true;
  }
  return failure(failedAny);
}

/// Makes every unsigned integer type under `root` (ui8, tensor<4xui16>,
/// the function's signature, constants' attributes) signless of the same
/// width. The graph dialect's unsigned types reach the lowering patterns,
/// which pick unsigned arithmetic from them (divui, cmpi ult, uitofp,
/// extui, ...); arith, linalg's bodies and the code generators after them
/// take signless integers only, and the bits are the same.
void eraseIntegerSignedness(Operation *root) {
  AttrTypeReplacer replacer;
  auto signless = [](Type t) -> Type {
    auto i = dyn_cast<IntegerType>(t);
    return i && !i.isSignless() ? IntegerType::get(t.getContext(), i.getWidth())
                                : Type();
  };
  replacer.addReplacement([=](IntegerType t) -> std::optional<Type> {
    if (Type s = signless(t))
      return s;
    return std::nullopt;
  });
  // Dense constants and resource blobs do not expose their type to the
  // replacer: rebuilt over the same bytes with the signless type.
  replacer.addReplacement(
      [=](DenseIntOrFPElementsAttr a) -> std::optional<Attribute> {
        Type s = signless(a.getType().getElementType());
        if (!s)
          return std::nullopt;
        return DenseIntOrFPElementsAttr::getFromRawBuffer(a.getType().clone(s),
                                                          a.getRawData());
      });
  replacer.addReplacement(
      [=](DenseResourceElementsAttr a) -> std::optional<Attribute> {
        Type s = signless(a.getType().getElementType());
        if (!s)
          return std::nullopt;
        return DenseResourceElementsAttr::get(a.getType().clone(s),
                                              a.getRawHandle());
      });
  replacer.recursivelyReplaceElementsIn(root, /*replaceAttrs=*/true,
                                        /*replaceLocs=*/false,
                                        /*replaceTypes=*/true);
}

/// `--loom-graph-to-linalg` (passes/Conversion/Passes.td).
struct GraphToLinalgPass
    : loom::impl::GraphToLinalgPassBase<GraphToLinalgPass> {
  LogicalResult initialize(MLIRContext *ctx) override {
    RewritePatternSet set(ctx);
    loom::populateGraphToLinalgElementwisePatterns(set);
    loom::populateGraphToLinalgReductionPatterns(set);
    loom::populateGraphToLinalgContractionPatterns(set);
    loom::populateGraphToLinalgIntegerConvPatterns(set);
    loom::populateGraphToLinalgDataMovementPatterns(set);
    loom::populateGraphToLinalgResizePatterns(set);
    loom::populateGraphToLinalgDynamicShapePatterns(set);
    loom::populateGraphToLinalgControlFlowPatterns(set);
    loom::populateGraphToLinalgRandomPatterns(set);
    patterns = std::move(set);
    return success();
  }

  void runOnOperation() override {
    ConversionTarget target = loweringTarget(getContext());
    if (failed(applyLoweringPatterns(getOperation(), target, patterns)))
      return signalPassFailure();
    eraseIntegerSignedness(getOperation());
    // Ops nested in kernel.fusion regions are lowered in place. A region
    // whose ops all lowered to their operands (inference dropout, a
    // broadcast to the same shape) is replaced by what it forwards: an
    // empty body is invalid.
    SmallVector<Operation *> fusions;
    getOperation().walk(
        [&](loom::kernel::FusionOp op) { fusions.push_back(op); });
    if (fusions.empty())
      return;
    RewritePatternSet cleanup(&getContext());
    loom::kernel::FusionOp::getCanonicalizationPatterns(cleanup, &getContext());
    GreedyRewriteConfig config;
    config.strictMode = GreedyRewriteStrictness::ExistingOps;
    (void)applyOpPatternsAndFold(fusions, std::move(cleanup), config);
  }

  /// The lowering patterns of every op family, built once per pass.
  FrozenRewritePatternSet patterns;
};

} // namespace
