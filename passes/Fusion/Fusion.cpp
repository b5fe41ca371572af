//===- Fusion.cpp - graph ops grouped into kernel.fusion regions ----------===//
//
// `--loom-fusion`: decides, on graph IR, which ops each backend compiles as
// one kernel. The decisions are made on the graph (union-find over
// producer -> consumer edges, in block order), then each group becomes one
// kernel.fusion op and the block is re-sorted topologically.
//
//===----------------------------------------------------------------------===//

#include "passes/Fusion/Passes.h"
#include "passes/PassReport.h"

#include "dialects/graph/GraphDialect.h"
#include "dialects/graph/GraphOps.h"
#include "dialects/kernel/KernelOps.h"

#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace loom {
#define GEN_PASS_DEF_FUSIONPASS
#include "passes/Fusion/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using kernel::FusionKind;
using report::describe;
using report::locString;

namespace {

/// Constants below this many bytes (and splats) are cloned into regions.
constexpr int64_t kSmallConstantBytes = 1024;

/// How an op takes part in fusion.
struct OpClass {
  /// Elementwise (one parallel loop nest over the result): fuses into its
  /// user and takes elementwise users.
  bool elementwise = false;
  /// For a non-elementwise op (a root): what its region computes.
  FusionKind kind = FusionKind::elementwise;
  /// Whether elementwise producers fuse into it.
  bool prologue = false;
  /// Whether elementwise users of its result fuse into its region.
  bool epilogue = false;
};

OpClass classify(Operation *op) {
  using namespace loom::graph;
  OpClass c;
  // Elementwise with broadcasting, and the ops that compute each output
  // element on its own (one parallel loop nest over the result: generators,
  // gathers, inference batch norm), which fuse into their users likewise.
  if (op->hasTrait<OpTrait::Elementwise>() ||
      op->hasTrait<GraphTrait::BroadcastingElementwise>() ||
      isa<BroadcastToOp, BatchNormOp, FillLikeOp, IotaOp, GatherOp,
          GatherElementsOp, EmbeddingOp, TriluOp>(op)) {
    c.elementwise = true;
    return c;
  }
  if (op->hasTrait<GraphTrait::Reduction>() ||
      isa<ArgMaxOp, ArgMinOp, GlobalAvgPoolOp, MaxPoolOp, AvgPoolOp>(op))
    c.kind = FusionKind::reduction;
  else if (isa<SoftmaxOp, LogSoftmaxOp>(op))
    c.kind = FusionKind::softmax;
  else if (isa<LayerNormOp>(op))
    c.kind = FusionKind::norm;
  else if (isa<MatmulOp, MatmulIntegerOp>(op))
    c.kind = FusionKind::matmul; // an integer one's requantization its epilogue
  else
    c.kind = FusionKind::other;
  c.prologue = c.kind == FusionKind::reduction ||
               c.kind == FusionKind::softmax || c.kind == FusionKind::norm;
  c.epilogue = c.prologue || c.kind == FusionKind::matmul;
  return c;
}

bool isSmallConstant(graph::ConstantOp op) {
  auto value = op.getValue();
  if (value.isSplat())
    return true;
  auto type = cast<ShapedType>(value.getType());
  int64_t bits = std::max<int64_t>(8, type.getElementTypeBitWidth());
  return type.getNumElements() * bits / 8 < kSmallConstantBytes;
}

/// One fusion decision on a producer -> consumer edge.
struct Decision {
  Operation *producer, *consumer;
  bool fused;
  std::string reason;
};

/// The regions and decisions of one function, for the report.
struct FunctionReport {
  std::string function;
  struct Region {
    std::string name;
    FusionKind kind;
    SmallVector<Operation *> ops;
  };
  SmallVector<Region> regions;
  SmallVector<Decision> decisions;
};

/// The grouping of one block's graph ops.
class Grouping {
public:
  Grouping(Block &block, unsigned maxOps) : maxOps(maxOps) {
    for (Operation &op : block) {
      index[&op] = order.size();
      order.push_back(&op);
      if (isa<graph::GraphDialect>(op.getDialect()) &&
          !isa<graph::ConstantOp>(op)) {
        groups.insert(&op);
        classes[&op] = classify(&op);
      }
    }
  }

  bool isMember(Operation *op) const { return classes.count(op); }
  const OpClass &classOf(Operation *op) const { return classes.at(op); }
  Operation *leader(Operation *op) const { return groups.getLeaderValue(op); }

  /// The members of `op`'s group, in block order.
  SmallVector<Operation *> membersOf(Operation *op) const {
    SmallVector<Operation *> members(groups.findLeader(op),
                                     groups.member_end());
    llvm::sort(members, [&](Operation *a, Operation *b) {
      return index.at(a) < index.at(b);
    });
    return members;
  }

