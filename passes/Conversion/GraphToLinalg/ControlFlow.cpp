//===- ControlFlow.cpp - graph.if and graph.loop to scf -------------------===//
//
// The region ops of the graph dialect become scf ops on tensors: graph.if an
// scf.if; graph.loop an scf.for over [0, trip_count) when nothing can stop
// it early, else an scf.while whose before-region tests
// `i < trip_count && cond` and whose after-region is the body. The walk of
// GraphToLinalg.cpp lowers the ops inside a region before the region op
// itself (post-order), so the bodies moved here already hold linalg and
// tensor ops; their graph.yield is replaced here, with a tensor.cast where
// a yielded type is only cast-compatible with the one scf needs.
//
// A loop's scan values are written, one slice per iteration, into a tensor
// of `trip_count` rows made before the loop; when the loop may stop early
// (a run-time trip count or condition) the result is the rows written.
//
//===----------------------------------------------------------------------===//

#include "LoweringUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace loom;

namespace {

/// `v` as type `t`: itself, or a tensor.cast (the types are cast-compatible,
/// graph.if and graph.loop verify that). A dynamic dim cast to a static one
/// is checked when the code runs: `what` (of `op`) has another size.
Value castTo(OpBuilder &b, Operation *op, Location loc, Value v, Type t,
             const Twine &what) {
  if (v.getType() == t)
    return v;
  auto from = cast<RankedTensorType>(v.getType());
  auto to = cast<RankedTensorType>(t);
  for (int64_t d = 0; d < to.getRank(); ++d) {
    if (!from.isDynamicDim(d) || to.isDynamicDim(d))
      continue;
    Value size = b.create<tensor::DimOp>(loc, v, d);
    Value want = b.create<arith::ConstantIndexOp>(loc, to.getDimSize(d));
    Value ok =
        b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, size, want);
    graph_to_linalg::runtimeCheck(b, op, ok,
                                  what + " has dim " + Twine(d) +
                                      " of another size than " +
                                      Twine(to.getDimSize(d)));
  }
  return b.create<tensor::CastOp>(loc, t, v);
}

/// The scalar a rank-0 tensor holds.
Value scalarOf(OpBuilder &b, Location loc, Value tensor) {
  return b.create<tensor::ExtractOp>(loc, tensor, ValueRange{});
}

/// graph.if -> scf.if: each region's block is moved into the branch, its
/// arguments replaced by the captures.
struct IfToScf final : OpRewritePattern<graph::IfOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(graph::IfOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value cond = scalarOf(rewriter, loc, op.getCond());
    auto scfIf = rewriter.create<scf::IfOp>(loc, op.getResultTypes(), cond,
                                            /*withElseRegion=*/true);
    for (auto [from, to] : {std::pair<Region *, Region *>{
                                &op.getThenRegion(), &scfIf.getThenRegion()},
                            {&op.getElseRegion(), &scfIf.getElseRegion()}}) {
      Block *dest = &to->front();
      // The builder made an empty block (results) or one with a yield.
      if (!dest->empty())
        rewriter.eraseOp(&dest->back());
      rewriter.mergeBlocks(&from->front(), dest, op.getCaptures());
      auto yield = cast<graph::YieldOp>(dest->getTerminator());
      rewriter.setInsertionPoint(yield);
      SmallVector<Value> values;
      for (auto [v, t] : llvm::zip(yield.getValues(), op.getResultTypes()))
        values.push_back(
            castTo(rewriter, op, yield.getLoc(), v, t, "a yielded value"));
      rewriter.replaceOpWithNewOp<scf::YieldOp>(yield, values);
    }
    rewriter.replaceOp(op, scfIf.getResults());
    return success();
  }
};

/// Whether `v` is `arg` or a constant true (a graph.constant, lowered to
/// arith.constant or a splat by now).
bool isTrueOr(Value v, Value arg) {
  if (v == arg)
    return true;
  DenseElementsAttr dense;
  if (!matchPattern(v, m_Constant(&dense)))
    return false;
  return dense.isSplat() && dense.getSplatValue<bool>();
}

