//===- VocabParallel.cpp - vocab-parallel embedding and cross-entropy ----===//
//
// `--loom-tensor-parallel vocab-parallel` (Megatron's VocabParallelEmbedding
// and vocab_parallel_cross_entropy). The plan (TensorParallel.cpp) splits
// the token embedding table and the LM head over the vocab; this file
// rewrites what reads them:
//
// * the lookup of a rank's rows: ids outside its range read row 0 and are
//   zeroed, and a `mesh.all_reduce` sums the ranks' rows (each id is in one
//   rank's range);
// * the cross-entropy of logits split over the vocab: the log-sum-exp from
//   the local maxima (all-reduced with max), the local sums of exponentials
//   (all-reduced), and the target logit that the rank owning the label
//   contributes (all-reduced), so the whole logits never exist on a rank.
//   The shift by the maximum is taken through `graph.floor`, whose
//   gradient is zero: any shift gives the same log-sum-exp, whose gradient
//   with respect to the shift is zero, so the backward is exact and needs
//   no VJP for a max all-reduce;
// * log-softmax along the vocab (logits minus the same log-sum-exp) and
//   sums and means over the vocab (the local sum, all-reduced): label
//   smoothing's mean of the log-probabilities.
//
//===----------------------------------------------------------------------===//

#include "passes/PassReport.h"
#include "passes/Sharding/TensorParallelRewrites.h"
#include "passes/Training/TrainingUtils.h"

using namespace mlir;
using namespace loom;
using namespace loom::graph;

namespace loom::tensor_parallel {

Value rankRange(OpBuilder &b, Location loc, const sharding::MeshAxis &axis,
                int64_t n) {
  Value all =
      b.create<IotaOp>(loc, ArrayRef<int64_t>{n}, (int64_t)0, b.getI64Type());
  return sharding::allSlice(b, loc, axis, all, 0);
}

namespace {

int64_t rankOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getRank();
}

class VocabRewriter {
public:
  VocabRewriter(func::FuncOp f, const sharding::MeshAxis &axis, VocabWork &work,
                llvm::json::Array &collectives, llvm::raw_ostream &os)
      : f(f), axis(axis), work(work), collectives(collectives), os(os),
        b(f.getContext()) {}

  void run() {
    for (GatherOp g : work.embeddings)
      embedding(g);
    for (Operation *op : work.ops) {
      b.setInsertionPoint(op);
      Value out;
      if (auto ce = dyn_cast<CrossEntropyOp>(op))
        out = crossEntropy(ce);
      else if (auto ls = dyn_cast<LogSoftmaxOp>(op))
        out = logSoftmax(ls);
      else
        out = reduction(op);
      // A reduction may read this op's result (label smoothing's mean of
      // the log-probabilities).
      if (auto it = work.wholeDim.find(op->getResult(0));
          it != work.wholeDim.end())
        work.wholeDim[out] = it->second;
      op->getResult(0).replaceAllUsesWith(out);
      op->erase();
    }
  }

private:
  func::FuncOp f;
  const sharding::MeshAxis &axis;
  VocabWork &work;
  llvm::json::Array &collectives;
  llvm::raw_ostream &os;
  OpBuilder b;
  /// The log-sum-exp of each split logits value (read by the loss and by
  /// label smoothing's log-softmax alike).
  DenseMap<Value, Value> lses;

  Value allReduce(Location loc, Value x, mesh::ReductionKind kind) {
    return b.create<mesh::AllReduceOp>(
        loc, x.getType(), sharding::meshRef(b, axis),
        b.getDenseI16ArrayAttr({axis.index}), x,
        mesh::ReductionKindAttr::get(b.getContext(), kind));
  }

  void note(Operation *op, StringRef kind, StringRef of, StringRef why) {
    std::string where = report::describe(op);
    collectives.push_back(llvm::json::Object{{"collective", "all_reduce"},
                                             {"reduction", kind},
                                             {"phase", "forward"},
                                             {"for", where},
                                             {"of", of},
                                             {"why", why}});
    os << "  all_reduce " << kind << " (forward) of " << of << " for " << where
       << "\n";
  }

