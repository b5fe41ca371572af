//===- Recompute.cpp - activation recomputation under a memory budget -----===//
//
// `--loom-recompute`: on a joint forward + backward function, chooses which
// forward values the backward keeps and which it recomputes, and rewrites
// the function so. The planned peak of every candidate comes from the
// arena planner the CPU memory plan uses (passes/MemoryPlan/ArenaPlanner.h)
// applied to the buffers the fused function will have.
//
//===----------------------------------------------------------------------===//

#include "passes/PassReport.h"
#include "passes/Recompute/Passes.h"
#include "passes/Training/TrainingUtils.h"

#include "dialects/graph/GraphDialect.h"
#include "dialects/graph/GraphOps.h"
#include "dialects/kernel/KernelOps.h"
#include "mlir/Dialect/Mesh/IR/MeshDialect.h"
#include "passes/Fusion/Passes.h"
#include "passes/MemoryPlan/ArenaPlanner.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>

namespace loom {
#define GEN_PASS_DEF_RECOMPUTEPASS
#include "passes/Recompute/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

constexpr StringLiteral kRecomputeAttr = "loom.recompute";

int64_t elementBytes(Type t) {
  auto tensor = cast<RankedTensorType>(t);
  unsigned bits = tensor.getElementType().isIntOrFloat()
                      ? tensor.getElementType().getIntOrFloatBitWidth()
                      : 64;
  return (bits + 7) / 8;
}

int64_t tensorBytes(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  return tensor.getNumElements() * elementBytes(t);
}

bool isView(Operation *op) {
  return isa<graph::ReshapeOp, graph::SqueezeOp, graph::UnsqueezeOp,
             graph::FlattenOp>(op);
}

/// Floating-point operations of one op: the graph ops' own estimate
/// (CostOpInterface), none for anything else.
int64_t flopsOf(Operation *op) {
  if (auto cost = dyn_cast<graph::CostOpInterface>(op))
    return cost.estimateFlops();
  return 0;
}

/// Ops whose recomputation is cheap next to the buffer it saves:
/// elementwise math and data movement. Their clones serve one backward op
/// only (and usually fuse into it), so they never stay live across the
/// backward.
bool isCheap(Operation *op) {
  return op->hasTrait<OpTrait::Elementwise>() ||
         op->hasTrait<graph::GraphTrait::BroadcastingElementwise>() ||
         isa<graph::BroadcastToOp, graph::FillLikeOp, graph::IotaOp,
             graph::ReshapeOp, graph::SqueezeOp, graph::UnsqueezeOp,
             graph::FlattenOp, graph::TransposeOp, graph::SliceOp,
             graph::GatherOp, graph::EmbeddingOp, graph::TriluOp>(op);
}

/// Whether a clone of `op` computes what `op` did: a graph op without
/// side effects or regions. graph.dropout is one: its training mask is a
/// pure function of its seed and the element index (GraphToLinalg's
/// SplitMix64 hash), so a clone replays the same mask.
bool isRecomputable(Operation *op) {
  return isa<graph::GraphDialect>(op->getDialect()) &&
         !isa<graph::ConstantOp>(op) && op->getNumRegions() == 0 &&
         isMemoryEffectFree(op);
}

using report::locString;
using report::typeString;

/// The forward part of a joint function: its saved values and its cut
/// values (checkpoint candidates).
struct StepGraph {
  func::FuncOp func;
  llvm::DenseSet<Operation *> forward;
  /// The values a decision is about, in forward order: the saved values
  /// (forward results a non-forward op reads) and the cut values.
  SmallVector<Value> saved;
  /// Which of `saved` a backward op reads, and which are cuts: the only
  /// batch-dependent forward value live across the point after its op, so
  /// that recomputing what follows it never reaches behind it (a
  /// transformer's residual stream between blocks).
  llvm::BitVector isSaved, isCut;
  /// The forward ops in block order.
  SmallVector<Operation *> forwardOps;
};

FailureOr<StepGraph> analyze(func::FuncOp func) {
  StepGraph g;
  g.func = func;
  Block &block = func.getBody().front();
  auto ret = cast<func::ReturnOp>(block.getTerminator());
  Value loss;
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (auto s = func.getResultAttrOfType<StringAttr>(i, "graph.output");
        s && s.getValue() == "loss")
      loss = ret.getOperand(i);
  if (!loss)
    return func.emitError("loom-recompute: function '")
           << func.getName()
           << "' has no result marked graph.output = \"loss\" (run it on a "
              "training step or a gradient function)";
  SmallVector<Value> worklist{loss};
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val().getDefiningOp();
    if (!op || op->getBlock() != &block || !g.forward.insert(op).second)
      continue;
    for (Value v : op->getOperands())
      worklist.push_back(v);
  }
  // Batch-dependent: reads a batch input (graph.input; every argument when
  // none is marked). The others (weight transposes, position embeddings)
  // are recomputed from the parameters alone.
  bool anyInput = false;
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    anyInput |= bool(func.getArgAttr(i, "graph.input"));
  llvm::DenseSet<Value> batch;
  for (BlockArgument arg : func.getArguments())
    if (!anyInput || func.getArgAttr(arg.getArgNumber(), "graph.input"))
      batch.insert(arg);
  DenseMap<Operation *, int64_t> index;
  for (Operation &op : block) {
    if (!g.forward.contains(&op))
      continue;
    index[&op] = g.forwardOps.size();
    g.forwardOps.push_back(&op);
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return batch.contains(v); }))
      for (Value r : op.getResults())
        batch.insert(r);
  }
  // Live ranges within the forward of the batch-dependent values.
  SmallVector<std::pair<int64_t, int64_t>> ranges; // (def, last forward use)
  for (Operation *op : g.forwardOps)
    for (Value r : op->getResults()) {
      if (!batch.contains(r))
        continue;
      int64_t last = index[op];
      for (Operation *user : r.getUsers())
        if (Operation *top = block.findAncestorOpInBlock(*user);
            top && g.forward.contains(top))
          last = std::max(last, index[top]);
      ranges.push_back({index[op], last});
    }
  for (Operation *op : g.forwardOps) {
    if (isa<graph::ConstantOp>(op))
      continue;
    int64_t p = index[op];
    int64_t crossing = 0;
    for (auto [def, last] : ranges)
      crossing += def <= p && last > p;
    for (Value r : op->getResults()) {
      bool saved = llvm::any_of(r.getUsers(), [&](Operation *user) {
        Operation *top = block.findAncestorOpInBlock(*user);
        return top && !g.forward.contains(top) &&
               !top->hasTrait<OpTrait::IsTerminator>();
      });
      bool cut = op->getNumResults() == 1 && batch.contains(r) &&
                 crossing == 1 && !r.use_empty() && isRecomputable(op);
      if (!saved && !cut)
        continue;
      g.saved.push_back(r);
      g.isSaved.push_back(saved);
      g.isCut.push_back(cut);
    }
  }
  return g;
}

