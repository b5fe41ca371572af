//===- Optimizer.cpp - the training step from a gradient function ---------===//
//
// `--loom-optimizer`: wraps F_grad (loss and gradients) into train_step,
// which also accumulates gradients, clips them by global norm, computes the
// learning rate of the schedule and applies SGD / Adam / AdamW, returning
// the next value of every piece of trained state. Everything is graph ops,
// so fusion and every backend see the optimizer like the model.
//
//===----------------------------------------------------------------------===//

#include "passes/Sharding/ShardingUtils.h"
#include "passes/Training/Passes.h"
#include "passes/Training/TrainingUtils.h"

#include "dialects/graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

namespace loom {
#define GEN_PASS_DEF_OPTIMIZERPASS
#include "passes/Training/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using namespace loom::graph;

namespace {

/// One trained parameter and its optimizer slots.
struct Param {
  std::string name;
  BlockArgument arg; ///< in train_step
  Value grad;        ///< in train_step
  Attribute initial; ///< graph.initial_value, may be null
  SmallVector<std::pair<std::string, BlockArgument>> slots; ///< kind, arg
  /// ZeRO (`graph.shard` on its gradient): the gradient and the slots are
  /// this rank's chunk of the flattened, padded parameter.
  DictionaryAttr shard;
  int64_t numel = 0, chunk = 0;
  /// ZeRO-3 (`graph.shard` over "data" without a dim on its argument):
  /// the parameter itself is this rank's chunk; its update stays a chunk.
  bool chunked = false;
  /// Tensor parallel (`graph.shard` on its argument): the parameter, its
  /// gradient and its slots are this rank's piece along one dim.
  DictionaryAttr split;
  BlockArgument slot(StringRef kind) const {
    for (auto &[k, a] : slots)
      if (k == kind)
        return a;
    return {};
  }
};

struct OptimizerPass : loom::impl::OptimizerPassBase<OptimizerPass> {
  using OptimizerPassBase::OptimizerPassBase;

  void runOnOperation() override {
    if (failed(run()))
      signalPassFailure();
  }

  FailureOr<func::FuncOp> gradFunction() {
    return training::gradientFunction(getOperation(), funcName,
                                      "loom-optimizer");
  }

  double decay() const {
    if (weightDecay >= 0)
      return weightDecay;
    return optimizer == "adamw" ? 0.01 : 0.0;
  }

  LogicalResult checkOptions(Operation *where) {
    if (optimizer != "sgd" && optimizer != "adam" && optimizer != "adamw")
      return where->emitError("loom-optimizer: unknown optimizer '")
             << optimizer << "' (sgd, adam, adamw)";
    if (schedule != "constant" && schedule != "cosine")
      return where->emitError("loom-optimizer: unknown schedule '")
             << schedule << "' (constant, cosine)";
    if (accumulate < 1)
      return where->emitError("loom-optimizer: accumulate must be >= 1");
    if (warmup < 0 || totalSteps < 0 || clipNorm < 0 || lr < 0)
      return where->emitError("loom-optimizer: warmup, total-steps, "
                              "clip-norm and lr must not be negative");
    if (nesterov && momentum <= 0)
      return where->emitError("loom-optimizer: nesterov needs a momentum");
    if (beta1 < 0 || beta1 >= 1 || beta2 < 0 || beta2 >= 1)
      return where->emitError("loom-optimizer: betas must be in [0, 1)");
    if (!(lossScaleInit > 0) || !(lossScaleGrowth >= 1) ||
        !(lossScaleBackoff > 0 && lossScaleBackoff < 1) ||
        lossScaleInterval < 1)
      return where->emitError("loom-optimizer: loss scaling needs init > 0, "
                              "growth >= 1, 0 < backoff < 1, interval >= 1");
    return success();
  }

  SmallVector<std::string> slotKinds() const {
    SmallVector<std::string> kinds;
    if (accumulate > 1)
      kinds.push_back("grad_accum");
    if (optimizer == "sgd" && momentum != 0)
      kinds.push_back("momentum");
    if (optimizer != "sgd") {
      kinds.push_back("exp_avg");
      kinds.push_back("exp_avg_sq");
    }
    return kinds;
  }

