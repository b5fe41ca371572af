//===- DataParallel.cpp - gradients reduced over the data axis ------------===//
//
// `--loom-data-parallel`: every rank runs the gradient function on its slice
// of the global batch; its gradients are partial sums and its loss the loss
// of its slice. The pass buckets the gradients in the order the backward
// produces them and reduces each bucket over the mesh's data axis right
// after its last gradient (all-reduce, or reduce-scatter for ZeRO-2), with
// MLIR's upstream mesh collectives. See Passes.td for the contract and
// docs/distributed.md for the whole flow.
//
//===----------------------------------------------------------------------===//

#include "passes/PassReport.h"
#include "passes/Sharding/Passes.h"
#include "passes/Sharding/ShardingUtils.h"
#include "passes/Training/TrainingUtils.h"

#include "dialects/graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

namespace loom {
#define GEN_PASS_DEF_DATAPARALLELPASS
#include "passes/Sharding/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using namespace loom::graph;

namespace {

/// One gradient result of the function.
struct Grad {
  unsigned result;   ///< its index among the function's results
  std::string param; ///< graph.grad_of
  Value value;
  int64_t numel = 0, bytes = 0;
  int64_t position = -1; ///< of its defining op in the body; -1: an argument
};

struct Bucket {
  SmallVector<Grad *> grads;
  int64_t bytes = 0;
  Operation *after = nullptr; ///< the last gradient's defining op (or null)
};

/// FSDP (ZeRO-3): one sharded parameter of the gradient function.
struct FsdpParam {
  BlockArgument arg; ///< now its chunk, tensor<chunk x T>
  std::string name;
  RankedTensorType whole;
  int64_t numel = 0, chunk = 0, bytes = 0;
  Operation *firstForward = nullptr, *firstBackward = nullptr;
  std::string layer; ///< its gather group's key
};

/// FSDP: the parameters gathered together, in the order of their first
/// use (forward or backward).
struct GatherGroup {
  std::string layer;
  SmallVector<FsdpParam *> params;
  int64_t bytes = 0;
  Operation *firstUse = nullptr; ///< the group's first use in this pass
  Operation *gatherAt = nullptr; ///< where its gathers start (before it)
};

/// The gather group of a parameter: its name up to and including the first
/// numeric component (`h.3.attn.c_attn.weight` -> `h.3`, a transformer
/// block), else its module (`fc1.weight` -> `fc1`), else the name itself.
std::string layerKey(StringRef name) {
  SmallVector<StringRef> parts;
  name.split(parts, '.');
  for (size_t i = 0; i < parts.size(); ++i)
    if (!parts[i].empty() && llvm::all_of(parts[i], llvm::isDigit) &&
        i + 1 < parts.size())
      return llvm::join(ArrayRef<StringRef>(parts).take_front(i + 1), ".");
  size_t dot = name.rfind('.');
  return (dot == StringRef::npos ? name : name.take_front(dot)).str();
}

struct DataParallelPass : loom::impl::DataParallelPassBase<DataParallelPass> {
  using DataParallelPassBase::DataParallelPassBase;
  /// Where the report goes instead of `report`.
  report::Sink *sink = nullptr;

  void runOnOperation() override {
    if (failed(run()))
      signalPassFailure();
  }

  /// The bucket size: the option, else a quarter of the gradient bytes
  /// between 256 KiB and 25 MiB.
  int64_t chooseBucketBytes(int64_t total) const {
    if (bucketBytes > 0)
      return bucketBytes;
    return std::clamp<int64_t>(total / 4, 256 << 10, 25 << 20);
  }