/// What a rewrite cloned: per saved value, the FLOPs of the ops cloned
/// first for it.
struct RewriteResult {
  int64_t flops = 0;
  int64_t clonedOps = 0;
  SmallVector<int64_t> flopsOfSaved;
};

/// Rewrites the backward of `g` to recompute the saved values that
/// `keep` does not hold: each non-forward op reads clones made just before
/// it. `perOp`: clones serve one backward op only (strategy all); else a
/// clone serves every later backward op.
RewriteResult rewrite(StepGraph &g, const llvm::BitVector &keep, bool perOp) {
  RewriteResult result;
  result.flopsOfSaved.assign(g.saved.size(), 0);
  DenseMap<Value, unsigned> savedIndex;
  for (auto [i, v] : llvm::enumerate(g.saved))
    savedIndex[v] = i;
  Block &block = g.func.getBody().front();
  auto isKept = [&](Value v) {
    Operation *def = v.getDefiningOp();
    if (!def || !g.forward.contains(def) || !isRecomputable(def))
      return true;
    auto it = savedIndex.find(v);
    return it != savedIndex.end() && keep.test(it->second);
  };
  SmallVector<Operation *> backward;
  for (Operation &op : block.without_terminator())
    if (!g.forward.contains(&op))
      backward.push_back(&op);
  // Clones of expensive ops serve every later backward op; clones of
  // cheap ones (`local`) only the backward op they were made for.
  DenseMap<Value, Value> clones, local;
  OpBuilder b(g.func.getContext());
  int64_t owner = -1;
  std::function<Value(Value)> materialize = [&](Value v) -> Value {
    if (isKept(v))
      return v;
    if (Value c = clones.lookup(v))
      return c;
    if (Value c = local.lookup(v))
      return c;
    Operation *def = v.getDefiningOp();
    IRMapping map;
    for (Value operand : def->getOperands())
      map.map(operand, materialize(operand));
    Operation *clone = b.clone(*def, map);
    clone->setAttr(kRecomputeAttr, b.getUnitAttr());
    int64_t flops = flopsOf(def);
    result.flops += flops;
    ++result.clonedOps;
    if (owner >= 0)
      result.flopsOfSaved[owner] += flops;
    DenseMap<Value, Value> &cache = perOp || isCheap(def) ? local : clones;
    for (auto [r, c] : llvm::zip(def->getResults(), clone->getResults()))
      cache[r] = c;
    return cache.lookup(v);
  };
  for (Operation *op : backward) {
    local.clear();
    b.setInsertionPoint(op);
    // Operands of ops nested in op's regions count too.
    SmallVector<OpOperand *> uses;
    op->walk([&](Operation *inner) {
      for (OpOperand &use : inner->getOpOperands())
        if (use.get().getParentBlock() == &block)
          uses.push_back(&use);
    });
    for (OpOperand *use : uses) {
      Value v = use->get();
      if (isKept(v))
        continue;
      auto it = savedIndex.find(v);
      owner = it == savedIndex.end() ? -1 : int64_t(it->second);
      use->set(materialize(v));
    }
  }
  return result;
}