  /// `table` is this rank's rows of the vocab: ids outside them read row 0
  /// and give zeros, and the ranks' rows are summed.
  void embedding(GatherOp g) {
    b.setInsertionPoint(g);
    Location loc = g.getLoc();
    Value table = g.getData(), ids = g.getIndices();
    auto idsType = cast<RankedTensorType>(ids.getType());
    int64_t local = cast<RankedTensorType>(table.getType()).getDimSize(0);
    Type idType = idsType.getElementType();
    training::Scalars si(b, loc, idType);
    Value offset = b.create<SliceOp>(
        loc, rankRange(b, loc, axis, local * axis.size), ArrayRef<int64_t>{0},
        ArrayRef<int64_t>{1}, ArrayRef<int64_t>{1});
    if (idType != b.getI64Type())
      offset = b.create<CastOp>(loc, offset, idType);
    if (idsType.getRank() == 0)
      offset = b.create<ReshapeOp>(loc, offset, ArrayRef<int64_t>{});
    Value shifted = b.create<SubOp>(loc, ids, offset);
    Value clamped = b.create<MinOp>(
        loc, b.create<MaxOp>(loc, shifted, si.constant(0.0)).getResult(),
        si.constant((double)(local - 1)));
    Value inRange =
        b.create<CompareOp>(loc, CompareDirection::eq, clamped, shifted);
    Value rows = b.create<GatherOp>(loc, table, clamped, (int64_t)0);
    Value mask = b.create<UnsqueezeOp>(
        loc, inRange,
        ArrayRef<int64_t>{cast<RankedTensorType>(rows.getType()).getRank() -
                          1});
    auto elem = getElementTypeOrSelf(rows.getType());
    Value zero = training::Scalars(b, loc, elem).constant(0.0);
    Value mine = b.create<WhereOp>(loc, mask, rows, zero);
    Value sum = allReduce(loc, mine, mesh::ReductionKind::Sum);
    g.getResult().replaceAllUsesWith(sum);
    work.embeddingSums.push_back({sum.getDefiningOp(), collectives.size()});
    note(g, "sum", "the rows of each rank's vocab range",
         "each rank holds the embedding rows of its part of the vocab; ids "
         "outside it give zero rows");
    g->erase();
  }

