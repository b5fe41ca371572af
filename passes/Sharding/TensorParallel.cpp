//===- TensorParallel.cpp - Megatron-style tensor parallelism -------------===//
//
// `--loom-tensor-parallel`: splits a model's linear layers over the mesh's
// `tensor` axis before autodiff, so that the backward is derived from the
// split forward. A matmul of a whole input by a parameter becomes
// column-parallel (the parameter split along its output features); the
// split propagates through the ops after it, by a rule per op; a matmul of
// the split value by a parameter becomes row-parallel (the parameter split
// along its input features), whose partial products a `mesh.all_reduce`
// sums. `graph.grad_all_reduce` marks the column-parallel matmul's input,
// so that its gradient's parts are summed in the backward. A matmul whose
// split cannot reach a row-parallel one (no rule for an op on the way, a
// size that does not divide, a parameter used elsewhere) stays replicated,
// and the report says why. See Passes.td and docs/distributed.md.
//
//===----------------------------------------------------------------------===//

#include "passes/PassReport.h"
#include "passes/Sharding/Passes.h"
#include "passes/Sharding/ShardingUtils.h"
#include "passes/Sharding/TensorParallelRewrites.h"

#include "dialects/graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Regex.h"

namespace loom {
#define GEN_PASS_DEF_TENSORPARALLELPASS
#include "passes/Sharding/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using namespace loom::graph;

namespace {

/// How a value is laid out over the tensor axis: whole on every rank
/// (dim < 0), or split along `dim`. A split dim of size n is `groups`
/// blocks of n / groups; each block is cut in the axis' ranks, and a rank
/// holds its piece of every block (a fused q|k|v projection is split so
/// that each rank has its heads of q, of k and of v).
struct Split {
  int64_t dim = -1;
  int64_t groups = 1;
  bool operator==(const Split &o) const {
    return dim == o.dim && groups == o.groups;
  }
};

/// Why a candidate stays replicated.
struct Rejection {
  Operation *op;
  std::string why;
};

/// A split parameter.
struct ParamPlan {
  Split split;
  std::string role;            ///< "column", "row" or "bias"
  Operation *origin = nullptr; ///< the column-parallel matmul it serves
};

/// The decisions for one set of enabled column-parallel candidates.
struct Plan {
  llvm::MapVector<Value, Split> values; ///< every split value (params too)
  llvm::MapVector<BlockArgument, ParamPlan> params;
  /// The column-parallel matmuls each split value derives from.
  DenseMap<Value, llvm::SmallSetVector<Operation *, 2>> origins;
  SmallVector<MatmulOp> columns, rows;
  /// Ops whose operands or results are split (to be retyped).
  llvm::SetVector<Operation *> touched;
  /// (op, operand index) that use a split value by a rule.
  DenseSet<std::pair<Operation *, unsigned>> handled;
  /// Candidates that could not start a split at all.
  SmallVector<struct Rejection> skipped;
  /// vocab-parallel: the gathers of a table split over the vocab and the
  /// ops that reduce over split logits (VocabParallel.cpp).
  tensor_parallel::VocabWork vocab;
};

int64_t rankOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getRank();
}
ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// A binary (broadcasting) or ternary elementwise graph op.
bool isBroadcastingElementwise(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, WhereOp,
             CompareOp>(op);
}

/// A unary elementwise op whose result is computed per element alone.
bool isUnaryElementwise(Operation *op) {
  if (auto d = dyn_cast<DropoutOp>(op))
    return !d.getTraining();
  return op->getNumOperands() == 1 && op->getNumResults() == 1 &&
         op->hasTrait<OpTrait::Elementwise>() && !isa<GradAllReduceOp>(op);
}

class Planner {
public:
  Planner(func::FuncOp f, int64_t ranks, const std::optional<llvm::Regex> &fr,
          const DenseSet<Operation *> &disabled, bool vocabParallel)
      : f(f), ranks(ranks), frozen(fr), disabled(disabled),
        vocabParallel(vocabParallel) {}