/// The buffers the function will have after fusion and their arena plan.
/// Every kernel region's result is a buffer from its region to its last
/// user; a region of reshape-like ops is a view of its operand; returned
/// values, arguments and constants are not in the arena (runtime-owned or
/// weights).
int64_t plannedPeak(func::FuncOp fused, int64_t alignment) {
  Block &block = fused.getBody().front();
  DenseMap<Operation *, int64_t> position;
  int64_t i = 0;
  for (Operation &op : block)
    position[&op] = i++;
  // The buffer each value lives in (its own or the one it views), or -1.
  DenseMap<Value, int64_t> bufferOf;
  std::vector<memplan::LiveBuffer> buffers;
  llvm::BitVector escapes;
  for (Operation &op : block.without_terminator()) {
    if (isa<graph::ConstantOp>(op))
      continue;
    auto fusion = dyn_cast<kernel::FusionOp>(op);
    bool view = false;
    if (fusion && op.getNumResults() == 1) {
      view = true;
      for (Operation &inner : fusion.getBody().front())
        if (!isView(&inner) && !isa<graph::ConstantOp>(inner) &&
            !inner.hasTrait<OpTrait::IsTerminator>())
          view = false;
    } else if (!fusion && isView(&op)) {
      view = true;
    }
    if (view && op.getNumOperands() >= 1) {
      Value source = op.getOperand(0);
      auto it = bufferOf.find(source);
      bufferOf[op.getResult(0)] = it == bufferOf.end() ? -1 : it->second;
      continue;
    }
    // A matmul or convolution with an epilogue in its region (a bias, an
    // activation, the 16-bit rounding of a widened op, a gradient
    // accumulation) writes its product into a buffer of its own first,
    // which the epilogue reads (the CPU code runs the epilogue as its own
    // loop). It lives while the region runs.
    bool epilogue =
        fusion && llvm::any_of(fusion.getBody().front(), [](Operation &inner) {
          return !isa<graph::MatmulOp, graph::ConvOp, graph::ConstantOp>(
                     inner) &&
                 !isView(&inner) && !inner.hasTrait<OpTrait::IsTerminator>();
        });
    if (epilogue)
      for (Operation &inner : fusion.getBody().front())
        if (isa<graph::MatmulOp, graph::ConvOp>(inner)) {
          int64_t bytes = tensorBytes(inner.getResult(0).getType());
          buffers.push_back({position[&op], position[&op],
                             memplan::alignUp(bytes, alignment)});
          escapes.push_back(false);
        }
    for (Value r : op.getResults()) {
      int64_t bytes = tensorBytes(r.getType());
      if (bytes == 0) {
        bufferOf[r] = -1;
        continue;
      }
      bufferOf[r] = buffers.size();
      buffers.push_back(
          {position[&op], position[&op], memplan::alignUp(bytes, alignment)});
      escapes.push_back(false);
    }
  }
  for (Operation &op : block) {
    for (Value v : op.getOperands()) {
      auto it = bufferOf.find(v);
      if (it == bufferOf.end() || it->second < 0)
        continue;
      memplan::LiveBuffer &b = buffers[it->second];
      b.last = std::max(b.last, position[&op]);
      if (op.hasTrait<OpTrait::IsTerminator>())
        escapes.set(it->second);
    }
  }
  // A collective runs from its op to the first use of its result (the CPU
  // code starts it there and waits there): its input stays alive until
  // then.
  for (Operation &op : block) {
    if (!isa_and_nonnull<mesh::MeshDialect>(op.getDialect()) ||
        op.getNumResults() != 1 || op.getNumOperands() != 1)
      continue;
    int64_t wait = position[block.getTerminator()];
    for (Operation *user : op.getResult(0).getUsers())
      if (Operation *at = block.findAncestorOpInBlock(*user))
        wait = std::min(wait, position[at]);
    auto it = bufferOf.find(op.getOperand(0));
    if (it != bufferOf.end() && it->second >= 0)
      buffers[it->second].last = std::max(buffers[it->second].last, wait);
  }
  std::vector<memplan::LiveBuffer> planned;
  for (size_t j = 0; j < buffers.size(); ++j)
    if (!escapes.test(j))
      planned.push_back(buffers[j]);
  return memplan::planArena(planned).peak;
}