  /// log(sum(exp(z))) over the last dim, kept as a dim of 1.
  Value logSumExp(Value z, Operation *forOp) {
    Value &lse = lses[z];
    if (lse)
      return lse;
    OpBuilder::InsertionGuard guard(b);
    if (Operation *def = z.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(&f.getBody().front());
    Location loc = forOp->getLoc();
    int64_t last = rankOf(z) - 1;
    Value localMax =
        b.create<ReduceMaxOp>(loc, z, ArrayRef<int64_t>{last}, true);
    Value max = allReduce(loc, localMax, mesh::ReductionKind::Max);
    note(forOp, "max", "the local maxima of the logits",
         "the log-sum-exp is shifted by the maximum over the whole vocab "
         "(its gradient is zero: taken through graph.floor)");
    Value shift = b.create<FloorOp>(loc, max);
    Value e = b.create<ExpOp>(loc, b.create<SubOp>(loc, z, shift).getResult());
    Value localSum =
        b.create<ReduceSumOp>(loc, e, ArrayRef<int64_t>{last}, true);
    Value sum = allReduce(loc, localSum, mesh::ReductionKind::Sum);
    note(forOp, "sum", "the local sums of exponentials",
         "the softmax's denominator sums over the whole vocab");
    lse = b.create<AddOp>(loc, shift, b.create<LogOp>(loc, sum).getResult());
    return lse;
  }

  Value crossEntropy(CrossEntropyOp ce) {
    Location loc = ce.getLoc();
    Value z = ce.getLogits(), labels = ce.getLabels();
    int64_t last = rankOf(z) - 1;
    auto labelType = cast<RankedTensorType>(labels.getType());
    Type elem = getElementTypeOrSelf(z.getType());
    training::Scalars s(b, loc, elem);
    Value lse = logSumExp(z, ce);
    // The target logit: on the rank whose range holds the label.
    Value ids = rankRange(b, loc, axis, work.wholeDim.lookup(z));
    if (labelType.getElementType() != b.getI64Type())
      ids = b.create<CastOp>(loc, ids, labelType.getElementType());
    Value label = b.create<UnsqueezeOp>(loc, labels, ArrayRef<int64_t>{last});
    Value hit = b.create<CompareOp>(loc, CompareDirection::eq, label, ids);
    Value picked = b.create<WhereOp>(loc, hit, z, s.constant(0.0));
    Value localTarget =
        b.create<ReduceSumOp>(loc, picked, ArrayRef<int64_t>{last}, true);
    Value target = allReduce(loc, localTarget, mesh::ReductionKind::Sum);
    note(ce, "sum", "the target logits",
         "the rank whose vocab range holds a row's label contributes its "
         "logit, the others 0");
    Value nll =
        b.create<ReshapeOp>(loc, b.create<SubOp>(loc, lse, target).getResult(),
                            labelType.getShape());
    Value kept;
    if (auto ignore = ce.getIgnoreIndexAttr()) {
      Value ignored = training::Scalars(b, loc, labelType.getElementType())
                          .constant((double)ignore.getInt());
      kept = b.create<CastOp>(
          loc, b.create<CompareOp>(loc, CompareDirection::ne, labels, ignored),
          elem);
      nll = b.create<MulOp>(loc, nll, kept);
    }
    if (ce.getReduction() == Reduction::none)
      return nll;
    auto sumAll = [&](Value v) {
      SmallVector<int64_t> all;
      for (int64_t i = 0; i < labelType.getRank(); ++i)
        all.push_back(i);
      return all.empty() ? v : b.create<ReduceSumOp>(loc, v, all, false);
    };
    Value total = sumAll(nll);
    if (ce.getReduction() == Reduction::sum)
      return total;
    Value count = kept ? sumAll(kept)
                       : s.constant((double)std::max<int64_t>(
                             1, labelType.getNumElements()));
    return b.create<DivOp>(loc, total, count);
  }

  /// z - lse: the log-sum-exp, which every rank holds whole, is read by
  /// each rank's part of the vocab, so each rank's backward gives part of
  /// its gradient: marked to have the parts summed.
  Value logSoftmax(LogSoftmaxOp op) {
    Value z = op.getX();
    Value lse = b.create<GradAllReduceOp>(op.getLoc(), logSumExp(z, op),
                                          sharding::meshRef(b, axis),
                                          b.getDenseI16ArrayAttr({axis.index}));
    collectives.push_back(llvm::json::Object{
        {"collective", "all_reduce"},
        {"phase", "backward"},
        {"of",
         "the gradient of the log-sum-exp read by " + report::describe(op)},
        {"why", "each rank's part of the vocab gives part of it "
                "(graph.grad_all_reduce)"}});
    os << "  all_reduce (backward) of the gradient of the log-sum-exp read by "
       << report::describe(op) << "\n";
    return b.create<SubOp>(op.getLoc(), z, lse);
  }

  /// A sum or a mean over axes that include the split last dim: the local
  /// sum, all-reduced (divided by the whole count for a mean).
  Value reduction(Operation *op) {
    Location loc = op->getLoc();
    Value x = op->getOperand(0);
    auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef();
    bool keep = op->hasAttr("keepdims");
    Value local = b.create<ReduceSumOp>(loc, x, axes, keep);
    Value sum = allReduce(loc, local, mesh::ReductionKind::Sum);
    note(op, "sum", "the local sums over the vocab",
         "the reduction runs over the whole vocab");
    if (!isa<ReduceMeanOp>(op))
      return sum;
    auto shape = cast<RankedTensorType>(x.getType()).getShape();
    double count = 1;
    for (int64_t a : axes)
      count *= a == rankOf(x) - 1 ? work.wholeDim.lookup(x) : shape[a];
    return training::Scalars(b, loc, getElementTypeOrSelf(x.getType()))
        .mul(sum, 1.0 / count);
  }
};

} // namespace

void rewriteVocabParallel(func::FuncOp f, const sharding::MeshAxis &axis,
                          VocabWork &work, llvm::json::Array &collectives,
                          llvm::raw_ostream &os) {
  VocabRewriter(f, axis, work, collectives, os).run();
}

} // namespace loom::tensor_parallel