  /// Plans the function; on failure `failedOrigins` names the candidates
  /// to disable and `failure` says why.
  bool run() {
    Block &body = f.getBody().front();
    for (Operation &op : body.without_terminator()) {
      if (auto mm = dyn_cast<MatmulOp>(op)) {
        if (!matmul(mm))
          return false;
        continue;
      }
      if (auto g = dyn_cast<GatherOp>(op); g && vocabParallel && embedding(g))
        continue;
      bool any = llvm::any_of(
          op.getOperands(), [&](Value v) { return plan.values.count(v) > 0; });
      if (!any)
        continue;
      if (!propagate(&op))
        return false;
    }
    Operation *ret = body.getTerminator();
    for (Value v : ret->getOperands())
      if (plan.values.count(v))
        return fail(v, ret, "the function returns it split");
    // Each split parameter is read split everywhere.
    for (auto &[param, pp] : plan.params)
      for (OpOperand &use : param.getUses())
        if (!plan.handled.contains({use.getOwner(), use.getOperandNumber()}))
          return fail(param, use.getOwner(),
                      "parameter '" + paramName(param) +
                          "' is also read whole by " +
                          report::describe(use.getOwner()));
    return true;
  }

  Plan plan;
  llvm::SmallSetVector<Operation *, 2> failedOrigins;
  std::string failure;

  std::string paramName(BlockArgument arg) const {
    if (auto n =
            f.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "graph.param"))
      return n.str();
    return "argument " + std::to_string(arg.getArgNumber());
  }

private:
  mutable func::FuncOp f; // its accessors are not const
  int64_t ranks;
  const std::optional<llvm::Regex> &frozen;
  const DenseSet<Operation *> &disabled;
  bool vocabParallel;

  bool fail(Value v, Operation *at, const std::string &why) {
    auto it = plan.origins.find(v);
    if (it != plan.origins.end())
      failedOrigins.insert(it->second.begin(), it->second.end());
    failure = why + " (at " + report::describe(at) + ")";
    return false;
  }

  void addOrigins(Value to, Value from) {
    auto it = plan.origins.find(from);
    if (it == plan.origins.end() || to == from)
      return;
    SmallVector<Operation *> ops(it->second.begin(), it->second.end());
    plan.origins[to].insert(ops.begin(), ops.end());
  }

  void setSplit(Value v, Split s, ArrayRef<Value> from) {
    plan.values[v] = s;
    for (Value src : from)
      addOrigins(v, src);
    if (Operation *def = v.getDefiningOp())
      plan.touched.insert(def);
  }