  LogicalResult run() {
    ModuleOp module = getOperation();
    if (ranks < 1)
      return module.emitError("loom-data-parallel: ranks must be at least 1, "
                              "not ")
             << (int64_t)ranks;
    if (zero < 0 || zero > 3)
      return module.emitError("loom-data-parallel: zero takes 0, 1, 2 or 3, "
                              "not ")
             << (int64_t)zero;
    FailureOr<func::FuncOp> found =
        training::gradientFunction(module, funcName, "loom-data-parallel");
    if (failed(found))
      return failure();
    func::FuncOp f = *found;
    if (!f.getBody().hasOneBlock())
      return f.emitError("loom-data-parallel: the gradient function must be "
                         "one block");
    FailureOr<sharding::MeshAxis> axis =
        sharding::getOrCreateAxis(module, "data", ranks, "loom-data-parallel");
    if (failed(axis))
      return failure();
    sharding::findMesh(module)->setAttr(
        sharding::kZeroAttr,
        IntegerAttr::get(IntegerType::get(module.getContext(), 64), zero));

    Block &body = f.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    // ZeRO-3: the parameters become chunks, gathered where they are used.
    if (zero == 3 && failed(shardParameters(f, *axis)))
      return failure();
    DenseMap<Operation *, int64_t> position;
    int64_t n = 0;
    for (Operation &op : body)
      position[&op] = n++;

    // The loss and the gradients, in the order the backward computes them.
    std::optional<unsigned> lossResult;
    std::vector<Grad> grads;
    int64_t total = 0;
    for (unsigned i = 0; i < f.getNumResults(); ++i) {
      Value v = ret.getOperand(i);
      if (auto of = f.getResultAttrOfType<StringAttr>(i, "graph.grad_of")) {
        auto type = dyn_cast<RankedTensorType>(v.getType());
        if (!type || !type.hasStaticShape() ||
            !isa<FloatType>(type.getElementType()))
          return f.emitError("loom-data-parallel: the gradient of '")
                 << of.getValue() << "' is not a static float tensor ("
                 << v.getType() << ")";
        Grad g;
        g.result = i;
        g.param = of.getValue().str();
        g.value = v;
        g.numel = type.getNumElements();
        g.bytes = g.numel * type.getElementTypeBitWidth() / 8;
        if (Operation *def = v.getDefiningOp())
          g.position = position.lookup(def);
        total += g.bytes;
        grads.push_back(g);
        continue;
      }
      auto out = f.getResultAttrOfType<StringAttr>(i, "graph.output");
      if (out && out.getValue() == "loss")
        lossResult = i;
    }
    // Without gradients (a pipeline rank whose stages train nothing) the
    // loss is still averaged.
    if (grads.empty() && !lossResult)
      return f.emitError("loom-data-parallel: no gradients to reduce");
    // A mean over the labels that are not ignored: each rank's weight in
    // the global mean is its share of the counted labels, not 1/N.
    Value weight = labelWeight(f, *axis);
    if (weight)
      for (Grad &g : grads)
        g.value = scaleBy(g.value, weight,
                          g.position >= 0 ? g.value.getDefiningOp() : nullptr);
    std::stable_sort(
        grads.begin(), grads.end(),
        [](const Grad &a, const Grad &b) { return a.position < b.position; });
    int64_t cap = chooseBucketBytes(total);
    std::vector<Bucket> buckets;
    for (Grad &g : grads) {
      if (buckets.empty() || buckets.back().bytes >= cap)
        buckets.emplace_back();
      Bucket &bk = buckets.back();
      bk.grads.push_back(&g);
      bk.bytes += g.bytes;
      if (Operation *def = g.value.getDefiningOp())
        bk.after = def;
    }

    SmallVector<Value> results(ret.getOperands());
    SmallVector<Type> resultTypes(f.getResultTypes());
    for (Bucket &bk : buckets)
      reduceBucket(f, *axis, bk, results, resultTypes);
    if (lossResult) {
      Value loss = results[*lossResult];
      OpBuilder b(f.getContext());
      if (Operation *def = loss.getDefiningOp())
        b.setInsertionPointAfter(def);
      else
        b.setInsertionPointToStart(&body);
      Location loc = NameLoc::get(b.getStringAttr("data_parallel/loss"));
      training::Scalars s(b, loc, getElementTypeOrSelf(loss.getType()));
      if (weight)
        loss = scaleBy(loss, weight, loss.getDefiningOp());
      Value sum = sharding::allReduce(b, loc, *axis, loss);
      results[*lossResult] = s.mul(sum, 1.0 / ranks);
    }
    ret->setOperands(results);
    f.setFunctionType(
        FunctionType::get(f.getContext(), f.getArgumentTypes(), resultTypes));
    for (Grad &g : grads)
      if (zero > 0)
        f.setResultAttr(
            g.result, "graph.shard",
            sharding::shardAttr(
                f.getContext(),
                cast<RankedTensorType>(g.value.getType()).getShape()));
    f->setAttr("loom.data_parallel",
               IntegerAttr::get(IntegerType::get(f.getContext(), 64), ranks));
    return writeReport(f, *axis, buckets, cap, lossResult.has_value());
  }