  bool scaled = false; // the gradient function scales its loss

  std::string describe() const {
    std::string s = optimizer + llvm::formatv(" lr={0}", lr).str();
    if (optimizer == "sgd") {
      if (momentum != 0)
        s += llvm::formatv(" momentum={0}", momentum).str();
      if (nesterov)
        s += " nesterov";
    } else {
      s += llvm::formatv(" betas=({0},{1}) eps={2}", beta1, beta2, eps).str();
    }
    s += llvm::formatv(" weight_decay={0}", decay()).str();
    if (clipNorm > 0)
      s += llvm::formatv(" clip_norm={0}", clipNorm).str();
    s += " schedule=" + schedule;
    if (warmup > 0)
      s += llvm::formatv(" warmup={0}", warmup).str();
    if (accumulate > 1)
      s += llvm::formatv(" accumulate={0}", accumulate).str();
    if (scaled)
      s += llvm::formatv(" loss_scale=dynamic(init={0} growth={1} every {2} "
                         "backoff={3})",
                         lossScaleInit, lossScaleGrowth, lossScaleInterval,
                         lossScaleBackoff)
               .str();
    return description.empty() ? s : description + "; " + s;
  }

  /// torch.cuda.amp.GradScaler.update: after an optimizer step with
  /// non-finite gradients the scale backs off and the count of good steps
  /// restarts; after `interval` good steps in a row it grows (unless that
  /// overflows). Between optimizer steps (accumulation) nothing changes.
  /// Returns the next scale and count.
  SmallVector<Value> updateLossScale(OpBuilder &b, Location loc,
                                     training::Scalars &s, Value scale,
                                     Value tracker, Value finite, Value apply) {
    Value zero = s.constant(0.0);
    Value good = b.create<WhereOp>(loc, finite, s.add(tracker, 1.0), zero);
    Value grow = b.create<CompareOp>(loc, CompareDirection::ge, good,
                                     s.constant((double)lossScaleInterval));
    Value grown = s.mul(scale, lossScaleGrowth);
    Value grownOk = b.create<CompareOp>(loc, CompareDirection::lt, grown,
                                        s.constant(INFINITY));
    Value nextScale = b.create<WhereOp>(
        loc, finite,
        b.create<WhereOp>(loc, grow,
                          b.create<WhereOp>(loc, grownOk, grown, scale), scale),
        s.mul(scale, lossScaleBackoff));
    Value nextGood = b.create<WhereOp>(loc, grow, zero, good);
    if (apply) {
      nextScale = b.create<WhereOp>(loc, apply, nextScale, scale);
      nextGood = b.create<WhereOp>(loc, apply, nextGood, tracker);
    }
    return {nextScale, nextGood};
  }

  /// ZeRO: this rank's chunk of `p`'s parameter, flattened and padded to
  /// a multiple of the ranks (as --loom-data-parallel cuts the gradient).
  static Value shardOf(OpBuilder &b, Location loc,
                       const sharding::MeshAxis &axis, const Param &p) {
    if (p.chunked)
      return p.arg;
    Value flat = b.create<ReshapeOp>(loc, p.arg, ArrayRef<int64_t>{p.numel});
    int64_t padded = p.chunk * axis.size;
    if (padded != p.numel)
      flat = b.create<PadOp>(loc, flat, ArrayRef<int64_t>{0, padded - p.numel},
                             PadMode::constant, llvm::APFloat(0.0));
    Value rows =
        b.create<ReshapeOp>(loc, flat, ArrayRef<int64_t>{axis.size, p.chunk});
    Value mine = sharding::allSlice(b, loc, axis, rows, 0);
    return b.create<ReshapeOp>(loc, mine, ArrayRef<int64_t>{p.chunk});
  }