/// One candidate decision, evaluated.
struct Candidate {
  std::string name;
  llvm::BitVector keep;
  bool perOp = false;
  int64_t peak = -1;
  int64_t flops = 0;
  SmallVector<int64_t> flopsOfSaved;
};

struct RecomputePass : loom::impl::RecomputePassBase<RecomputePass> {
  using RecomputePassBase::RecomputePassBase;
  /// Where the report goes instead of `report` (createRecomputePass).
  report::Sink *sink = nullptr;

  void runOnOperation() override {
    if (failed(run()))
      signalPassFailure();
  }

  FailureOr<func::FuncOp> pick() {
    ModuleOp module = getOperation();
    if (!funcName.empty())
      return training::pickFunction(module, funcName, "loom-recompute");
    for (auto f : module.getOps<func::FuncOp>()) {
      if (f.isDeclaration())
        continue;
      for (unsigned i = 0; i < f.getNumResults(); ++i)
        if (auto s = f.getResultAttrOfType<StringAttr>(i, "graph.output");
            s && s.getValue() == "loss")
          return f;
    }
    return module.emitError("loom-recompute: no function with a result "
                            "marked graph.output = \"loss\"; name one with "
                            "func=");
  }

  /// The planned peak and FLOPs of `c`, on a fused copy of the function.
  LogicalResult evaluate(func::FuncOp func, Candidate &c) {
    OpBuilder b(func.getContext());
    OwningOpRef<ModuleOp> scratch = ModuleOp::create(func.getLoc());
    b.setInsertionPointToEnd(scratch->getBody());
    // The module's other symbols the function may refer to (a mesh).
    for (Operation &op : *func->getParentOfType<ModuleOp>().getBody())
      if (!isa<func::FuncOp>(op))
        b.clone(op);
    auto copy = cast<func::FuncOp>(b.clone(*func));
    FailureOr<StepGraph> g = analyze(copy);
    if (failed(g))
      return failure();
    RewriteResult r = rewrite(*g, c.keep, c.perOp);
    c.flops = r.flops;
    c.flopsOfSaved = std::move(r.flopsOfSaved);
    PassManager pm(func.getContext());
    if (!targetPasses.empty() && failed(parsePassPipeline(targetPasses, pm)))
      return func.emitError("loom-recompute: bad target-passes '")
             << targetPasses << "'";
    pm.addPass(createFusionPass());
    if (failed(pm.run(*scratch)))
      return failure();
    c.peak = plannedPeak(copy, alignment);
    return success();
  }

  /// Chen et al.'s sqrt(n) checkpointing: of the n cut values, every
  /// ceil(sqrt(n))-th is kept; every other value is recomputed once per
  /// segment.
  llvm::BitVector sqrtKeep(const StepGraph &g, const llvm::BitVector &forced) {
    llvm::BitVector keep = forced;
    SmallVector<size_t> cuts;
    for (size_t i : g.isCut.set_bits())
      cuts.push_back(i);
    size_t step =
        std::max<size_t>(1, size_t(std::ceil(std::sqrt(double(cuts.size())))));
    for (size_t k = step - 1; k < cuts.size(); k += step)
      keep.set(cuts[k]);
    return keep;
  }