  /// FSDP: the sharded parameters and their gather groups, forward and
  /// backward, for the report.
  std::vector<std::shared_ptr<FsdpParam>> fsdpParams;
  std::vector<GatherGroup> forwardGroups, backwardGroups;

  /// The groups of `params` (in the order of their first use, `first`):
  /// consecutive parameters of one layer key. Each group's gathers start
  /// before the previous group's first use, so that they overlap its
  /// compute (the first group's, before its own).
  static std::vector<GatherGroup>
  groupParams(SmallVector<FsdpParam *> params, Operation *FsdpParam::*first,
              const DenseMap<Operation *, int64_t> &position) {
    std::stable_sort(
        params.begin(), params.end(), [&](FsdpParam *a, FsdpParam *b) {
          return position.lookup(a->*first) < position.lookup(b->*first);
        });
    std::vector<GatherGroup> groups;
    for (FsdpParam *p : params) {
      if (groups.empty() || groups.back().layer != p->layer) {
        groups.emplace_back();
        groups.back().layer = p->layer;
        groups.back().firstUse = p->*first;
      }
      groups.back().params.push_back(p);
      groups.back().bytes += p->bytes;
    }
    for (size_t i = 0; i < groups.size(); ++i)
      groups[i].gatherAt = i == 0 ? groups[0].firstUse : groups[i - 1].firstUse;
    return groups;
  }

  /// ZeRO-3 (FSDP) on the gradient function: each trained parameter
  /// argument becomes this rank's chunk (flattened, padded to a multiple of
  /// the ranks, `graph.shard` with its whole shape). Its forward uses read
  /// a `mesh.all_gather` of the chunks started before the previous layer's
  /// first use; its backward uses (and the backward's uses of forward
  /// values computed from the parameters alone: a transposed weight, a
  /// cast) read a second gather and clones of those ops, so that the
  /// forward's gathered copy dies after the forward's last use. The
  /// gradients are then reduce-scattered as ZeRO-2's.
  LogicalResult shardParameters(func::FuncOp f,
                                const sharding::MeshAxis &axis) {
    fsdpParams.clear();
    forwardGroups.clear();
    backwardGroups.clear();
    Block &body = f.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    MLIRContext *ctx = f.getContext();
    Value loss;
    llvm::StringSet<> trained;
    for (unsigned i = 0; i < f.getNumResults(); ++i) {
      if (auto of = f.getResultAttrOfType<StringAttr>(i, "graph.grad_of"))
        trained.insert(of.getValue());
      auto out = f.getResultAttrOfType<StringAttr>(i, "graph.output");
      if (out && out.getValue() == "loss")
        loss = ret.getOperand(i);
    }
    if (!loss)
      return f.emitError("loom-data-parallel: zero=3 needs the loss result "
                         "(graph.output = \"loss\") to tell the forward "
                         "from the backward");
    // The forward: the ops the loss depends on.
    llvm::DenseSet<Operation *> forward;
    SmallVector<Value> worklist{loss};
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val().getDefiningOp();
      if (!op || op->getBlock() != &body || !forward.insert(op).second)
        continue;
      llvm::append_range(worklist, op->getOperands());
    }
    // The trained parameters, now chunks.
    DenseMap<Value, FsdpParam *> byArg;
    for (BlockArgument arg : f.getArguments()) {
      unsigned i = arg.getArgNumber();
      auto name = f.getArgAttrOfType<StringAttr>(i, "graph.param");
      if (!name || !trained.contains(name.getValue()))
        continue;
      if (f.getArgAttr(i, "graph.shard"))
        return f.emitError("loom-data-parallel: parameter '")
               << name.getValue() << "' is split already (graph.shard): "
               << "zero=3 shards whole parameters";
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!type || !type.hasStaticShape() ||
          !isa<FloatType>(type.getElementType()))
        return f.emitError("loom-data-parallel: parameter '")
               << name.getValue() << "' is not a static float tensor ("
               << arg.getType() << ")";
      for (Operation *user : arg.getUsers())
        if (user->getBlock() != &body)
          return user->emitError("loom-data-parallel: zero=3: parameter '")
                 << name.getValue() << "' is read inside a region ("
                 << user->getParentOp()->getName()
                 << "): only the function's top level is gathered";
      auto p = std::make_shared<FsdpParam>();
      p->arg = arg;
      p->name = name.getValue().str();
      p->whole = type;
      p->numel = type.getNumElements();
      p->chunk = (p->numel + ranks - 1) / ranks;
      p->bytes = p->numel * type.getElementTypeBitWidth() / 8;
      p->layer = layerKey(p->name);
      byArg[arg] = p.get();
      fsdpParams.push_back(std::move(p));
    }
    if (fsdpParams.empty())
      return success();