  /// ZeRO: the whole parameter from every rank's updated chunk.
  static Value unshard(OpBuilder &b, Location loc,
                       const sharding::MeshAxis &axis, const Param &p,
                       Value chunk) {
    Value row = b.create<ReshapeOp>(loc, chunk, ArrayRef<int64_t>{1, p.chunk});
    Value all = sharding::allGather(b, loc, axis, row, 0);
    Value flat =
        b.create<ReshapeOp>(loc, all, ArrayRef<int64_t>{axis.size * p.chunk});
    if (axis.size * p.chunk != p.numel)
      flat =
          b.create<SliceOp>(loc, flat, ArrayRef<int64_t>{0},
                            ArrayRef<int64_t>{p.numel}, ArrayRef<int64_t>{1});
    return b.create<ReshapeOp>(
        loc, flat, cast<RankedTensorType>(p.arg.getType()).getShape());
  }

  LogicalResult run() {
    FailureOr<func::FuncOp> grad = gradFunction();
    if (failed(grad) || failed(checkOptions(*grad)))
      return failure();
    ModuleOp module = getOperation();
    if (module.lookupSymbol("train_step"))
      return grad->emitError("loom-optimizer: a function 'train_step' "
                             "exists already");
    MLIRContext *ctx = &getContext();
    OpBuilder b(ctx);
    Location loc = grad->getLoc();
    auto f32 = b.getF32Type();
    auto scalarI64 = RankedTensorType::get({}, b.getI64Type());

    // Which arguments are trained (they have a gradient result).
    auto ret = cast<func::ReturnOp>(grad->getBody().front().getTerminator());
    llvm::StringMap<unsigned> gradResult;
    for (unsigned i = 0; i < grad->getNumResults(); ++i)
      if (auto of = grad->getResultAttrOfType<StringAttr>(i, "graph.grad_of"))
        gradResult[of.getValue()] = i;
    auto lossType = dyn_cast<RankedTensorType>(grad->getResultTypes()[0]);
    if (!lossType || lossType.getNumElements() != 1)
      return grad->emitError("loom-optimizer: result 0 must be the loss");

    // The signature: batch inputs, step, total_steps, params, slots.
    SmallVector<Type> types;
    SmallVector<DictionaryAttr> argAttrs;
    SmallVector<unsigned> batchArgs, paramArgs;
    SmallVector<std::string> paramNames;
    std::optional<unsigned> scaleArg; // --loom-autodiff loss-scale
    std::optional<unsigned> rngArg;   // loom.rng_state
    for (unsigned i = 0; i < grad->getNumArguments(); ++i) {
      if (grad->getArgAttr(i, "graph.loss_scale")) {
        scaleArg = i;
        continue;
      }
      auto param = grad->getArgAttrOfType<StringAttr>(i, "graph.param");
      if (param && gradResult.count(param.getValue())) {
        paramArgs.push_back(i);
        paramNames.push_back(param.str());
        continue;
      }
      if (param)
        continue; // frozen: a constant below
      // The random ops' state (an imported ONNX random op): [0, step],
      // below, so that each micro-step draws anew.
      if (auto in = grad->getArgAttrOfType<StringAttr>(i, "graph.input");
          in && in.getValue() == "loom.rng_state") {
        rngArg = i;
        continue;
      }
      batchArgs.push_back(i);
    }
    for (unsigned i : batchArgs) {
      types.push_back(grad->getArgument(i).getType());
      argAttrs.push_back(grad->getArgAttrDict(i));
    }
    auto named = [&](StringRef key, Attribute value) {
      return b.getNamedAttr(key, value);
    };
    types.push_back(scalarI64);
    argAttrs.push_back(
        b.getDictionaryAttr({named("graph.step", b.getUnitAttr())}));
    types.push_back(scalarI64);
    argAttrs.push_back(
        b.getDictionaryAttr({named("graph.total_steps", b.getUnitAttr())}));
    auto stateAttrs = [&](StringRef name, StringRef kind, Attribute init,
                          Attribute split = {}) {
      SmallVector<NamedAttribute> a{
          named("graph.state", b.getStringAttr(name)),
          named("graph.state_kind", b.getStringAttr(kind))};
      if (init)
        a.push_back(named("graph.initial_value", init));
      if (split)
        a.push_back(named("graph.shard", split));
      return b.getDictionaryAttr(a);
    };
    // ZeRO-3: a parameter argument that is a flat chunk over "data"
    // (--loom-data-parallel zero=3).
    auto chunkOf = [&](unsigned i) -> DictionaryAttr {
      auto attr = grad->getArgAttrOfType<DictionaryAttr>(i, "graph.shard");
      auto axis = attr ? attr.getAs<StringAttr>("axis") : StringAttr();
      if (attr && !attr.get("dim") && axis && axis.getValue() == "data")
        return attr;
      return {};
    };
    // Tensor parallel: a split parameter's slots are split alike.
    auto splitOf = [&](unsigned i) -> DictionaryAttr {
      if (chunkOf(i))
        return {};
      return grad->getArgAttrOfType<DictionaryAttr>(i, "graph.shard");
    };
    for (auto [i, name] : llvm::zip(paramArgs, paramNames)) {
      Type t = grad->getArgument(i).getType();
      if (cast<RankedTensorType>(t).getElementType() != f32)
        return grad->emitError("loom-optimizer: parameter '")
               << name << "' is " << t
               << ": only f32 parameters are trained so far";
      types.push_back(t);
      DictionaryAttr chunk = chunkOf(i);
      argAttrs.push_back(stateAttrs(name, "param",
                                    grad->getArgAttr(i, "graph.initial_value"),
                                    chunk ? chunk : splitOf(i)));
    }
    SmallVector<std::string> kinds = slotKinds();
    for (const std::string &kind : kinds)
      for (auto [i, name] : llvm::zip(paramArgs, paramNames)) {
        // A ZeRO slot is a shard, like the gradient.
        unsigned r = gradResult[name];
        types.push_back(grad->getResultTypes()[r]);
        DictionaryAttr attrs =
            stateAttrs(name + "/" + kind, kind, nullptr, splitOf(i));
        if (auto shard =
                grad->getResultAttrOfType<DictionaryAttr>(r, "graph.shard")) {
          NamedAttrList list(attrs);
          list.set("graph.shard", shard);
          attrs = list.getDictionary(ctx);
        }
        argAttrs.push_back(attrs);
      }
    auto scalarF32 = RankedTensorType::get({}, f32);
    if (scaleArg) {
      types.append({scalarF32, scalarF32});
      argAttrs.push_back(
          stateAttrs("loss_scale", "loss_scale",
                     DenseElementsAttr::get(
                         scalarF32, static_cast<float>(lossScaleInit))));
      argAttrs.push_back(
          stateAttrs("loss_scale/growth_tracker", "growth_tracker", nullptr));
    }

    b.setInsertionPointAfter(*grad);
    auto step = b.create<func::FuncOp>(loc, "train_step",
                                       FunctionType::get(ctx, types, {}));
    Block *body = step.addEntryBlock();
    for (auto [i, attrs] : llvm::enumerate(argAttrs))
      step.setArgAttrs(i, attrs);

    // The forward and backward graph, cloned.
    IRMapping map;
    unsigned next = 0;
    for (unsigned i : batchArgs)
      map.map(grad->getArgument(i), step.getArgument(next++));
    BlockArgument stepArg = step.getArgument(next++);
    BlockArgument totalArg = step.getArgument(next++);
    SmallVector<Param> params;
    for (auto [i, name] : llvm::zip(paramArgs, paramNames)) {
      Param p;
      p.name = name;
      p.split = splitOf(i);
      p.chunked = bool(chunkOf(i));
      p.arg = step.getArgument(next++);
      map.map(grad->getArgument(i), p.arg);
      params.push_back(p);
    }
    for (const std::string &kind : kinds)
      for (Param &p : params)
        p.slots.push_back({kind, step.getArgument(next++)});
    BlockArgument scale, tracker;
    scaled = scaleArg.has_value();
    if (scaleArg) {
      scale = step.getArgument(next++);
      tracker = step.getArgument(next++);
      map.map(grad->getArgument(*scaleArg), scale);
    }
    b.setInsertionPointToStart(body);
    for (unsigned i = 0; i < grad->getNumArguments(); ++i) {
      auto param = grad->getArgAttrOfType<StringAttr>(i, "graph.param");
      if (!param || gradResult.count(param.getValue()))
        continue;
      auto init =
          grad->getArgAttrOfType<ElementsAttr>(i, "graph.initial_value");
      if (!init)
        return grad->emitError("loom-optimizer: frozen parameter '")
               << param.getValue()
               << "' has no initial value (graph.initial_value)";
      if (splitOf(i))
        return grad->emitError("loom-optimizer: frozen parameter '")
               << param.getValue() << "' is split (graph.shard): only "
               << "trained parameters are";
      map.map(grad->getArgument(i),
              b.create<ConstantOp>(grad->getArgument(i).getLoc(), init));
    }
    if (rngArg) {
      auto one = RankedTensorType::get({1}, b.getI64Type());
      Value zero = b.create<ConstantOp>(
          loc,
          DenseElementsAttr::get(one, b.getIntegerAttr(b.getI64Type(), 0)));
      Value step1 =
          b.create<ReshapeOp>(loc, one, stepArg, b.getDenseI64ArrayAttr({1}));
      map.map(grad->getArgument(*rngArg),
              b.create<ConcatOp>(loc, ValueRange{zero, step1},
                                 b.getI64IntegerAttr(0)));
    }
    // Training dropout draws a new mask every micro-step: each
    // graph.dropout {training} of the step (the forward's, its VJP's and
    // recomputation's clones alike) becomes a graph.random_dropout of the
    // step counter, so the ones of one step share their mask.
    Value zeroKey;
    for (Operation &op : grad->getBody().front().without_terminator()) {
      auto d = dyn_cast<DropoutOp>(op);
      if (!d || !d.getTraining() || d.getRatio().convertToDouble() == 0) {
        b.clone(op, map);
        continue;
      }
      if (!zeroKey)
        zeroKey = b.create<ConstantOp>(
            loc, DenseElementsAttr::get(scalarI64,
                                        b.getIntegerAttr(b.getI64Type(), 0)));
      map.map(d.getResult(),
              b.create<RandomDropoutOp>(
                  d.getLoc(), d.getType(), map.lookupOrDefault(d.getX()),
                  zeroKey, stepArg, d.getRatioAttr(), d.getSeedAttr()));
    }
    Value loss = map.lookup(ret.getOperand(0));
    for (Param &p : params) {
      unsigned r = gradResult[p.name];
      p.grad = map.lookup(ret.getOperand(r));
      p.shard = grad->getResultAttrOfType<DictionaryAttr>(r, "graph.shard");
      if (p.chunked && (!p.shard || p.grad.getType() != p.arg.getType()))
        return grad->emitError("loom-optimizer: parameter '")
               << p.name << "' is a chunk over 'data' (ZeRO-3) but its "
               << "gradient is not the same chunk";
      if (p.shard) {
        p.numel = cast<RankedTensorType>(p.arg.getType()).getNumElements();
        if (p.chunked) {
          p.numel = 1;
          for (int64_t d :
               p.shard.getAs<DenseI64ArrayAttr>("shape").asArrayRef())
            p.numel *= d;
        }
        p.chunk = cast<RankedTensorType>(p.grad.getType()).getNumElements();
      }
    }
    // Tensor parallel: the axis the split parameters are cut over.
    std::optional<sharding::MeshAxis> tensorAxis;
    for (Param &p : params) {
      if (!p.split)
        continue;
      if (p.shard)
        return grad->emitError("loom-optimizer: parameter '")
               << p.name << "' is split over 'tensor' and its gradient "
               << "sharded by ZeRO: not supported together";
      auto axisName = p.split.getAs<StringAttr>("axis");
      tensorAxis = axisName ? sharding::findAxis(module, axisName.getValue())
                            : std::nullopt;
      if (!tensorAxis)
        return grad->emitError("loom-optimizer: parameter '")
               << p.name << "' is split (graph.shard) over an axis the "
               << "module's mesh does not have";
    }
    // Pipeline parallel: the axis whose ranks hold other parameters.
    std::optional<sharding::MeshAxis> normOver;
    if (!normAxis.empty()) {
      normOver = sharding::findAxis(module, normAxis);
      if (!normOver)
        return grad->emitError("loom-optimizer: norm-axis '")
               << normAxis << "' is not an axis of the module's mesh";
    }
    // ZeRO: the data axis the shards are cut over.
    std::optional<sharding::MeshAxis> dataAxis;
    if (llvm::any_of(params, [](const Param &p) { return bool(p.shard); })) {
      dataAxis = sharding::findAxis(module, "data");
      if (!dataAxis)
        return grad->emitError("loom-optimizer: sharded gradients "
                               "(graph.shard) but no mesh with a 'data' "
                               "axis (run --loom-data-parallel)");
    }

    // The optimizer's ops say so in fusion reports and profiles.
    loc = NameLoc::get(b.getStringAttr("optimizer"));
    training::Scalars s(b, loc, f32);
    if (lossType.getRank() != 0)
      loss = b.create<ReshapeOp>(loc, loss, ArrayRef<int64_t>{});
    if (lossType.getElementType() != f32)
      loss = b.create<CastOp>(loc, loss, f32);

    // Micro-step -> optimizer step s and whether this call applies.
    Value k = s.intConst(accumulate);
    Value optStep = stepArg, apply;
    if (accumulate > 1) {
      optStep = s.div(stepArg, k);
      apply = b.create<CompareOp>(
          loc, CompareDirection::eq,
          b.create<ModOp>(loc, s.add(stepArg, s.intConst(1)), k).getResult(),
          s.intConst(0));
    }
    Value sf = b.create<CastOp>(loc, optStep, f32);

    // The learning rate.
    Value factor = s.constant(1.0);
    if (schedule == "cosine") {
      Value w = s.constant((double)warmup);
      Value span = b.create<MaxOp>(
          loc, s.sub(b.create<CastOp>(loc, totalArg, f32), w), s.constant(1.0));
      Value progress =
          b.create<ClampOp>(loc, s.div(s.sub(sf, w), span),
                            b.getF64FloatAttr(0.0), b.getF64FloatAttr(1.0));
      factor =
          s.mul(s.add(b.create<CosOp>(loc, s.mul(progress, M_PI)), 1.0), 0.5);
    }
    if (warmup > 0) {
      Value warm = s.mul(s.add(sf, 1.0), 1.0 / (double)warmup);
      Value inWarmup = b.create<CompareOp>(loc, CompareDirection::lt, sf,
                                           s.constant((double)warmup));
      factor = b.create<WhereOp>(loc, inWarmup, warm, factor);
    }
    Value lrNow = s.mul(factor, (double)lr);

    // Unscale (the backward ran on loss * scale), accumulate, then the
    // mean gradient of the optimizer step.
    Value invScale = scale ? s.div(s.constant(1.0), scale) : Value();
    SmallVector<Value> grads, nextAccum;
    for (Param &p : params) {
      Value g = invScale ? s.mul(p.grad, invScale) : p.grad;
      if (accumulate > 1) {
        Value acc = s.add(p.slot("grad_accum"), g);
        nextAccum.push_back(acc);
        g = s.mul(acc, 1.0 / (double)accumulate);
      }
      grads.push_back(g);
    }
    // Global norm and clipping.
    Value sumSq = s.constant(0.0), shardSumSq, splitSumSq;
    if (fusedNorm) {
      // One op per group of gradients (replicated, ZeRO shards, tensor-
      // parallel splits): one pass over each group's tensors.
      SmallVector<Value> plain, shard, split;
      for (auto [p, g] : llvm::zip(params, grads))
        (p.shard ? shard : p.split ? split : plain).push_back(g);
      auto sumSquares = [&](ArrayRef<Value> group) -> Value {
        if (group.empty())
          return Value();
        return b.create<SumSquaresOp>(loc, group);
      };
      if (Value v = sumSquares(plain))
        sumSq = v;
      shardSumSq = sumSquares(shard);
      splitSumSq = sumSquares(split);
    }
    for (auto [p, g] : llvm::zip(params, grads)) {
      if (fusedNorm)
        break;
      auto t = cast<RankedTensorType>(g.getType());
      Value sq = s.mul(g, g);
      if (t.getRank() > 0) {
        SmallVector<int64_t> all;
        for (int64_t i = 0; i < t.getRank(); ++i)
          all.push_back(i);
        sq = b.create<ReduceSumOp>(loc, sq, all, false);
      }
      if (p.shard)
        shardSumSq = shardSumSq ? s.add(shardSumSq, sq) : sq;
      else if (p.split)
        splitSumSq = splitSumSq ? s.add(splitSumSq, sq) : sq;
      else
        sumSq = s.add(sumSq, sq);
    }
    // ZeRO: each rank holds disjoint chunks (the padding is zeros), so the
    // global sum of squares is the sum over the data axis.
    if (shardSumSq)
      sumSq = s.add(sumSq, sharding::allReduce(b, loc, *dataAxis, shardSumSq));
    // Tensor parallel: the split parameters' pieces are disjoint too (the
    // replicated ones are counted once, by every rank alike).
    if (splitSumSq)
      sumSq =
          s.add(sumSq, sharding::allReduce(b, loc, *tensorAxis, splitSumSq));
    if (normOver)
      sumSq = sharding::allReduce(b, loc, *normOver, sumSq);
    Value norm = b.create<SqrtOp>(loc, sumSq);
    // Loss scaling: every gradient element is finite iff the sum of squares
    // is (NaN compares false); a sum that overflows f32 counts as not.
    // Without loss scaling, a step whose gradients are not finite leaves
    // every state as it was (the accumulators too): the runtime may update
    // the state in place, so it cannot drop such a step's results. The
    // norm is global, so every data-parallel rank decides alike.
    Value finite = b.create<CompareOp>(loc, CompareDirection::lt, sumSq,
                                       s.constant(INFINITY));
    if (clipNorm > 0) {
      Value coef = b.create<MinOp>(
          loc, s.div(s.constant((double)clipNorm), s.add(norm, 1e-6)),
          s.constant(1.0));
      for (Value &g : grads)
        g = s.mul(g, coef);
    }

    // The update.
    double wd = decay();
    Value t = s.add(sf, 1.0); // Adam's step count, from 1
    Value stepSize, bc2Sqrt;
    if (optimizer != "sgd") {
      Value bc1 = s.sub(s.constant(1.0),
                        b.create<PowOp>(loc, s.constant((double)beta1), t));
      Value bc2 = s.sub(s.constant(1.0),
                        b.create<PowOp>(loc, s.constant((double)beta2), t));
      stepSize = s.div(lrNow, bc1);
      bc2Sqrt = b.create<SqrtOp>(loc, bc2);
    }
    SmallVector<Value> results{loss, norm, lrNow};
    SmallVector<StringRef> outputs{"loss", "grad_norm", "lr"};
    if (scale) {
      results.push_back(scale);
      outputs.push_back("loss_scale");
    }
    SmallVector<Attribute> resultAttrs;
    for (StringRef n : outputs)
      resultAttrs.push_back(
          b.getDictionaryAttr({named("graph.output", b.getStringAttr(n))}));
    llvm::StringMap<SmallVector<Value>> nextSlots;
    SmallVector<Value> nextParams;
    // On non-finite gradients a slot keeps its value, gated where it is
    // computed: its one kernel writes the gated value, which the
    // parameter's update then reads (gated after the update, the ungated
    // value would be a second buffer live until the gate).
    auto gateSlot = [&](Value next, Value old) -> Value {
      return b.create<WhereOp>(loc, finite, next, old);
    };
    for (auto [p, g] : llvm::zip(params, grads)) {
      Location ploc = NameLoc::get(b.getStringAttr("optimizer/" + p.name));
      training::Scalars s(b, ploc, f32);
      Value w = p.shard ? shardOf(b, ploc, *dataAxis, p) : Value(p.arg);
      Value next;
      if (optimizer == "sgd") {
        Value d = wd != 0 ? s.add(g, s.mul(w, wd)) : g;
        if (momentum != 0) {
          Value buf =
              gateSlot(s.add(s.mul(p.slot("momentum"), (double)momentum), d),
                       p.slot("momentum"));
          nextSlots["momentum"].push_back(buf);
          d = nesterov ? s.add(d, s.mul(buf, (double)momentum)) : buf;
        }
        next = s.sub(w, s.mul(d, lrNow));
      } else {
        if (optimizer == "adamw" && wd != 0)
          w = s.mul(w, s.sub(s.constant(1.0), s.mul(lrNow, wd)));
        else if (wd != 0)
          g = s.add(g, s.mul(w, wd));
        Value m = gateSlot(s.add(s.mul(p.slot("exp_avg"), (double)beta1),
                                 s.mul(g, 1.0 - beta1)),
                           p.slot("exp_avg"));
        Value v = gateSlot(s.add(s.mul(p.slot("exp_avg_sq"), (double)beta2),
                                 s.mul(s.mul(g, g), 1.0 - beta2)),
                           p.slot("exp_avg_sq"));
        nextSlots["exp_avg"].push_back(m);
        nextSlots["exp_avg_sq"].push_back(v);
        Value denom =
            s.add(s.div(b.create<SqrtOp>(ploc, v), bc2Sqrt), (double)eps);
        next = s.sub(w, s.mul(s.div(m, denom), stepSize));
      }
      // ZeRO-3 keeps the chunk: the next step gathers it where it is used.
      nextParams.push_back(
          p.shard && !p.chunked ? unshard(b, ploc, *dataAxis, p, next) : next);
    }
    // Parameters and slots (not the accumulators) keep their values where
    // `cond` is false.
    auto gateUpdates = [&](Value cond, bool slots = true) {
      auto gate = [&](Value updated, Value old) -> Value {
        return b.create<WhereOp>(loc, cond, updated, old);
      };
      for (size_t i = 0; i < params.size(); ++i)
        nextParams[i] = gate(nextParams[i], params[i].arg);
      if (!slots)
        return;
      for (const std::string &kind : kinds) {
        if (kind == "grad_accum")
          continue;
        SmallVector<Value> &values = nextSlots[kind];
        for (size_t i = 0; i < params.size(); ++i)
          values[i] = gate(values[i], params[i].slot(kind));
      }
    };
    if (accumulate > 1) {
      // Between optimizer steps only the accumulators move.
      gateUpdates(apply);
      for (Value &acc : nextAccum)
        acc = b.create<WhereOp>(
            loc, apply, b.create<FillLikeOp>(loc, acc, b.getF32FloatAttr(0.0)),
            acc);
      nextSlots["grad_accum"] = nextAccum;
    }
    SmallVector<Value> nextScaling;
    // Non-finite gradients: the update is skipped (the slots are gated
    // where computed). With loss scaling the gradient accumulators still
    // restart; without, they keep their values too.
    gateUpdates(finite, /*slots=*/false);
    if (scale)
      nextScaling = updateLossScale(b, loc, s, scale, tracker, finite, apply);
    else if (accumulate > 1)
      for (auto [p, acc] : llvm::zip(params, nextSlots["grad_accum"]))
        acc = b.create<WhereOp>(loc, finite, acc, p.slot("grad_accum"));
    auto emitState = [&](const Param &p, StringRef name, Value v) {
      results.push_back(v);
      resultAttrs.push_back(b.getDictionaryAttr(
          {named("graph.next_state", b.getStringAttr(name))}));
    };
    for (auto [p, v] : llvm::zip(params, nextParams))
      emitState(p, p.name, v);
    for (const std::string &kind : kinds)
      for (auto [p, v] : llvm::zip(params, nextSlots[kind]))
        emitState(p, p.name + "/" + kind, v);
    if (scale) {
      Param none;
      emitState(none, "loss_scale", nextScaling[0]);
      emitState(none, "loss_scale/growth_tracker", nextScaling[1]);
    }
    b.create<func::ReturnOp>(loc, results);
    SmallVector<Type> resultTypes;
    for (Value v : results)
      resultTypes.push_back(v.getType());
    step.setFunctionType(FunctionType::get(ctx, types, resultTypes));
    step.setAllResultAttrs(resultAttrs);
    step->setAttr("loom.training",
                  b.getDictionaryAttr(
                      {named("accumulate", b.getI64IntegerAttr(accumulate)),
                       named("total_steps", b.getI64IntegerAttr(totalSteps)),
                       named("description", b.getStringAttr(describe())),
                       named("labels", b.getStringAttr(labels))}));
    grad->erase();
    return success();
  }
};

} // namespace