  /// The root (non-elementwise op) of `op`'s group, if any.
  Operation *rootOf(Operation *op) const {
    for (Operation *m : membersOf(op))
      if (!classOf(m).elementwise)
        return m;
    return nullptr;
  }

  FusionKind kindOf(Operation *op) const {
    if (Operation *root = rootOf(op))
      return classOf(root).kind;
    for (Operation *m : membersOf(op))
      if (isa<graph::BatchNormOp>(m))
        return FusionKind::norm;
    return FusionKind::elementwise;
  }

  /// Decides the edge `producer` -> `consumer` and merges their groups
  /// when they fuse.
  Decision decide(Operation *producer, Operation *consumer) {
    Decision d{producer, consumer, false, ""};
    const OpClass &p = classOf(producer), &c = classOf(consumer);
    // A producer fuses into the region that holds all its users: computed
    // once, never recomputed in several regions.
    // A function result is no user here: the region also yields the
    // value (a training step's new optimizer moment is a result and feeds
    // the parameter update).
    llvm::SmallPtrSet<Operation *, 4> users, userGroups;
    for (Operation *user : producer->getUsers()) {
      if (user->hasTrait<OpTrait::IsTerminator>())
        continue;
      users.insert(user);
      userGroups.insert(isMember(user) ? leader(user) : user);
    }
    userGroups.erase(leader(producer));
    if (p.elementwise) {
      if (userGroups.size() != 1) {
        d.reason = usersReason(users.size(), userGroups.size());
        return d;
      }
      if (!c.elementwise && !c.prologue) {
        d.reason = std::string(c.kind == FusionKind::matmul
                                   ? "matmul"
                                   : consumer->getName().getStringRef()) +
                   " does not fuse its operands' producers (no prologue)";
        return d;
      }
      d.reason = c.elementwise ? "elementwise chain" : "prologue";
    } else {
      if (!p.epilogue) {
        d.reason =
            producer->getName().getStringRef().str() + " fuses with nothing";
        return d;
      }
      if (!c.elementwise) {
        d.reason = stringifyFusionKind(p.kind).str() +
                   " is not fused into a consumer's prologue";
        return d;
      }
      if (userGroups.size() != 1) {
        d.reason = usersReason(users.size(), userGroups.size());
        return d;
      }
      d.reason = "epilogue";
    }
    Operation *rootP = rootOf(producer), *rootC = rootOf(consumer);
    if (rootP && rootC) {
      d.reason =
          "a region holds one root: " + rootP->getName().getStringRef().str() +
          " and " + rootC->getName().getStringRef().str() + " stay apart";
      return d;
    }
    unite(producer, consumer, "fusing", d);
    return d;
  }

  /// Merges the regions of `a` and `b` into `d` (fused) unless the result
  /// would exceed max-ops or make a cycle (`d.reason` says which, with
  /// `verb` naming the merge).
  void unite(Operation *a, Operation *b, StringRef verb, Decision &d) {
    SmallVector<Operation *> merged = membersOf(a);
    merged.append(membersOf(b));
    if (maxOps && merged.size() > maxOps) {
      d.reason = "the region would exceed max-ops=" + std::to_string(maxOps);
      return;
    }
    if (Operation *through = pathOutside(merged)) {
      d.reason =
          (verb + " would make a cycle through " + describe(through)).str();
      return;
    }
    groups.unionSets(a, b);
    d.fused = true;
  }

  /// Merges the regions of `a` and `b`, which share no edge (horizontal
  /// fusion), when both are elementwise and the merge makes no cycle.
  Decision mergeSiblings(Operation *a, Operation *b) {
    Decision d{a, b, false, ""};
    if (rootOf(a) || rootOf(b)) {
      d.reason = "only elementwise regions merge side by side";
      return d;
    }
    d.reason = "multi-tensor optimizer update";
    unite(a, b, "merging", d);
    return d;
  }

  static std::string usersReason(size_t users, size_t groups) {
    std::string reason = "producer has " + std::to_string(users) + " users";
    if (groups != users)
      reason += " in " + std::to_string(groups) + " regions";
    return reason;
  }