    // Values computed from the parameters alone (and constants) by
    // side-effect-free graph ops: the backward clones those it reads.
    DenseMap<Value, SmallVector<FsdpParam *, 1>> deps;
    for (auto &p : fsdpParams)
      deps[p->arg] = {p.get()};
    for (Operation &op : body.without_terminator()) {
      if (!isa<GraphDialect>(op.getDialect()) || op.getNumRegions() ||
          !isMemoryEffectFree(&op) || op.getNumOperands() == 0)
        continue;
      SmallVector<FsdpParam *, 1> d;
      bool ok = true;
      for (Value v : op.getOperands()) {
        auto it = deps.find(v);
        if (it != deps.end()) {
          for (FsdpParam *p : it->second)
            if (!llvm::is_contained(d, p))
              d.push_back(p);
          continue;
        }
        if (!v.getDefiningOp<ConstantOp>()) {
          ok = false;
          break;
        }
      }
      if (ok && !d.empty())
        for (Value r : op.getResults())
          deps[r] = d;
    }
    // Those ops move down to their first user (mixed precision casts every
    // parameter at the function's start): a parameter is then first used
    // by its layer, and gathered there.
    SmallVector<Operation *> paramOnly;
    for (Operation &op : body.without_terminator())
      if (op.getNumResults() && deps.count(op.getResult(0)))
        paramOnly.push_back(&op);
    for (Operation *op : llvm::reverse(paramOnly)) {
      Operation *first = nullptr;
      for (Operation *user : op->getUsers()) {
        user = body.findAncestorOpInBlock(*user);
        if (user && (!first || user->isBeforeInBlock(first)))
          first = user;
      }
      if (first && op->getNextNode() != first && op->isBeforeInBlock(first))
        op->moveBefore(first);
    }
    DenseMap<Operation *, int64_t> position;
    int64_t n = 0;
    for (Operation &op : body)
      position[&op] = n++;
    // What a backward op must read again: a parameter, or a forward value
    // computed from parameters alone.
    auto needsRegather = [&](Operation *user, Value v) {
      if (forward.contains(user) || !deps.count(v))
        return false;
      Operation *def = v.getDefiningOp();
      return !def || forward.contains(def);
    };
    SmallVector<Operation *> backwardUsers;
    for (Operation &op : body) {
      if (forward.contains(&op))
        continue;
      bool any = false;
      for (Value v : op.getOperands()) {
        if (!needsRegather(&op, v))
          continue;
        any = true;
        for (FsdpParam *p : deps[v])
          if (!p->firstBackward)
            p->firstBackward = &op;
      }
      if (any)
        backwardUsers.push_back(&op);
    }
    for (auto &p : fsdpParams)
      for (Operation *user : p->arg.getUsers())
        if (forward.contains(user) &&
            (!p->firstForward || position[user] < position[p->firstForward]))
          p->firstForward = user;

    SmallVector<FsdpParam *> inForward, inBackward;
    for (auto &p : fsdpParams) {
      if (p->firstForward)
        inForward.push_back(p.get());
      if (p->firstBackward)
        inBackward.push_back(p.get());
    }
    forwardGroups = groupParams(inForward, &FsdpParam::firstForward, position);
    backwardGroups =
        groupParams(inBackward, &FsdpParam::firstBackward, position);

    // The chunks' types: a flat chunk per parameter.
    for (auto &p : fsdpParams) {
      unsigned i = p->arg.getArgNumber();
      p->arg.setType(
          RankedTensorType::get({p->chunk}, p->whole.getElementType()));
      f.setArgAttr(i, "graph.shard",
                   sharding::shardAttr(ctx, p->whole.getShape()));
    }
    SmallVector<Type> argTypes;
    for (BlockArgument a : f.getArguments())
      argTypes.push_back(a.getType());
    f.setFunctionType(FunctionType::get(ctx, argTypes, f.getResultTypes()));