  /// The keep set that minimizes recompute FLOPs + lambda * kept bytes:
  /// a DP over the cut values in forward order, each kept cut ending a
  /// segment whose values are recomputed from the previous kept one, at
  /// the FLOPs of the recomputable forward ops between them.
  llvm::BitVector dpKeep(const StepGraph &g, const llvm::BitVector &forced,
                         ArrayRef<int64_t> flopsPrefix, double lambda) {
    DenseMap<Operation *, int64_t> forwardIndex;
    for (auto [i, op] : llvm::enumerate(g.forwardOps))
      forwardIndex[op] = i;
    // The cuts, and where each ends in the forward ops (1-based: 0 is the
    // start; m + 1 the end of the forward).
    SmallVector<size_t> cuts;
    SmallVector<int64_t> end{0};
    for (size_t i : g.isCut.set_bits()) {
      cuts.push_back(i);
      end.push_back(forwardIndex[g.saved[i].getDefiningOp()] + 1);
    }
    size_t m = cuts.size();
    end.push_back(int64_t(g.forwardOps.size()));
    // A forced value between two cuts is kept whatever they are; segments
    // still recompute through it from the previous kept value.
    auto segmentCost = [&](size_t i, size_t j) -> double {
      int64_t to = j == m + 1 ? end[j] : end[j] - 1;
      return to > end[i] ? double(flopsPrefix[to] - flopsPrefix[end[i]]) : 0;
    };
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<double> dp(m + 2, inf);
    std::vector<size_t> from(m + 2, 0);
    dp[0] = 0;
    for (size_t j = 1; j <= m + 1; ++j) {
      double own =
          j <= m ? lambda * tensorBytes(g.saved[cuts[j - 1]].getType()) : 0;
      for (size_t i = 0; i < j; ++i) {
        double cost = dp[i] + segmentCost(i, j) + own;
        if (cost < dp[j]) {
          dp[j] = cost;
          from[j] = i;
        }
      }
    }
    llvm::BitVector keep = forced;
    for (size_t j = from[m + 1]; j > 0; j = from[j])
      keep.set(cuts[j - 1]);
    return keep;
  }

  LogicalResult run() {
    if (strategy != "none" && strategy != "all" && strategy != "sqrt" &&
        strategy != "optimal")
      return getOperation().emitError("loom-recompute: strategy must be "
                                      "none, all, sqrt or optimal, not '")
             << strategy << "'";
    if (strategy == "optimal" && budget <= 0)
      return getOperation().emitError(
          "loom-recompute: strategy optimal needs a budget (budget=BYTES)");
    if (alignment <= 0 || !llvm::isPowerOf2_64(alignment))
      return getOperation().emitError("loom-recompute: alignment must be a "
                                      "power of two, got ")
             << alignment;
    FailureOr<func::FuncOp> func = pick();
    if (failed(func))
      return failure();
    FailureOr<StepGraph> g = analyze(*func);
    if (failed(g))
      return failure();
    auto start = std::chrono::steady_clock::now();
    size_t n = g->saved.size();
    llvm::BitVector forced(n);
    for (auto [i, v] : llvm::enumerate(g->saved))
      if (!isRecomputable(v.getDefiningOp()))
        forced.set(i);

    Candidate none{"none", llvm::BitVector(n, true)};
    if (failed(evaluate(*func, none)))
      return failure();
    Candidate chosen = none;
    std::vector<Candidate> tried{none};
    if (strategy == "all") {
      chosen = Candidate{"all", forced, /*perOp=*/true};
      if (failed(evaluate(*func, chosen)))
        return failure();
      tried.push_back(chosen);
    } else if (strategy == "sqrt") {
      chosen = Candidate{"sqrt", sqrtKeep(*g, forced)};
      if (failed(evaluate(*func, chosen)))
        return failure();
      tried.push_back(chosen);
    } else if (strategy == "optimal") {
      if (failed(solve(*g, forced, tried, chosen)))
        return failure();
    }
    double solveMs = std::chrono::duration<double, std::milli>(
                         std::chrono::steady_clock::now() - start)
                         .count();
    if (budget > 0 && chosen.peak > budget) {
      int64_t best = chosen.peak;
      for (const Candidate &c : tried)
        best = std::min(best, c.peak);
      return mlir::emitError(func->getLoc(), "loom-recompute: the budget of ")
             << int64_t(budget) << " bytes cannot be met with strategy "
             << strategy << ": the smallest planned peak found is " << best
             << " bytes (without recomputation: " << none.peak << ")";
    }

    RewriteResult done = rewrite(*g, chosen.keep, chosen.perOp);
    int64_t forwardFlops = 0;
    for (Operation *op : g->forwardOps)
      forwardFlops += flopsOf(op);
    llvm::json::Object out =
        toJson(*g, chosen, none, done, forwardFlops, solveMs, tried);
    if (failed(loom::report::emit(sink, "recompute", *func, "loom-recompute",
                                  report, llvm::json::Value(std::move(out)))))
      return failure();
    if (summary)
      printSummary(llvm::errs(), *g, chosen, none, done, forwardFlops, solveMs);
    return success();
  }