  /// An op outside `members` on a path from one member to another, if any:
  /// fusing the members would then make a cycle between regions.
  Operation *pathOutside(ArrayRef<Operation *> members) const {
    llvm::SmallPtrSet<Operation *, 16> in(members.begin(), members.end());
    size_t last = 0;
    for (Operation *m : members)
      last = std::max(last, index.at(m));
    SmallVector<std::pair<Operation *, Operation *>> work; // (op, first hop)
    llvm::SmallPtrSet<Operation *, 32> seen;
    for (Operation *m : members)
      for (Operation *user : m->getUsers())
        if (!in.count(user) && index.count(user) && seen.insert(user).second)
          work.push_back({user, user});
    while (!work.empty()) {
      auto [op, first] = work.pop_back_val();
      if (index.at(op) > last)
        continue;
      for (Operation *user : op->getUsers()) {
        if (in.count(user))
          return first;
        if (index.count(user) && seen.insert(user).second)
          work.push_back({user, first});
      }
    }
    return nullptr;
  }

  /// The leaders of the groups, in block order of their first member.
  SmallVector<Operation *> leaders() const {
    SmallVector<Operation *> result;
    llvm::SmallPtrSet<Operation *, 16> seen;
    for (Operation *op : order)
      if (isMember(op) && seen.insert(leader(op)).second)
        result.push_back(leader(op));
    return result;
  }

private:
  unsigned maxOps;
  DenseMap<Operation *, size_t> index;
  SmallVector<Operation *> order;
  llvm::EquivalenceClasses<Operation *> groups;
  DenseMap<Operation *, OpClass> classes;
};

/// Moves `members` (in block order) into a new kernel.fusion named `name`
/// placed at the last member; small constants they use are cloned in.
kernel::FusionOp outline(ArrayRef<Operation *> members, StringRef name,
                         FusionKind kind) {
  llvm::SmallPtrSet<Operation *, 16> in(members.begin(), members.end());
  llvm::SetVector<Value> inputs;
  SmallVector<graph::ConstantOp> smallConstants;
  llvm::SmallPtrSet<Operation *, 8> seenConstants;
  SmallVector<Value> outputs;
  for (Operation *op : members) {
    for (Value v : op->getOperands()) {
      Operation *def = v.getDefiningOp();
      if (def && in.count(def))
        continue;
      auto constant = dyn_cast_or_null<graph::ConstantOp>(def);
      if (constant && isSmallConstant(constant)) {
        if (seenConstants.insert(def).second)
          smallConstants.push_back(constant);
        continue;
      }
      inputs.insert(v);
    }
    for (Value r : op->getResults())
      if (llvm::any_of(r.getUsers(),
                       [&](Operation *user) { return !in.count(user); }))
        outputs.push_back(r);
  }

  Operation *last = members.back();
  OpBuilder b(last->getContext());
  b.setInsertionPointAfter(last);
  SmallVector<Location> locs;
  for (Operation *op : members)
    locs.push_back(op->getLoc());
  Location loc = b.getFusedLoc(locs);
  auto fusion = b.create<kernel::FusionOp>(
      loc, TypeRange(ValueRange(outputs)), b.getStringAttr(name),
      kernel::FusionKindAttr::get(b.getContext(), kind), inputs.getArrayRef());
  Block *body = new Block();
  fusion.getBody().push_back(body);
  for (Value v : inputs)
    body->addArgument(v.getType(), v.getLoc());
  b.setInsertionPointToStart(body);
  auto yield = b.create<kernel::YieldOp>(loc, outputs);

  // Outside users now read the region's results.
  for (auto [value, result] : llvm::zip(outputs, fusion.getResults()))
    value.replaceUsesWithIf(result, [&](OpOperand &use) {
      return !in.count(use.getOwner()) && use.getOwner() != yield;
    });
  b.setInsertionPoint(yield);
  IRMapping constants;
  for (graph::ConstantOp constant : smallConstants)
    constants.map(constant.getResult(), b.clone(*constant)->getResult(0));
  for (Operation *op : members) {
    op->moveBefore(yield);
    for (OpOperand &operand : op->getOpOperands())
      if (Value c = constants.lookupOrNull(operand.get()))
        operand.set(c);
  }
  for (auto [input, arg] : llvm::zip(inputs, body->getArguments()))
    Value(input).replaceUsesWithIf(arg, [&](OpOperand &use) {
      return fusion->isProperAncestor(use.getOwner());
    });
  return fusion;
}

/// Groups the graph ops of `block`; records the regions in `report`.
void fuseBlock(Block &block, unsigned maxOps, unsigned &counter,
               FunctionReport &report) {
  Grouping grouping(block, maxOps);
  SmallVector<Operation *> ops;
  for (Operation &op : block)
    if (grouping.isMember(&op))
      ops.push_back(&op);
  if (ops.empty())
    return;
  // Edges in block order until nothing more fuses: a producer whose users
  // were in several regions may find them merged into one.
  llvm::MapVector<std::pair<Operation *, Operation *>, Decision> decisions;
  for (bool changed = true; changed;) {
    changed = false;
    for (Operation *consumer : ops) {
      for (Value v : consumer->getOperands()) {
        Operation *producer = v.getDefiningOp();
        if (!producer || !grouping.isMember(producer) ||
            grouping.leader(producer) == grouping.leader(consumer))
          continue;
        Decision d = grouping.decide(producer, consumer);
        changed |= d.fused;
        decisions.insert_or_assign({producer, consumer}, d);
      }
    }
  }
  // Multi-tensor: the per-parameter updates of a training step (ops the
  // optimizer pass located at "optimizer/<param>") become one region, one
  // kernel for all parameters.
  SmallVector<Operation *> updates;
  for (Operation *leader : grouping.leaders())
    if (llvm::all_of(grouping.membersOf(leader), [](Operation *op) {
          return StringRef(locString(op->getLoc())).starts_with("optimizer/");
        }))
      updates.push_back(leader);
  for (size_t i = 1; i < updates.size(); ++i)
    report.decisions.push_back(
        grouping.mergeSiblings(updates.front(), updates[i]));
  for (auto &[edge, d] : decisions) {
    // Refused at first, then in one region through other edges.
    if (!d.fused && grouping.leader(edge.first) == grouping.leader(edge.second))
      d = {edge.first, edge.second, true, "in one region through other ops"};
    report.decisions.push_back(d);
  }

  for (Operation *leader : grouping.leaders()) {
    SmallVector<Operation *> members = grouping.membersOf(leader);
    FusionKind kind = grouping.kindOf(leader);
    std::string name = "fusion_" + std::to_string(counter++);
    report.regions.push_back({name, kind, members});
    outline(members, name, kind);
  }
  // A region sits at its last op; ops between its first and last op that
  // read its results move below it.
  bool sorted = sortTopologically(&block, block.without_terminator());
  assert(sorted && "fusion regions are acyclic");
  (void)sorted;
  for (Operation &op : llvm::make_early_inc_range(block))
    if (isa<graph::ConstantOp>(op) && op.use_empty())
      op.erase();
}

llvm::json::Object opJson(Operation *op) {
  return llvm::json::Object{{"op", op->getName().getStringRef()},
                            {"loc", locString(op->getLoc())}};
}

llvm::json::Value toJson(ArrayRef<FunctionReport> reports) {
  llvm::json::Array functions;
  for (const FunctionReport &f : reports) {
    llvm::json::Array regions, decisions;
    for (const auto &r : f.regions) {
      llvm::json::Array ops;
      for (Operation *op : r.ops)
        ops.push_back(opJson(op));
      regions.push_back(
          llvm::json::Object{{"name", r.name},
                             {"kind", kernel::stringifyFusionKind(r.kind)},
                             {"ops", std::move(ops)}});
    }
    for (const Decision &d : f.decisions)
      decisions.push_back(llvm::json::Object{{"producer", opJson(d.producer)},
                                             {"consumer", opJson(d.consumer)},
                                             {"fused", d.fused},
                                             {"reason", d.reason}});
    functions.push_back(
        llvm::json::Object{{"function", f.function},
                           {"regions", std::move(regions)},
                           {"decisions", std::move(decisions)}});
  }
  return llvm::json::Object{{"functions", std::move(functions)}};
}

void printSummary(ArrayRef<FunctionReport> reports, llvm::raw_ostream &os) {
  for (const FunctionReport &f : reports) {
    os << "loom-fusion: @" << f.function << ": " << f.regions.size()
       << " regions\n";
    for (const auto &r : f.regions) {
      os << "  " << r.name << " (" << kernel::stringifyFusionKind(r.kind)
         << "):";
      for (Operation *op : r.ops)
        os << " " << describe(op);
      os << "\n";
    }
    for (const Decision &d : f.decisions)
      if (!d.fused)
        os << "  not fused: " << describe(d.producer) << " -> "
           << describe(d.consumer) << ": " << d.reason << "\n";
  }
}

struct FusionPass : loom::impl::FusionPassBase<FusionPass> {
  using FusionPassBase::FusionPassBase;

  void runOnOperation() override {
    SmallVector<FunctionReport> reports;
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isDeclaration())
        continue;
      FunctionReport report;
      report.function = func.getName().str();
      unsigned counter = 0;
      for (Block &block : func.getBody())
        fuseBlock(block, maxOps, counter, report);
      reports.push_back(std::move(report));
    }
    if (summary)
      printSummary(reports, llvm::errs());
    if (report.empty())
      return;
    if (failed(loom::report::writeJson(getOperation(), "loom-fusion", report,
                                       toJson(reports))))
      signalPassFailure();
  }
};

} // namespace