    // The gathers first, each group's before the previous group's first
    // use; the code that reads a gather (where the runtime waits for it)
    // is placed at each parameter's own first use below.
    OpBuilder b(ctx);
    DenseMap<FsdpParam *, Value> forwardGather, backwardGather;
    auto gatherGroups = [&](std::vector<GatherGroup> &groups, StringRef phase,
                            DenseMap<FsdpParam *, Value> &out) {
      for (GatherGroup &g : groups) {
        b.setInsertionPoint(g.gatherAt);
        Location loc = NameLoc::get(b.getStringAttr(
            llvm::formatv("fsdp/{0}/gather/{1}", phase, g.layer).str()));
        for (FsdpParam *p : g.params) {
          Value row =
              b.create<ReshapeOp>(loc, p->arg, ArrayRef<int64_t>{1, p->chunk});
          Value all = sharding::allGather(b, loc, axis, row, 0);
          // Two gathers of one chunk stay two (CSE would merge them and
          // keep the forward's copy alive through the backward).
          all.getDefiningOp()->setAttr("loom.fsdp", b.getStringAttr(phase));
          out[p] = all;
        }
      }
    };
    gatherGroups(forwardGroups, "forward", forwardGather);
    gatherGroups(backwardGroups, "backward", backwardGather);
    // The whole parameter from its gather, before `before`.
    auto whole = [&](FsdpParam *p, Value gathered, Operation *before,
                     StringRef phase) -> Value {
      b.setInsertionPoint(before);
      Location loc = NameLoc::get(
          b.getStringAttr(llvm::formatv("fsdp/{0}/{1}", phase, p->name).str()));
      Value flat = b.create<ReshapeOp>(loc, gathered,
                                       ArrayRef<int64_t>{ranks * p->chunk});
      if (ranks * p->chunk != p->numel)
        flat = b.create<SliceOp>(loc, flat, ArrayRef<int64_t>{0},
                                 ArrayRef<int64_t>{p->numel},
                                 ArrayRef<int64_t>{1});
      return b.create<ReshapeOp>(loc, flat, p->whole.getShape());
    };
    // The forward's whole parameters, which the forward's ops read now.
    DenseMap<Value, FsdpParam *> forwardWhole;
    for (GatherGroup &g : forwardGroups)
      for (FsdpParam *p : g.params) {
        Value w = whole(p, forwardGather[p], p->firstForward, "forward");
        forwardWhole[w] = p;
        p->arg.replaceUsesWithIf(w, [&](OpOperand &use) {
          return forward.contains(use.getOwner());
        });
      }
    // The backward: parameters and forward values of parameters alone,
    // materialized again at their first backward use (clones of the
    // forward's ops on the backward's gathers).
    DenseMap<Value, Value> again;
    std::function<Value(Value, Operation *)> materialize =
        [&](Value v, Operation *before) -> Value {
      if (Value done = again.lookup(v))
        return done;
      Value result;
      FsdpParam *param = byArg.lookup(v);
      if (!param)
        param = forwardWhole.lookup(v);
      if (param) {
        result = whole(param, backwardGather[param], before, "backward");
      } else {
        Operation *def = v.getDefiningOp();
        IRMapping map;
        for (Value operand : def->getOperands())
          if (forwardWhole.count(operand) ||
              (deps.count(operand) &&
               (!operand.getDefiningOp() ||
                forward.contains(operand.getDefiningOp()))))
            map.map(operand, materialize(operand, before));
        b.setInsertionPoint(before);
        Operation *clone = b.clone(*def, map);
        for (auto [from, to] :
             llvm::zip(def->getResults(), clone->getResults()))
          again[from] = to;
        return again.lookup(v);
      }
      again[v] = result;
      return result;
    };
    for (Operation *op : backwardUsers)
      for (OpOperand &use : op->getOpOperands())
        if (needsRegather(op, use.get()))
          use.set(materialize(use.get(), op));
    return success();
  }