/// graph.loop -> scf.for over [0, trip_count) when nothing can stop it
/// early (no condition operand or a true one, and the body yields its
/// condition argument or true), else scf.while over (i: i64, cond: i1,
/// carried..., stacks...). The body's iteration and condition arguments become
/// rank-0 tensors of the loop's scalars.
struct LoopToScf final : OpRewritePattern<graph::LoopOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(graph::LoopOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Block &body = op.getBody().front();
    auto yield = cast<graph::YieldOp>(body.getTerminator());
    unsigned numInits = op.getInits().size(), numScans = op.getNumScans();
    Type i64 = rewriter.getI64Type(), i1 = rewriter.getI1Type();
    Type index = rewriter.getIndexType();

    Value bound = op.getTripCount()
                      ? scalarOf(rewriter, loc, op.getTripCount())
                      : rewriter
                            .create<arith::ConstantIntOp>(
                                loc, std::numeric_limits<int64_t>::max(), 64)
                            .getResult();
    // The most iterations: max(trip_count, 0), as an index.
    Value trips = rewriter.create<arith::IndexCastOp>(
        loc, index,
        rewriter.create<arith::MaxSIOp>(
            loc, bound, rewriter.create<arith::ConstantIntOp>(loc, 0, 64)));

    // One stack per scan value: trip_count rows of the value's type.
    SmallVector<Value> stacks;
    for (unsigned s = 0; s < numScans; ++s) {
      auto result =
          cast<RankedTensorType>(op.getResult(numInits + s).getType());
      if (!RankedTensorType::get(result.getShape().drop_front(),
                                 result.getElementType())
               .hasStaticShape())
        return op.emitError("graph.loop: scan value ")
               << s << " of type " << result
               << " has dynamic dims after the first; its stack cannot be "
                  "sized before the loop";
      if (!op.getTripCount())
        return op.emitError("graph.loop: scan value ")
               << s << " needs a trip count to size its stack";
      SmallVector<Value> dynamic;
      if (result.isDynamicDim(0))
        dynamic.push_back(trips);
      stacks.push_back(
          rewriter.create<tensor::EmptyOp>(loc, result, dynamic).getResult());
    }
    SmallVector<Type> carriedTypes;
    SmallVector<Value> carried;
    for (auto [k, init] : llvm::enumerate(op.getInits())) {
      Type t = body.getArgument(2 + k).getType();
      carriedTypes.push_back(t);
      carried.push_back(castTo(rewriter, op, loc, init, t, "an initial value"));
    }

    // Moves the body into `dest` (iteration `iv` as i64, condition `cond`
    // as i1, the carried values) and replaces its yield by the values the
    // loop carries next: the condition (scf.while only), the carried
    // values and each stack with row `iv` written.
    auto moveBody = [&](Block *dest, Value iv, Value cond, ValueRange values,
                        ValueRange stackArgs, bool withCond) {
      rewriter.setInsertionPointToEnd(dest);
      SmallVector<Value> args = {
          rewriter.create<tensor::FromElementsOp>(
              loc, RankedTensorType::get({}, i64), ValueRange{iv}),
          rewriter.create<tensor::FromElementsOp>(
              loc, RankedTensorType::get({}, i1), ValueRange{cond})};
      llvm::append_range(args, values);
      llvm::append_range(args, op.getCaptures());
      rewriter.mergeBlocks(&body, dest, args);
      rewriter.setInsertionPoint(yield);
      Location yloc = yield.getLoc();
      ValueRange yields = yield.getValues();
      SmallVector<Value> next;
      if (withCond)
        next.push_back(scalarOf(rewriter, yloc, yields[0]));
      for (unsigned k = 0; k < numInits; ++k)
        next.push_back(castTo(rewriter, op, yloc, yields[1 + k],
                              carriedTypes[k], "a yielded carried value"));
      // Scan value s goes into row iv of its stack.
      Value row = rewriter.create<arith::IndexCastOp>(yloc, index, iv);
      for (unsigned s = 0; s < numScans; ++s) {
        Value value = yields[1 + numInits + s];
        Value stack = stackArgs[s];
        auto stackType = cast<RankedTensorType>(stack.getType());
        SmallVector<OpFoldResult> offsets(stackType.getRank(),
                                          rewriter.getIndexAttr(0));
        SmallVector<OpFoldResult> sizes,
            strides(stackType.getRank(), rewriter.getIndexAttr(1));
        offsets[0] = row;
        sizes.push_back(rewriter.getIndexAttr(1));
        for (int64_t d : stackType.getShape().drop_front())
          sizes.push_back(rewriter.getIndexAttr(d));
        auto slice = RankedTensorType::get(stackType.getShape().drop_front(),
                                           stackType.getElementType());
        value =
            castTo(rewriter, op, yloc, value, slice, "a yielded scan value");
        next.push_back(rewriter.create<tensor::InsertSliceOp>(
            yloc, value, stack, offsets, sizes, strides));
      }
      rewriter.replaceOpWithNewOp<scf::YieldOp>(yield, next);
    };

    bool neverStops = (!op.getCond() || isTrueOr(op.getCond(), Value())) &&
                      isTrueOr(yield.getValues()[0], body.getArgument(1));
    // Not where an initial value is cast to its carried type: scf.for's
    // canonicalization would move that cast into the loop, on the
    // assumption that the carried shape does not change.
    bool castInit =
        llvm::any_of(llvm::zip(op.getInits(), carriedTypes), [](auto pair) {
          return std::get<0>(pair).getType() != std::get<1>(pair);
        });
    if (neverStops && op.getTripCount() && !castInit) {
      SmallVector<Value> iterArgs(carried);
      llvm::append_range(iterArgs, stacks);
      Value zero = rewriter.create<arith::ConstantIndexOp>(loc, 0);
      Value one = rewriter.create<arith::ConstantIndexOp>(loc, 1);
      auto loop = rewriter.create<scf::ForOp>(loc, zero, trips, one, iterArgs);
      Block *forBody = loop.getBody();
      // The builder's terminator (none for iter_args) is replaced.
      if (!forBody->empty())
        rewriter.eraseOp(forBody->getTerminator());
      rewriter.setInsertionPointToStart(forBody);
      Value iv =
          rewriter.create<arith::IndexCastOp>(loc, i64, loop.getInductionVar());
      Value yes = rewriter.create<arith::ConstantIntOp>(loc, 1, 1);
      moveBody(forBody, iv, yes, loop.getRegionIterArgs().take_front(numInits),
               loop.getRegionIterArgs().drop_front(numInits),
               /*withCond=*/false);
      // Every stack is full: trip_count rows.
      rewriter.replaceOp(op, loop.getResults());
      return success();
    }

    Value cond0 =
        op.getCond()
            ? scalarOf(rewriter, loc, op.getCond())
            : rewriter.create<arith::ConstantIntOp>(loc, 1, 1).getResult();
    SmallVector<Value> inits = {
        rewriter.create<arith::ConstantIntOp>(loc, 0, 64).getResult(), cond0};
    llvm::append_range(inits, carried);
    llvm::append_range(inits, stacks);
    SmallVector<Type> types = {i64, i1};
    llvm::append_range(types, carriedTypes);
    for (Value s : stacks)
      types.push_back(s.getType());
    SmallVector<Location> locs(types.size(), loc);
    auto loop = rewriter.create<scf::WhileOp>(loc, types, inits);

    // Before: continue while i < trip_count and cond.
    Block *before = rewriter.createBlock(&loop.getBefore(), {}, types, locs);
    Value more = rewriter.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt,
                                                before->getArgument(0), bound);
    more = rewriter.create<arith::AndIOp>(loc, more, before->getArgument(1));
    rewriter.create<scf::ConditionOp>(loc, more, before->getArguments());

    // After: the body, then i + 1.
    Block *after = rewriter.createBlock(&loop.getAfter(), {}, types, locs);
    Value iv = after->getArgument(0);
    moveBody(after, iv, after->getArgument(1),
             after->getArguments().slice(2, numInits),
             after->getArguments().drop_front(2 + numInits),
             /*withCond=*/true);
    auto scfYield = cast<scf::YieldOp>(after->getTerminator());
    rewriter.setInsertionPoint(scfYield);
    Value nextIv = rewriter.create<arith::AddIOp>(
        loc, iv, rewriter.create<arith::ConstantIntOp>(loc, 1, 64));
    scfYield->insertOperands(0, nextIv);

    // Results: the carried values; the rows of each stack that were
    // written (all of them when the length is static).
    rewriter.setInsertionPointAfter(loop);
    SmallVector<Value> results;
    for (unsigned k = 0; k < numInits; ++k)
      results.push_back(loop.getResult(2 + k));
    Value count;
    for (unsigned s = 0; s < numScans; ++s) {
      Value stack = loop.getResult(2 + numInits + s);
      auto type = cast<RankedTensorType>(stack.getType());
      if (!type.isDynamicDim(0)) {
        results.push_back(stack);
        continue;
      }
      if (!count)
        count =
            rewriter.create<arith::IndexCastOp>(loc, index, loop.getResult(0));
      SmallVector<OpFoldResult> offsets(type.getRank(),
                                        rewriter.getIndexAttr(0));
      SmallVector<OpFoldResult> sizes = {count},
                                strides(type.getRank(),
                                        rewriter.getIndexAttr(1));
      for (int64_t d : type.getShape().drop_front())
        sizes.push_back(rewriter.getIndexAttr(d));
      results.push_back(rewriter.create<tensor::ExtractSliceOp>(
          loc, type, stack, offsets, sizes, strides));
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void loom::populateGraphToLinalgControlFlowPatterns(
    RewritePatternSet &patterns) {
  patterns.add<IfToScf, LoopToScf>(patterns.getContext());
}