  /// A parameter that may be split: trained, floating, not planned yet.
  BlockArgument eligibleParam(Value v) const {
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg || arg.getOwner()->getParentOp() != f.getOperation())
      return {};
    auto name =
        f.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "graph.param");
    if (!name || !isa<FloatType>(getElementTypeOrSelf(arg.getType())))
      return {};
    if (frozen && frozen->match(name.getValue()))
      return {};
    return arg;
  }

  /// Splits parameter `param` as `s` for `role`; false when it is planned
  /// otherwise already.
  bool splitParam(BlockArgument param, Split s, StringRef role,
                  Operation *origin) {
    auto it = plan.params.find(param);
    if (it != plan.params.end())
      return it->second.split == s;
    int64_t n = shapeOf(param)[s.dim];
    if (n % (s.groups * ranks))
      return false;
    plan.params[param] = ParamPlan{s, role.str(), origin};
    plan.values[param] = s;
    if (origin)
      plan.origins[param].insert(origin);
    return true;
  }

  /// The parameter a matmul's rhs reads, directly or through a 2-D
  /// transpose that only it uses; null otherwise.
  struct Weight {
    BlockArgument param;
    TransposeOp transpose; ///< may be null
  };
  Weight weightOf(Value rhs) const {
    if (rankOf(rhs) != 2)
      return {};
    if (auto p = eligibleParam(rhs))
      return {p, nullptr};
    auto t = rhs.getDefiningOp<TransposeOp>();
    if (!t || !t->hasOneUse() || t.getPerm() != ArrayRef<int64_t>{1, 0})
      return {};
    if (auto p = eligibleParam(t.getX()))
      return {p, t};
    return {};
  }

  /// The group count of a column-parallel output of `n` features: the
  /// equal parts a slice later cuts it into (a fused q|k|v projection),
  /// following the value through elementwise ops that keep its last dim.
  static int64_t groupsFor(Value out) {
    int64_t last = rankOf(out) - 1, n = shapeOf(out)[last];
    SmallVector<Value> work{out};
    DenseSet<Value> seen;
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (!seen.insert(v).second)
        continue;
      for (Operation *user : v.getUsers()) {
        if (auto s = dyn_cast<SliceOp>(user)) {
          int64_t d = rankOf(s.getX()) - 1;
          int64_t begin = s.getStarts()[d];
          int64_t end = std::min(s.getEnds()[d], n);
          if (s.getSteps()[d] == 1 && end > begin && n % (end - begin) == 0)
            return n / (end - begin);
          continue;
        }
        if ((isBroadcastingElementwise(user) || isUnaryElementwise(user)) &&
            rankOf(user->getResult(0)) == rankOf(v) &&
            shapeOf(user->getResult(0)).back() == n)
          work.push_back(user->getResult(0));
      }
    }
    return 1;
  }

  /// vocab-parallel: a lookup of a 2-D parameter's rows by token ids (a
  /// function argument) splits the table over the vocab; true when it
  /// does (the gather is then handled, its result whole).
  bool embedding(GatherOp g) {
    if (disabled.contains(g) || g.getAxis() != 0)
      return false;
    BlockArgument table = eligibleParam(g.getData());
    if (!table || rankOf(table) != 2 || plan.values.count(g.getIndices()))
      return false;
    auto ids = dyn_cast<BlockArgument>(g.getIndices());
    if (!ids || !f.getArgAttr(ids.getArgNumber(), "graph.input"))
      return false;
    int64_t n = shapeOf(table)[0];
    if (!splitParam(table, {0, 1}, "vocab", g)) {
      plan.skipped.push_back(
          {g, n % ranks ? llvm::formatv("its vocab of {0} does not split "
                                        "over {1} ranks",
                                        n, ranks)
                              .str()
                        : "its table '" + paramName(table) +
                              "' is split otherwise already"});
      return false;
    }
    plan.origins[table].insert(g);
    plan.handled.insert({g, 0});
    plan.vocab.embeddings.push_back(g);
    return true;
  }

  bool matmul(MatmulOp mm) {
    Value lhs = mm.getLhs(), rhs = mm.getRhs(), out = mm.getResult();
    auto ls = plan.values.lookup(lhs), rs = plan.values.lookup(rhs);
    bool lSplit = plan.values.count(lhs), rSplit = plan.values.count(rhs);
    int64_t rl = rankOf(lhs), rr = rankOf(rhs), ro = rankOf(out);
    int64_t lK = mm.getTransposeLhs() ? rl - 2 : rl - 1;
    int64_t lM = mm.getTransposeLhs() ? rl - 1 : rl - 2;
    int64_t rK = mm.getTransposeRhs() ? rr - 1 : rr - 2;
    int64_t rN = mm.getTransposeRhs() ? rr - 2 : rr - 1;
    Weight w = weightOf(rhs);

    // A parameter split already (a tied embedding's table, split over the
    // vocab) is read by a column-parallel matmul too when the split is
    // the one it needs.
    if (!lSplit && (!rSplit || (w.param && plan.params.count(w.param)))) {
      // Column-parallel: a whole input times a parameter.
      if (!w.param || mm.getTransposeLhs() || disabled.contains(mm))
        return true;
      int64_t groups = groupsFor(out);
      int64_t n = shapeOf(out)[ro - 1];
      if (n % (groups * ranks)) {
        plan.skipped.push_back(
            {mm, llvm::formatv(
                     "its {0} output features{1} do not split "
                     "over {2} ranks",
                     n,
                     groups > 1 ? llvm::formatv(" in {0} groups", groups).str()
                                : std::string(),
                     ranks)
                     .str()});
        return true;
      }
      int64_t wN = w.transpose ? 1 - rN : rN;
      if (!splitParam(w.param, {wN, groups}, "column", mm)) {
        plan.skipped.push_back({mm, "its parameter '" + paramName(w.param) +
                                        "' is split otherwise already"});
        return true;
      }
      // (splitParam records the origin only when it plans the parameter.)
      plan.origins[w.param].insert(mm);
      if (w.transpose) {
        plan.handled.insert({w.transpose, 0});
        setSplit(w.transpose.getResult(), {rN, groups}, {w.param});
      }
      plan.handled.insert({mm, 1});
      plan.columns.push_back(mm);
      plan.origins[out].insert(mm);
      setSplit(out, {ro - 1, groups}, {});
      return true;
    }
    if (lSplit && ls.dim == lK && !rSplit && w.param) {
      // Row-parallel: a split input times a parameter split alike; the
      // products are partial sums.
      int64_t wK = w.transpose ? 1 - rK : rK;
      if (!splitParam(w.param, {wK, ls.groups}, "row", nullptr))
        return fail(lhs, mm,
                    "parameter '" + paramName(w.param) +
                        "' cannot be split along its input features");
      addOrigins(w.param, lhs);
      if (w.transpose) {
        plan.handled.insert({w.transpose, 0});
        setSplit(w.transpose.getResult(), {rK, ls.groups}, {lhs});
      }
      plan.handled.insert({mm, 0});
      plan.handled.insert({mm, 1});
      plan.touched.insert(mm);
      plan.rows.push_back(mm);
      return true;
    }
    // Two values: batch dims split alike, or one operand split on its
    // own free dim (M of lhs, N of rhs) while the other is whole.
    auto batchAligned = [&](Split s, int64_t rank) {
      return s.dim < rank - 2 ? s.dim + (ro - rank) : int64_t(-1);
    };
    Split result;
    if (lSplit && rSplit) {
      int64_t a = batchAligned(ls, rl), b = batchAligned(rs, rr);
      if (a < 0 || a != b || ls.groups != rs.groups)
        return fail(lhs, mm,
                    "no tensor-parallel rule for a matmul of operands "
                    "split on dims " +
                        std::to_string(ls.dim) + " and " +
                        std::to_string(rs.dim));
      result = {a, ls.groups};
    } else if (lSplit) {
      int64_t a = batchAligned(ls, rl);
      if (a >= 0) {
        int64_t rd = a - (ro - rr);
        if (rd >= 0 && rd < rr - 2 && shapeOf(rhs)[rd] != 1)
          return fail(lhs, mm,
                      "the matmul's other operand is whole on the "
                      "split batch dim");
        result = {a, ls.groups};
      } else if (ls.dim == lM) {
        result = {ro - 2, ls.groups};
      } else {
        return fail(lhs, mm,
                    "the matmul contracts a split operand with a whole one "
                    "that is not a parameter");
      }
    } else {
      int64_t a = batchAligned(rs, rr);
      if (a >= 0) {
        int64_t ld = a - (ro - rl);
        if (ld >= 0 && ld < rl - 2 && shapeOf(lhs)[ld] != 1)
          return fail(rhs, mm,
                      "the matmul's other operand is whole on the "
                      "split batch dim");
        result = {a, rs.groups};
      } else if (rs.dim == rN) {
        result = {ro - 1, rs.groups};
      } else {
        return fail(rhs, mm,
                    "the matmul contracts a split operand with a whole one");
      }
    }
    if (lSplit)
      plan.handled.insert({mm, 0});
    if (rSplit)
      plan.handled.insert({mm, 1});
    setSplit(out, result, {lhs, rhs});
    return true;
  }

  bool propagate(Operation *op) {
    // The first split operand, for attributing a failure.
    Value first;
    for (Value v : op->getOperands())
      if (plan.values.count(v)) {
        first = v;
        break;
      }
    auto no = [&](const std::string &why) { return fail(first, op, why); };
    if (op->getNumResults() != 1)
      return no("no tensor-parallel rule for " +
                op->getName().getStringRef().str());
    Value out = op->getResult(0);
    int64_t ro = rankOf(out);
    auto markAll = [&] {
      for (auto [i, v] : llvm::enumerate(op->getOperands()))
        if (plan.values.count(v))
          plan.handled.insert({op, (unsigned)i});
    };

    if (isUnaryElementwise(op)) {
      markAll();
      setSplit(out, plan.values.lookup(first), {first});
      return true;
    }
    if (isBroadcastingElementwise(op)) {
      std::optional<Split> s;
      for (Value v : op->getOperands()) {
        auto it = plan.values.find(v);
        if (it == plan.values.end())
          continue;
        Split aligned{it->second.dim + (ro - rankOf(v)), it->second.groups};
        if (s && !(*s == aligned))
          return no("operands split along different dims");
        s = aligned;
      }
      for (auto [i, v] : llvm::enumerate(op->getOperands())) {
        if (plan.values.count(v))
          continue;
        int64_t d = s->dim - (ro - rankOf(v));
        if (d < 0 || shapeOf(v)[d] == 1)
          continue; // broadcast along the split dim: every rank reads it
        BlockArgument p = eligibleParam(v);
        auto origins = plan.origins.lookup(first);
        Operation *origin = origins.empty() ? nullptr : origins.front();
        if (!p || !splitParam(p, {d, s->groups}, "bias", origin))
          return no("operand " + std::to_string(i) +
                    " is whole along the split dim and not a parameter "
                    "that can be split with it");
        plan.origins[p].insert(origins.begin(), origins.end());
      }
      for (auto [i, v] : llvm::enumerate(op->getOperands()))
        if (plan.values.count(v))
          plan.handled.insert({op, (unsigned)i});
      SmallVector<Value> from(op->getOperands());
      setSplit(out, *s, from);
      return true;
    }
    Split in = plan.values.lookup(first);
    if (auto t = dyn_cast<TransposeOp>(op)) {
      int64_t e = llvm::find(t.getPerm(), in.dim) - t.getPerm().begin();
      markAll();
      setSplit(out, {e, in.groups}, {first});
      return true;
    }
    if (isa<SoftmaxOp, LogSoftmaxOp>(op)) {
      if (op->getAttrOfType<IntegerAttr>("axis").getInt() == in.dim) {
        if (vocabParallel && vocabOp(op, first, in)) {
          markAll();
          return true;
        }
        return no(op->getName().getStringRef().str() + " along the split dim");
      }
      markAll();
      setSplit(out, in, {first});
      return true;
    }
    if (auto s = dyn_cast<SliceOp>(op)) {
      int64_t n = shapeOf(first)[in.dim];
      int64_t begin = s.getStarts()[in.dim];
      int64_t end = std::min(s.getEnds()[in.dim], n);
      if (s.getSteps()[in.dim] != 1 || begin < 0)
        return no("a strided or reversed slice of the split dim");
      if (begin == 0 && end == n) {
        markAll();
        setSplit(out, in, {first});
        return true;
      }
      int64_t part = end - begin;
      if (part <= 0 || n % part || begin % part || n / part != in.groups)
        return no("a slice of the split dim that is not one of its " +
                  std::to_string(in.groups) + " group(s)");
      markAll();
      setSplit(out, {in.dim, 1}, {first});
      return true;
    }
    if (auto r = dyn_cast<ReshapeOp>(op)) {
      ArrayRef<int64_t> from = shapeOf(first), to = shapeOf(out);
      int64_t before = 1;
      for (int64_t d = 0; d < in.dim; ++d)
        before *= from[d];
      // The output dim that starts where the split dim starts.
      int64_t e = -1, prefix = 1;
      for (int64_t d = 0; d < ro; ++d) {
        if (prefix == before && to[d] != 1) {
          e = d;
          break;
        }
        prefix *= to[d];
      }
      int64_t n = from[in.dim];
      if (e < 0 || (to[e] % n && n % to[e]))
        return no("a reshape that does not keep the split dim outermost");
      if (in.groups > 1 && to[e] != n)
        return no("a reshape of a dim split in groups");
      if (to[e] % ranks)
        return no("the reshaped split dim (" + std::to_string(to[e]) +
                  ") does not divide over the ranks");
      markAll();
      setSplit(out, {e, in.groups}, {first});
      return true;
    }
    if (vocabParallel && vocabOp(op, first, in)) {
      markAll();
      return true;
    }
    return no("no tensor-parallel rule for " +
              op->getName().getStringRef().str() +
              " with an operand split on dim " + std::to_string(in.dim));
  }

  /// vocab-parallel: an op that needs the whole last dim of a value split
  /// along it, computed from all-reduced local statistics
  /// (VocabParallel.cpp). The cross-entropy and reductions give whole
  /// results, log-softmax a split one.
  bool vocabOp(Operation *op, Value x, Split in) {
    int64_t last = rankOf(x) - 1;
    if (in.dim != last || in.groups != 1 || op->getOperand(0) != x)
      return false;
    if (isa<CrossEntropyOp>(op)) {
      // The labels are whole.
    } else if (auto ls = dyn_cast<LogSoftmaxOp>(op)) {
      int64_t axis = ls.getAxis() < 0 ? ls.getAxis() + last + 1 : ls.getAxis();
      if (axis != last)
        return false;
      setSplit(ls.getResult(), in, {x});
    } else if (isa<ReduceSumOp, ReduceMeanOp>(op)) {
      if (!llvm::is_contained(
              op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef(), last))
        return false;
    } else {
      return false;
    }
    plan.vocab.ops.push_back(op);
    plan.vocab.wholeDim[x] = shapeOf(x)[last];
    return true;
  }
};