  /// For a cross-entropy mean over the labels other than `ignore_index`
  /// (the labels a function argument): this rank's weight `N * c / C`,
  /// with c its counted labels and C the ranks' total (an all-reduce at
  /// the function's start), so that the mean over the ranks of weighted
  /// losses and gradients is the global batch's mean, whatever the ranks'
  /// shares of ignored labels. Null when the loss has no such mean.
  Value labelWeight(func::FuncOp f, const sharding::MeshAxis &axis) {
    CrossEntropyOp ce;
    f.walk([&](CrossEntropyOp op) {
      if (op.getIgnoreIndexAttr() && isa<BlockArgument>(op.getLabels()) &&
          op.getReduction() == Reduction::mean)
        ce = op;
    });
    if (!ce)
      return {};
    Value labels = ce.getLabels();
    OpBuilder b(f.getContext());
    b.setInsertionPointToStart(&f.getBody().front());
    Location loc = NameLoc::get(b.getStringAttr("data_parallel/labels"));
    Type f32 = b.getF32Type();
    training::Scalars s(b, loc, f32);
    Value ignore =
        training::Scalars(b, loc, getElementTypeOrSelf(labels.getType()))
            .intConst(ce.getIgnoreIndexAttr().getInt());
    Value kept = b.create<CastOp>(
        loc, b.create<CompareOp>(loc, CompareDirection::ne, labels, ignore),
        f32);
    SmallVector<int64_t> all;
    for (int64_t i = 0; i < cast<RankedTensorType>(labels.getType()).getRank();
         ++i)
      all.push_back(i);
    Value count =
        all.empty() ? kept : b.create<ReduceSumOp>(loc, kept, all, false);
    Value total = sharding::allReduce(b, loc, axis, count);
    return s.div(s.mul(count, (double)ranks),
                 b.create<MaxOp>(loc, total, s.constant(1.0)));
  }

  /// `v * weight` (in `v`'s element type), after `after` (or at the start).
  Value scaleBy(Value v, Value weight, Operation *after) {
    OpBuilder b(v.getContext());
    if (after)
      b.setInsertionPointAfter(after);
    else
      b.setInsertionPointAfterValue(weight);
    Location loc = NameLoc::get(b.getStringAttr("data_parallel/labels"));
    Type elem = getElementTypeOrSelf(v.getType());
    Value w = elem == weight.getType().cast<ShapedType>().getElementType()
                  ? weight
                  : b.create<CastOp>(loc, weight, elem).getResult();
    return b.create<MulOp>(loc, v, w);
  }

  /// Reduces one bucket after its last gradient and replaces the bucket's
  /// results by the reduced values (ZeRO: the shards).
  void reduceBucket(func::FuncOp f, const sharding::MeshAxis &axis, Bucket &bk,
                    SmallVector<Value> &results,
                    SmallVector<Type> &resultTypes) {
    OpBuilder b(f.getContext());
    if (bk.after)
      b.setInsertionPointAfter(bk.after);
    else
      b.setInsertionPointToStart(&f.getBody().front());
    Location loc = NameLoc::get(b.getStringAttr(
        llvm::formatv("data_parallel/bucket{0}", bk.grads.front()->param)
            .str()));
    Type elem = getElementTypeOrSelf(bk.grads.front()->value.getType());
    bool sameType = llvm::all_of(bk.grads, [&](Grad *g) {
      return getElementTypeOrSelf(g->value.getType()) == elem;
    });
    training::Scalars s(b, loc, elem);
    // The sum over the ranks, divided by them where it is read (the
    // division fuses into the optimizer's kernels; the bucket reads the
    // gradients as they are).
    auto mean = [&](Value v) -> Value {
      return ranks == 1 ? v : s.mul(v, 1.0 / ranks);
    };
    if (zero == 0) {
      if (bk.grads.size() == 1 || !sameType) {
        for (Grad *g : bk.grads) {
          Value r = sharding::allReduce(b, loc, axis, g->value);
          results[g->result] = mean(r);
        }
        return;
      }
      SmallVector<Value> flat;
      for (Grad *g : bk.grads)
        flat.push_back(
            b.create<ReshapeOp>(loc, g->value, ArrayRef<int64_t>{g->numel}));
      Value all = b.create<ConcatOp>(loc, flat, 0);
      Value r = sharding::allReduce(b, loc, axis, all);
      int64_t offset = 0;
      for (Grad *g : bk.grads) {
        Value piece = b.create<SliceOp>(loc, r, ArrayRef<int64_t>{offset},
                                        ArrayRef<int64_t>{offset + g->numel},
                                        ArrayRef<int64_t>{1});
        results[g->result] = mean(b.create<ReshapeOp>(
            loc, piece, cast<RankedTensorType>(g->value.getType()).getShape()));
        offset += g->numel;
      }
      return;
    }
    // ZeRO: [ranks, chunk] per gradient, concatenated along the chunks, so
    // that row r of the bucket is every gradient's chunk r.
    SmallVector<Value> rows;
    SmallVector<int64_t> chunks;
    for (Grad *g : bk.grads) {
      int64_t chunk = (g->numel + ranks - 1) / ranks;
      chunks.push_back(chunk);
      Value flat =
          b.create<ReshapeOp>(loc, g->value, ArrayRef<int64_t>{g->numel});
      if (chunk * ranks != g->numel)
        flat = b.create<PadOp>(loc, flat,
                               ArrayRef<int64_t>{0, chunk * ranks - g->numel},
                               PadMode::constant, llvm::APFloat(0.0));
      rows.push_back(
          b.create<ReshapeOp>(loc, flat, ArrayRef<int64_t>{ranks, chunk}));
    }
    Value all = rows.size() == 1 || !sameType
                    ? Value()
                    : b.create<ConcatOp>(loc, rows, 1).getResult();
    auto shardOf = [&](Value rowsValue) {
      return zero >= 2 ? sharding::reduceScatter(b, loc, axis, rowsValue, 0)
                       : sharding::allSlice(
                             b, loc, axis,
                             sharding::allReduce(b, loc, axis, rowsValue), 0);
    };
    if (!all) {
      for (auto [g, row, chunk] : llvm::zip(bk.grads, rows, chunks)) {
        Value mine = shardOf(row);
        results[g->result] =
            mean(b.create<ReshapeOp>(loc, mine, ArrayRef<int64_t>{chunk}));
        resultTypes[g->result] = results[g->result].getType();
      }
      return;
    }
    Value mine = shardOf(all);
    int64_t offset = 0;
    for (auto [g, chunk] : llvm::zip(bk.grads, chunks)) {
      Value piece = b.create<SliceOp>(loc, mine, ArrayRef<int64_t>{0, offset},
                                      ArrayRef<int64_t>{1, offset + chunk},
                                      ArrayRef<int64_t>{1, 1});
      results[g->result] =
          mean(b.create<ReshapeOp>(loc, piece, ArrayRef<int64_t>{chunk}));
      resultTypes[g->result] = results[g->result].getType();
      offset += chunk;
    }
  }