  /// Strategy optimal: the cheapest of the DP's keep sets, over a sweep
  /// and then a bisection of its multiplier, whose planned peak meets the
  /// budget (sqrt's set and none's are candidates too).
  LogicalResult solve(const StepGraph &g, const llvm::BitVector &forced,
                      std::vector<Candidate> &tried, Candidate &chosen) {
    SmallVector<int64_t> prefix{0};
    for (Operation *op : g.forwardOps)
      prefix.push_back(prefix.back() + (isRecomputable(op) ? flopsOf(op) : 0));
    std::map<std::vector<bool>, size_t> seen;
    auto key = [](const llvm::BitVector &k) {
      std::vector<bool> v(k.size());
      for (size_t i = 0; i < k.size(); ++i)
        v[i] = k.test(i);
      return v;
    };
    seen[key(tried.front().keep)] = 0;
    auto consider = [&](Candidate c) -> FailureOr<const Candidate *> {
      auto [it, fresh] = seen.insert({key(c.keep), tried.size()});
      if (!fresh)
        return &tried[it->second];
      if (failed(evaluate(g.func, c)))
        return failure();
      tried.push_back(std::move(c));
      return &tried.back();
    };
    if (failed(consider({"sqrt", sqrtKeep(g, forced)})))
      return failure();
    // Multipliers in FLOPs per byte, log-spaced.
    auto feasible = [&](const Candidate &c) { return c.peak <= budget; };
    double lo = -1, hi = -1; // infeasible below lo... feasible at hi
    double prevLambda = -1;
    bool prevFeasible = false;
    for (int step = 0; step <= 40; ++step) {
      double lambda = std::pow(10.0, -4.0 + step * 0.25);
      FailureOr<const Candidate *> c =
          consider({"dp", dpKeep(g, forced, prefix, lambda)});
      if (failed(c))
        return failure();
      bool ok = feasible(**c);
      if (ok && !prevFeasible && hi < 0) {
        lo = prevLambda;
        hi = lambda;
      }
      prevLambda = lambda;
      prevFeasible = ok;
    }
    // Bisect between the last infeasible and the first feasible multiplier.
    if (lo > 0 && hi > 0)
      for (int step = 0; step < 12; ++step) {
        double mid = std::sqrt(lo * hi);
        FailureOr<const Candidate *> c =
            consider({"dp", dpKeep(g, forced, prefix, mid)});
        if (failed(c))
          return failure();
        (feasible(**c) ? hi : lo) = mid;
      }
    const Candidate *best = nullptr, *smallest = nullptr;
    for (const Candidate &c : tried) {
      if (!smallest || c.peak < smallest->peak)
        smallest = &c;
      if (feasible(c) && (!best || c.flops < best->flops ||
                          (c.flops == best->flops && c.peak < best->peak)))
        best = &c;
    }
    if (!best) {
      chosen = *smallest;
      return success();
    }
    // Fill the budget: keep again the recomputed values that cost the most
    // FLOPs per byte while the planned peak stays within it.
    // `best` points into `tried`, which grows below.
    Candidate current = *best;
    std::string fillName = current.name + "+fill";
    SmallVector<size_t> order;
    for (size_t i = 0; i < current.keep.size(); ++i)
      if (!current.keep.test(i) && g.isSaved.test(i) &&
          current.flopsOfSaved[i] > 0)
        order.push_back(i);
    auto gain = [&](size_t i) {
      return double(current.flopsOfSaved[i]) /
             double(std::max<int64_t>(1, tensorBytes(g.saved[i].getType())));
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return gain(a) > gain(b); });
    for (size_t i : order) {
      Candidate c{fillName, current.keep};
      c.keep.set(i);
      FailureOr<const Candidate *> e = consider(std::move(c));
      if (failed(e))
        return failure();
      if (feasible(**e) && (*e)->flops < current.flops)
        current = **e;
    }
    chosen = current;
    return success();
  }

  llvm::json::Object toJson(StepGraph &g, const Candidate &chosen,
                            const Candidate &none, const RewriteResult &done,
                            int64_t forwardFlops, double solveMs,
                            const std::vector<Candidate> &tried) {
    llvm::json::Array values;
    for (auto [i, v] : llvm::enumerate(g.saved)) {
      Operation *def = v.getDefiningOp();
      bool kept = chosen.keep.test(i);
      values.push_back(llvm::json::Object{
          {"name", locString(def->getLoc())},
          {"op", def->getName().getStringRef().str()},
          {"shape", typeString(v.getType())},
          {"bytes", tensorBytes(v.getType())},
          {"decision", kept ? "kept" : "recomputed"},
          {"recompute_flops", kept ? 0 : done.flopsOfSaved[i]},
          {"recomputable", isRecomputable(def)},
          {"role", g.isSaved.test(i)
                       ? (g.isCut.test(i) ? "saved, cut" : "saved")
                       : "cut"},
      });
    }
    int64_t savedBytes = 0, keptBytes = 0;
    for (auto [i, v] : llvm::enumerate(g.saved)) {
      if (!g.isSaved.test(i))
        continue;
      savedBytes += tensorBytes(v.getType());
      if (chosen.keep.test(i))
        keptBytes += tensorBytes(v.getType());
    }
    return llvm::json::Object{
        {"function", g.func.getName().str()},
        {"strategy", std::string(strategy)},
        {"chosen", chosen.name},
        {"budget_bytes", int64_t(budget)},
        {"planned_peak_before", none.peak},
        {"planned_peak_after", chosen.peak},
        {"saved_bytes", savedBytes},
        {"kept_bytes", keptBytes},
        {"forward_flops", forwardFlops},
        {"extra_flops", done.flops},
        {"recomputed_ops", done.clonedOps},
        {"candidates_evaluated", int64_t(tried.size())},
        {"solve_ms", solveMs},
        {"values", std::move(values)},
    };
  }

  void printSummary(llvm::raw_ostream &os, StepGraph &g,
                    const Candidate &chosen, const Candidate &none,
                    const RewriteResult &done, int64_t forwardFlops,
                    double solveMs) {
    size_t savedCount = g.isSaved.count(), recomputed = 0;
    for (size_t i : g.isSaved.set_bits())
      recomputed += !chosen.keep.test(i);
    os << "loom-recompute: " << g.func.getName() << ", strategy " << strategy
       << (strategy == "optimal" ? " (chose " + chosen.name + ")" : "")
       << ", budget " << (budget > 0 ? std::to_string(budget) : "none")
       << " bytes\n"
       << "  planned peak: " << none.peak << " -> " << chosen.peak << " bytes\n"
       << "  saved values: " << savedCount << ", recomputed " << recomputed
       << "\n"
       << "  extra FLOPs: " << done.flops << " (forward: " << forwardFlops
       << "), " << done.clonedOps << " ops cloned\n"
       << "  solve time: " << llvm::formatv("{0:F1}", solveMs) << " ms\n";
    for (auto [i, v] : llvm::enumerate(g.saved)) {
      Operation *def = v.getDefiningOp();
      bool kept = chosen.keep.test(i);
      os << "  " << (kept ? "kept       " : "recomputed ")
         << (g.isCut.test(i) ? (g.isSaved.test(i) ? "saved,cut " : "cut       ")
                             : "saved     ")
         << tensorBytes(v.getType()) << " B  " << v.getType() << "  "
         << def->getName().getStringRef();
      std::string loc = locString(def->getLoc());
      if (!loc.empty())
        os << " @" << loc;
      if (!kept)
        os << "  " << done.flopsOfSaved[i] << " FLOPs";
      os << "\n";
    }
  }
};

} // namespace

std::unique_ptr<mlir::Pass>
loom::createRecomputePass(const RecomputePassOptions &options,
                          report::Sink *sink) {
  auto pass = std::make_unique<RecomputePass>(options);
  pass->sink = sink;
  return pass;
}