/// `type` with dim `s.dim` divided by `ranks`.
RankedTensorType localType(Type type, Split s, int64_t ranks) {
  auto t = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(t.getShape());
  shape[s.dim] /= ranks;
  return t.clone(shape);
}

struct TensorParallelPass
    : loom::impl::TensorParallelPassBase<TensorParallelPass> {
  using TensorParallelPassBase::TensorParallelPassBase;
  /// Where the report goes instead of `report`.
  report::Sink *sink = nullptr;

  void runOnOperation() override {
    if (failed(run()))
      signalPassFailure();
  }

  LogicalResult run() {
    ModuleOp module = getOperation();
    if (ranks < 1 || dataRanks < 1)
      return module.emitError("loom-tensor-parallel: ranks and data-ranks "
                              "must be at least 1");
    std::optional<llvm::Regex> frozen;
    if (!freeze.empty()) {
      frozen.emplace(freeze);
      std::string why;
      if (!frozen->isValid(why))
        return module.emitError("loom-tensor-parallel: bad freeze regex '")
               << freeze << "': " << why;
    }
    func::FuncOp f;
    for (auto fn : module.getOps<func::FuncOp>())
      if (!fn.isDeclaration() && (funcName.empty() || fn.getName() == funcName))
        f = f ? func::FuncOp() : fn;
    if (!f)
      return module.emitError("loom-tensor-parallel: ")
             << (funcName.empty() ? "the module must have one function (or "
                                    "name one with func=)"
                                  : "no function '" + funcName + "'");
    if (!f.getBody().hasOneBlock())
      return f.emitError("loom-tensor-parallel: the function must be one "
                         "block");
    for (Type t : f.getArgumentTypes())
      if (auto r = dyn_cast<RankedTensorType>(t); !r || !r.hasStaticShape())
        return f.emitError("loom-tensor-parallel: every argument must have "
                           "a static shape, not ")
               << t;

    // Plan with every candidate, then without the ones whose split
    // reaches something it cannot cross, until a plan holds.
    DenseSet<Operation *> disabled;
    SmallVector<Rejection> rejected;
    std::optional<Planner> planner;
    while (true) {
      planner.emplace(f, ranks, frozen, disabled, vocabParallel);
      if (planner->run())
        break;
      if (planner->failedOrigins.empty())
        return f.emitError("loom-tensor-parallel: internal error: ")
               << planner->failure;
      for (Operation *op : planner->failedOrigins) {
        disabled.insert(op);
        rejected.push_back({op, planner->failure});
      }
    }
    Plan &plan = planner->plan;

    if (dataRanks > 1 &&
        failed(sharding::getOrCreateAxis(module, "data", dataRanks,
                                         "loom-tensor-parallel")))
      return failure();
    FailureOr<sharding::MeshAxis> axis = sharding::getOrCreateAxis(
        module, "tensor", ranks, "loom-tensor-parallel");
    if (failed(axis))
      return failure();
    SmallVector<Operation *> rowSums;
    SmallVector<GradAllReduceOp> columnInputs;
    rewrite(f, plan, *axis, rowSums, columnInputs);
    // Megatron's two refinements, on the split function.
    llvm::json::Array extra;
    llvm::json::Object sequence;
    std::string lines;
    llvm::raw_string_ostream os(lines);
    if (vocabParallel)
      tensor_parallel::rewriteVocabParallel(f, *axis, plan.vocab, extra, os);
    if (sequenceParallel) {
      tensor_parallel::rewriteSequenceParallel(f, *axis, rowSums, columnInputs,
                                               sequence, os);
      // An embedding's sum that the region reduce-scatters instead.
      DenseSet<Operation *> live;
      f.walk([&](mesh::AllReduceOp op) { live.insert(op); });
      for (auto [op, index] : plan.vocab.embeddingSums)
        if (!live.contains(op))
          if (llvm::json::Object *c = extra[index].getAsObject()) {
            (*c)["collective"] = "reduce_scatter";
            (*c)["why"] = "each rank holds the embedding rows of its part of "
                          "the vocab (ids outside it give zero rows) and keeps "
                          "its part of the sequence of the sum "
                          "(--sequence-parallel)";
          }
    }
    if (failed(mlir::verify(f)))
      return f.emitError("loom-tensor-parallel: internal error: the split "
                         "function does not verify");
    return writeReport(f, *planner, rejected, std::move(extra),
                       std::move(sequence), lines);
  }

  void rewrite(func::FuncOp f, Plan &plan, const sharding::MeshAxis &axis,
               SmallVectorImpl<Operation *> &rowSums,
               SmallVectorImpl<GradAllReduceOp> &columnInputs) {
    MLIRContext *ctx = f.getContext();
    OpBuilder b(ctx);
    // Parameters: this rank's piece; the whole initial value stays, and
    // graph.shard says how to cut it.
    for (auto &[param, pp] : plan.params) {
      unsigned i = param.getArgNumber();
      auto full = cast<RankedTensorType>(param.getType());
      param.setType(localType(full, pp.split, ranks));
      f.setArgAttr(
          i, "graph.shard",
          b.getDictionaryAttr(
              {b.getNamedAttr("axis", b.getStringAttr("tensor")),
               b.getNamedAttr("dim", b.getI64IntegerAttr(pp.split.dim)),
               b.getNamedAttr("groups", b.getI64IntegerAttr(pp.split.groups)),
               b.getNamedAttr("shape",
                              b.getDenseI64ArrayAttr(full.getShape()))}));
    }
    // Slices of a split dim: the bounds of this rank's part of the group
    // (from the whole shapes, before anything is retyped).
    SmallVector<std::tuple<SliceOp, SmallVector<int64_t>, SmallVector<int64_t>>>
        slices;
    for (Operation *op : plan.touched) {
      auto slice = dyn_cast<SliceOp>(op);
      if (!slice || !plan.values.count(slice.getX()))
        continue;
      Split in = plan.values.lookup(slice.getX());
      int64_t n = shapeOf(slice.getX())[in.dim];
      SmallVector<int64_t> starts(slice.getStarts()), ends(slice.getEnds());
      int64_t begin = starts[in.dim], end = std::min(ends[in.dim], n);
      int64_t local = n / ranks;
      if (!(begin == 0 && end == n)) {
        int64_t part = local / in.groups, g = begin / (end - begin);
        starts[in.dim] = g * part;
        ends[in.dim] = (g + 1) * part;
      } else {
        ends[in.dim] = local;
      }
      slices.push_back({slice, starts, ends});
    }
    for (auto &[slice, starts, ends] : slices) {
      slice.setStarts(starts);
      slice.setEnds(ends);
    }
    // Results: their local types; a reshape gets its piece's shape.
    for (Operation *op : plan.touched) {
      for (Value r : op->getResults()) {
        auto it = plan.values.find(r);
        if (it == plan.values.end())
          continue;
        r.setType(localType(r.getType(), it->second, ranks));
        if (auto reshape = dyn_cast<ReshapeOp>(op))
          reshape.setShape(shapeOf(r));
      }
    }
    // Column-parallel inputs: their gradient's parts are summed.
    DenseMap<Value, Value> marked, wholeReads;
    for (MatmulOp mm : plan.columns) {
      Value x = mm.getLhs();
      Value &m = marked[x];
      if (!m) {
        if (Operation *def = x.getDefiningOp())
          b.setInsertionPointAfter(def);
        else
          b.setInsertionPointToStart(&f.getBody().front());
        m = b.create<GradAllReduceOp>(x.getLoc(), x, sharding::meshRef(b, axis),
                                      b.getDenseI16ArrayAttr({axis.index}));
        columnInputs.push_back(m.getDefiningOp<GradAllReduceOp>());
      }
      mm.getLhsMutable().assign(m);
    }
    // A whole operand of split computation (read broadcast along the split
    // dim, or the other operand of a matmul whose free dim is split): each
    // rank's backward gives part of its gradient, and the parts are
    // summed. Constants have none.
    DenseSet<Operation *> matmuls;
    for (MatmulOp mm : plan.columns)
      matmuls.insert(mm);
    for (MatmulOp mm : plan.rows)
      matmuls.insert(mm);
    for (Operation *op : plan.touched) {
      if (matmuls.contains(op))
        continue;
      for (OpOperand &use : op->getOpOperands()) {
        Value v = use.get();
        if (plan.values.count(v) || marked.count(v) ||
            !isa<FloatType>(getElementTypeOrSelf(v.getType())) ||
            matchPattern(v, m_Constant()) || v.getDefiningOp<GradAllReduceOp>())
          continue;
        Value &m = wholeReads[v];
        if (!m) {
          if (Operation *def = v.getDefiningOp())
            b.setInsertionPointAfter(def);
          else
            b.setInsertionPointToStart(&f.getBody().front());
          m = b.create<GradAllReduceOp>(v.getLoc(), v,
                                        sharding::meshRef(b, axis),
                                        b.getDenseI16ArrayAttr({axis.index}));
        }
        use.set(m);
      }
    }
    // Row-parallel outputs: the partial products summed.
    for (MatmulOp mm : plan.rows) {
      b.setInsertionPointAfter(mm);
      Value sum = sharding::allReduce(b, mm.getLoc(), axis, mm.getResult());
      mm.getResult().replaceAllUsesExcept(sum, sum.getDefiningOp());
      rowSums.push_back(sum.getDefiningOp());
    }
    f.setFunctionType(FunctionType::get(
        ctx, f.getBody().front().getArgumentTypes(), f.getResultTypes()));
  }

  LogicalResult writeReport(func::FuncOp f, Planner &planner,
                            ArrayRef<Rejection> rejected,
                            llvm::json::Array extra,
                            llvm::json::Object sequence, StringRef lines) {
    Plan &plan = planner.plan;
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "loom-tensor-parallel: " << ranks << " ranks on axis 'tensor', "
       << plan.columns.size() << " column-parallel and " << plan.rows.size()
       << " row-parallel matmul(s), " << plan.params.size()
       << " parameter(s) split";
    if (vocabParallel)
      os << ", " << plan.vocab.embeddings.size()
         << " vocab-parallel embedding(s) and " << plan.vocab.ops.size()
         << " vocab-parallel reduction(s)";
    if (sequenceParallel)
      os << ", sequence parallel";
    os << "\n";
    llvm::json::Array params;
    for (auto &[param, pp] : plan.params) {
      std::string name = planner.paramName(param);
      auto local = cast<RankedTensorType>(param.getType());
      std::string how =
          llvm::formatv(
              "{0}: split along dim {1} over "
              "'tensor'{2}",
              pp.role, pp.split.dim,
              pp.split.groups > 1
                  ? llvm::formatv(" in {0} groups", pp.split.groups).str()
                  : std::string())
              .str();
      StringRef why =
          pp.role == "vocab"
              ? "the token embedding's table, split over the vocab "
                "(--vocab-parallel); a tied LM head reads the same rows"
          : pp.role == "column"
              ? "its matmul is column-parallel: each rank computes its part "
                "of the output features"
          : pp.role == "row"
              ? "its matmul is row-parallel: it reads the split features, "
                "whose partial products are summed"
              : "added to a split value, split with it";
      params.push_back(llvm::json::Object{
          {"name", name},
          {"sharding", how},
          {"why", why},
          {"role", pp.role},
          {"dim", pp.split.dim},
          {"groups", pp.split.groups},
          {"local_shape", llvm::json::Array(local.getShape())}});
      os << "  " << name << ": " << how << " -> " << report::typeString(local)
         << "\n";
    }
    llvm::json::Array collectives;
    for (MatmulOp mm : plan.rows) {
      // Sequence parallelism reduce-scatters instead (its own section).
      if (!llvm::any_of(mm->getUsers(), [](Operation *user) {
            return isa<mesh::AllReduceOp>(user);
          }))
        continue;
      std::string where = report::describe(mm);
      collectives.push_back(llvm::json::Object{
          {"collective", "all_reduce"},
          {"phase", "forward"},
          {"after", where},
          {"bytes",
           (int64_t)(cast<RankedTensorType>(mm.getType()).getNumElements() *
                     cast<RankedTensorType>(mm.getType())
                         .getElementTypeBitWidth() /
                     8)},
          {"why", "the row-parallel matmul's products are partial sums over "
                  "the split input features"}});
      os << "  all_reduce (forward) after " << where << "\n";
    }
    DenseSet<Value> inputs;
    for (MatmulOp mm : plan.columns) {
      auto mark = mm.getLhs().getDefiningOp<GradAllReduceOp>();
      if (!mark || !inputs.insert(mark.getResult()).second)
        continue;
      std::string where = report::describe(mm);
      collectives.push_back(llvm::json::Object{
          {"collective", "all_reduce"},
          {"phase", "backward"},
          {"of", "the gradient of the input of " + where},
          {"why", "each rank's column-parallel matmul gives part of the "
                  "gradient of its whole input; the parts are summed "
                  "(graph.grad_all_reduce)"}});
      os << "  all_reduce (backward) of the gradient of the input of " << where
         << "\n";
    }
    for (llvm::json::Value &c : extra)
      collectives.push_back(std::move(c));
    os << lines;
    llvm::json::Array replicated;
    SmallVector<Rejection> all(rejected);
    all.append(plan.skipped.begin(), plan.skipped.end());
    for (const Rejection &r : all) {
      replicated.push_back(llvm::json::Object{
          {"matmul", report::describe(r.op)}, {"why", r.why}});
      os << "  stays replicated: " << report::describe(r.op) << ": " << r.why
         << "\n";
    }
    if (summary)
      llvm::errs() << text;
    if (!sink && report.empty())
      return success();
    llvm::json::Object out{{"ranks", (int64_t)ranks},
                           {"axis", "tensor"},
                           {"vocab_parallel", (bool)vocabParallel},
                           {"sequence_parallel", (bool)sequenceParallel},
                           {"parameters", std::move(params)},
                           {"collectives", std::move(collectives)},
                           {"replicated", std::move(replicated)}};
    if (sequenceParallel)
      out["sequence"] = std::move(sequence);
    return report::emit(sink, "tensor_parallel", f, "loom-tensor-parallel",
                        report, llvm::json::Value(std::move(out)));
  }
};

} // namespace

std::unique_ptr<mlir::Pass>
loom::createTensorParallelPass(const TensorParallelPassOptions &options,
                               report::Sink *sink) {
  auto pass = std::make_unique<TensorParallelPass>(options);
  pass->sink = sink;
  return pass;
}