  /// FSDP's part of the report: the gather groups and each rank's memory.
  llvm::json::Object fsdpReport(llvm::raw_ostream &os) {
    int64_t chunkBytes = 0, wholeBytes = 0;
    for (auto &p : fsdpParams) {
      int64_t elem = p->whole.getElementTypeBitWidth() / 8;
      chunkBytes += p->chunk * elem;
      wholeBytes += p->bytes;
    }
    auto groupsJson = [&](const std::vector<GatherGroup> &groups,
                          int64_t &largest, int64_t &pair) {
      llvm::json::Array out;
      largest = pair = 0;
      for (auto [i, g] : llvm::enumerate(groups)) {
        llvm::json::Array names;
        for (FsdpParam *p : g.params)
          names.push_back(p->name);
        largest = std::max(largest, g.bytes);
        pair = std::max(pair, g.bytes + (i ? groups[i - 1].bytes : 0));
        out.push_back(llvm::json::Object{
            {"index", (int64_t)i},
            {"layer", g.layer},
            {"params", std::move(names)},
            {"bytes", g.bytes},
            {"gather_starts_before", report::describe(g.gatherAt)},
            {"first_use", report::describe(g.firstUse)}});
      }
      return out;
    };
    int64_t fwdLargest, fwdPair, bwdLargest, bwdPair;
    llvm::json::Array forwardJson =
        groupsJson(forwardGroups, fwdLargest, fwdPair);
    llvm::json::Array backwardJson =
        groupsJson(backwardGroups, bwdLargest, bwdPair);
    int64_t largest = std::max(fwdLargest, bwdLargest);
    int64_t pair = std::max(fwdPair, bwdPair);
    int64_t slots = std::max<int64_t>(0, optimizerSlots);
    // Parameters, gradients and slots: each rank holds its chunk of each.
    int64_t state = chunkBytes * (2 + slots);
    os << llvm::formatv(
        "  fsdp: {0} parameter(s) sharded, {1} forward and {2} backward "
        "gather group(s); per rank: (parameters + gradients + {3} optimizer "
        "slot(s)) / {4} = {5} bytes + the largest gathered layer {6} bytes "
        "= {7} bytes ({8} with the next layer's gather in flight)\n",
        fsdpParams.size(), forwardGroups.size(), backwardGroups.size(), slots,
        (int64_t)ranks, state, largest, state + largest, state + pair);
    for (auto [i, g] : llvm::enumerate(forwardGroups))
      os << llvm::formatv("  gather group {0} '{1}': {2} bytes, {3} "
                          "parameter(s), started before {4}\n",
                          i, g.layer, g.bytes, g.params.size(),
                          report::describe(g.gatherAt));
    return llvm::json::Object{
        {"parameters_bytes", wholeBytes},
        {"parameter_chunk_bytes", chunkBytes},
        {"optimizer_slots", slots},
        {"per_rank_state_bytes", state},
        {"largest_gathered_layer_bytes", largest},
        {"per_rank_bytes", state + largest},
        {"per_rank_bytes_with_prefetch", state + pair},
        {"formula", "(parameters + gradients + optimizer state) / ranks + "
                    "the largest gathered layer (with prefetch: + the next "
                    "layer's gather in flight); activations not included"},
        {"forward_groups", std::move(forwardJson)},
        {"backward_groups", std::move(backwardJson)}};
  }

  LogicalResult writeReport(func::FuncOp f, const sharding::MeshAxis &axis,
                            ArrayRef<Bucket> buckets, int64_t cap, bool loss) {
    StringRef kind = zero >= 2   ? "reduce_scatter"
                     : zero == 1 ? "all_reduce + all_slice"
                                 : "all_reduce";
    llvm::json::Array bucketsJson;
    llvm::json::Array params;
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "loom-data-parallel: " << ranks << " ranks on axis 'data' of @"
       << axis.mesh << ", ZeRO-" << zero << ", " << buckets.size()
       << " gradient bucket(s) of up to " << cap << " bytes\n";
    for (auto [i, bk] : llvm::enumerate(buckets)) {
      llvm::json::Array names;
      for (Grad *g : bk.grads) {
        names.push_back(g->param);
        params.push_back(llvm::json::Object{
            {"name", g->param},
            {"bytes", g->bytes},
            {"param", zero == 3
                          ? "sharded over 'data' (1/" + std::to_string(ranks) +
                                "), gathered per layer"
                          : "replicated over 'data'"},
            {"gradient",
             zero >= 2 ? "reduce-scattered: shard of 1/" + std::to_string(ranks)
                       : "all-reduced (mean over the ranks)"},
            {"optimizer_state",
             zero > 0 ? "sharded over 'data' (1/" + std::to_string(ranks) + ")"
                      : "replicated"},
            {"bucket", (int64_t)i}});
      }
      std::string after = bk.after ? report::describe(bk.after)
                                   : std::string("the function's entry");
      bucketsJson.push_back(llvm::json::Object{
          {"index", (int64_t)i},
          {"collective", kind},
          {"bytes", bk.bytes},
          {"gradients", std::move(names)},
          {"starts_after", after},
          {"why", "the gradients are partial sums over the data-parallel "
                  "ranks' batch slices; started as soon as the bucket's "
                  "last gradient is computed, to overlap the rest of the "
                  "backward"}});
      os << llvm::formatv("  bucket {0}: {1} of {2} bytes ({3} gradient(s)) "
                          "after {4}\n",
                          i, kind, bk.bytes, bk.grads.size(), after);
    }
    std::optional<llvm::json::Object> fsdp;
    if (zero == 3)
      fsdp = fsdpReport(os);
    if (summary)
      llvm::errs() << text;
    if (!sink && report.empty())
      return success();
    llvm::json::Object out{
        {"mesh",
         llvm::json::Object{{"name", axis.mesh},
                            {"shape", llvm::json::Array{(int64_t)ranks}},
                            {"axes", llvm::json::Array{"data"}}}},
        {"zero", (int64_t)zero},
        {"bucket_bytes", cap},
        {"buckets", std::move(bucketsJson)},
        {"parameters", std::move(params)},
        {"loss", loss ? "all_reduce, divided by the ranks (the mean of the "
                        "ranks' losses)"
                      : "none"}};
    if (fsdp)
      out["fsdp"] = std::move(*fsdp);
    return report::emit(sink, "sharding", f, "loom-data-parallel", report,
                        llvm::json::Value(std::move(out)));
  }
};

} // namespace

std::unique_ptr<mlir::Pass>
loom::createDataParallelPass(const DataParallelPassOptions &options,
                             report::Sink *sink) {
  auto pass = std::make_unique<DataParallelPass>(options);
  pass->sink = sink;
  return pass;
}
