//===- PipelineParts.cpp - each stage's forward, backward and update ------===//
//
// `--loom-pipeline-parts`: for each stage function, its backward is built
// with the autodiff's VJP rules, seeded by the gradients of what the
// stage sends (or by the micro-batch's loss weight), and the ops are cut
// into the forward (F), the input gradients (I) and the weight gradients
// (W); values one part hands the next become named outputs and inputs
// (common/schema/loom_artifact.proto, message Pipeline). Then each
// pipeline rank gets the gradient function its optimizer step is built
// from. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/Autodiff/Vjp.h"
#include "passes/Pipeline/Passes.h"
#include "passes/Pipeline/PipelineUtils.h"
#include "passes/Recompute/Passes.h"
#include "passes/Sharding/ShardingUtils.h"

#include "dialects/graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"

#include <map>

namespace loom {
#define GEN_PASS_DEF_PIPELINEPARTSPASS
#include "passes/Pipeline/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using namespace loom::pipeline;

namespace {

constexpr StringLiteral kForwardTag = "loom.pipeline.forward";
constexpr StringLiteral kDoutAttr = "loom.pipeline.dout";
constexpr StringLiteral kLossWeightAttr = "loom.pipeline.loss_weight";
constexpr StringLiteral kLossScaleAttr = "loom.pipeline.loss_scale";
/// What --loom-recompute marks its clones with (passes/Recompute).
constexpr StringLiteral kRecomputeAttr = "loom.recompute";

bool isFloatTensor(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  return tensor && isa<FloatType>(tensor.getElementType());
}

/// A trained parameter of a stage, for its rank's update.
struct Param {
  std::string name;
  Type type;
  DictionaryAttr attrs; ///< graph.param, graph.initial_value
  Location loc;
};

/// The ops and inputs one part needs.
struct Part {
  llvm::SetVector<Value> inputs;
  llvm::DenseSet<Operation *> ops;
};

struct PipelinePartsPass
    : loom::impl::PipelinePartsPassBase<PipelinePartsPass> {
  using PipelinePartsPassBase::PipelinePartsPassBase;

  void runOnOperation() override {
    if (failed(run()))
      signalPassFailure();
  }

  LogicalResult run() {
    ModuleOp module = getOperation();
    std::map<int64_t, func::FuncOp> stages;
    for (auto f : module.getOps<func::FuncOp>())
      if (auto k = f->getAttrOfType<IntegerAttr>(kStageAttr))
        stages[k.getInt()] = f;
    int64_t n = static_cast<int64_t>(stages.size());
    if (n == 0)
      return module.emitError("loom-pipeline-parts: no stage function (run "
                              "--loom-pipeline-stages first)");
    if (!recompute.empty() && recompute != "none" && recompute != "all" &&
        recompute != "sqrt")
      return module.emitError("loom-pipeline-parts: recompute takes none, "
                              "all or sqrt inside stages, not '")
             << recompute
             << "' (optimal's budget is the whole step's peak; a pipeline "
                "budgets each rank's saved activations with --memory-budget)";
    if (ranks < 1 || dataRanks < 1 || n % ranks)
      return module.emitError("loom-pipeline-parts: ")
             << n << " stages do not go evenly on " << ranks
             << " ranks (and data-ranks must be >= 1)";
    for (int64_t k = 0; k < n; ++k)
      if (!stages.count(k))
        return module.emitError("loom-pipeline-parts: stage ")
               << k << " is missing";
    if (ranks * dataRanks > 1) {
      // After --loom-tensor-parallel's [data, tensor] (its data axis only
      // with replicas): the pipe axis last, so that the ranks of a stage
      // are (d T + t) S + p as the runtime lays them out.
      bool tensor = sharding::findAxis(module, "tensor").has_value();
      for (auto [axis, size] :
           {std::pair<StringRef, int64_t>{"data", dataRanks}, {"pipe", ranks}})
        if ((axis != "data" || !tensor || dataRanks > 1) &&
            failed(sharding::getOrCreateAxis(module, axis, size,
                                             "loom-pipeline-parts")))
          return failure();
    }
    SmallVector<SmallVector<Param>> owned(n);
    for (auto [k, f] : stages) {
      if (failed(buildParts(module, f, k, k == n - 1, owned[k])))
        return failure();
      f.erase();
    }
    for (int64_t r = 0; r < ranks; ++r) {
      SmallVector<Param> params;
      for (int64_t k = r; k < n; k += ranks)
        params.append(owned[k].begin(), owned[k].end());
      if (failed(buildUpdate(module, r, params)))
        return failure();
    }
    return success();
  }

  /// The F, I and W functions of stage function `stage`.
  LogicalResult buildParts(ModuleOp module, func::FuncOp stage, int64_t k,
                           bool last, SmallVector<Param> &owned) {
    OpBuilder b(stage);
    b.setInsertionPointAfter(stage);
    auto work = cast<func::FuncOp>(b.clone(*stage));
    std::string base = stage.getName().str();
    work.setName(base + "_work");
    Block &body = work.getBody().front();
    for (Operation &op : body.without_terminator())
      op.setAttr(kForwardTag, b.getUnitAttr());
    auto ret = cast<func::ReturnOp>(body.getTerminator());

    // The seeds: the gradients of the sent values (new arguments), or the
    // loss weight.
    SmallVector<std::pair<Value, Value>> seeds;
    SmallVector<BlockArgument> douts;
    auto addArg = [&](Type type, NamedAttribute attr) {
      unsigned i = work.getNumArguments();
      work.insertArgument(i, type, b.getDictionaryAttr({attr}), work.getLoc());
      return work.getArgument(i);
    };
    OpBuilder bb(ret);
    if (!last) {
      for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
        if (!isFloatTensor(v.getType()))
          continue;
        BlockArgument d = addArg(
            v.getType(), b.getNamedAttr(kDoutAttr, b.getI64IntegerAttr(i)));
        douts.push_back(d);
        seeds.push_back({v, d});
      }
    } else {
      Value loss = ret.getOperand(0);
      auto lossType = cast<RankedTensorType>(loss.getType());
      if (!isa<FloatType>(lossType.getElementType()))
        return stage.emitError("loom-pipeline-parts: the loss is not a float");
      Value w = addArg(RankedTensorType::get({}, b.getF32Type()),
                       b.getNamedAttr(kLossWeightAttr, b.getUnitAttr()));
      // f16: the backward of loss * scale, as --loom-autodiff loss-scale
      // seeds it; the updates unscale.
      if (lossScale)
        w = bb.create<graph::MulOp>(
            loss.getLoc(), w,
            addArg(RankedTensorType::get({}, b.getF32Type()),
                   b.getNamedAttr(kLossScaleAttr, b.getUnitAttr())));
      if (lossType.getElementType() != b.getF32Type())
        w = bb.create<graph::CastOp>(loss.getLoc(), w,
                                     lossType.getElementType());
      if (lossType.getRank() != 0)
        w = bb.create<graph::ReshapeOp>(loss.getLoc(), w, lossType.getShape());
      seeds.push_back({loss, w});
    }

    // Differentiate with respect to the received floats and the
    // parameters.
    SmallVector<BlockArgument> wrtIn, wrtParams;
    for (BlockArgument arg : work.getArguments()) {
      if (!isFloatTensor(arg.getType()))
        continue;
      unsigned i = arg.getArgNumber();
      if (work.getArgAttr(i, kInAttr))
        wrtIn.push_back(arg);
      else if (work.getArgAttr(i, "graph.param"))
        wrtParams.push_back(arg);
    }
    SmallVector<BlockArgument> wrt(wrtIn);
    wrt.append(wrtParams);
    FailureOr<SmallVector<Value>> grads =
        autodiff::buildVjp(work, seeds, wrt, bb);
    if (failed(grads)) {
      work.erase();
      return failure();
    }
    bb.setInsertionPoint(ret);
    for (auto [arg, g] : llvm::zip(wrt, *grads))
      if (!g)
        g = bb.create<graph::FillLikeOp>(
            arg.getLoc(), arg,
            b.getFloatAttr(getElementTypeOrSelf(arg.getType()), 0.0));
    SmallVector<Value> dins(grads->begin(), grads->begin() + wrtIn.size());
    SmallVector<Value> paramGrads(grads->begin() + wrtIn.size(), grads->end());
    if (!recompute.empty() && recompute != "none") {
      SmallVector<Value> roots(dins);
      roots.append(paramGrads);
      if (failed(recomputeInStage(module, work, ret, roots, last))) {
        work.erase();
        return failure();
      }
    }

    // Which ops are the forward's, which may be copied anywhere, and
    // their order.
    llvm::DenseSet<Operation *> forward;
    llvm::DenseSet<Value> copyable;
    llvm::DenseMap<Operation *, unsigned> order;
    for (BlockArgument arg : work.getArguments())
      if (work.getArgAttr(arg.getArgNumber(), "graph.param"))
        copyable.insert(arg);
    for (Operation &op : body.without_terminator()) {
      order[&op] = order.size();
      if (op.hasAttr(kForwardTag))
        forward.insert(&op);
      op.removeAttr(kForwardTag);
      if (isCopyable(&op, copyable))
        copyable.insert(op.result_begin(), op.result_end());
    }
    auto isCopy = [&](Operation *op) {
      return llvm::all_of(op->getResults(),
                          [&](Value r) { return copyable.contains(r); });
    };
    auto collect = [&](ArrayRef<Value> roots,
                       function_ref<bool(Operation *)> allowed) {
      Part part;
      SmallVector<Value> todo(roots.begin(), roots.end());
      llvm::DenseSet<Value> seen;
      while (!todo.empty()) {
        Value v = todo.pop_back_val();
        if (!seen.insert(v).second)
          continue;
        Operation *def = v.getDefiningOp();
        if (!def || !(isCopy(def) || allowed(def))) {
          part.inputs.insert(v);
          continue;
        }
        if (part.ops.insert(def).second)
          todo.append(def->operand_begin(), def->operand_end());
      }
      return part;
    };
    auto isBackward = [&](Operation *op) { return !forward.contains(op); };
    Part input;
    bool hasInput = !dins.empty();
    if (hasInput)
      input = collect(dins, isBackward);
    Part weight = collect(paramGrads, [&](Operation *op) {
      return isBackward(op) && !input.ops.contains(op);
    });
    // Values the forward hands the backward, and I hands W, in program
    // order.
    auto byOrder = [&](llvm::SetVector<Value> values,
                       function_ref<bool(Operation *)> from) {
      SmallVector<Value> out;
      for (Value v : values)
        if (Operation *def = v.getDefiningOp(); def && from(def))
          out.push_back(v);
      llvm::sort(out, [&](Value a, Value c) {
        Operation *x = a.getDefiningOp(), *y = c.getDefiningOp();
        if (x != y)
          return order[x] < order[y];
        return cast<OpResult>(a).getResultNumber() <
               cast<OpResult>(c).getResultNumber();
      });
      out.erase(std::unique(out.begin(), out.end()), out.end());
      return out;
    };
    llvm::SetVector<Value> backwardInputs = input.inputs;
    backwardInputs.insert(weight.inputs.begin(), weight.inputs.end());
    SmallVector<Value> saved = byOrder(
        backwardInputs, [&](Operation *op) { return forward.contains(op); });
    SmallVector<Value> inter = byOrder(
        weight.inputs, [&](Operation *op) { return input.ops.contains(op); });
    SmallVector<Value> fRoots(ret.getOperands());
    fRoots.append(saved);
    Part fwd =
        collect(fRoots, [&](Operation *op) { return forward.contains(op); });

    // Names of the values that cross from one part to another.
    llvm::DenseMap<Value, std::string> names;
    for (BlockArgument arg : work.getArguments()) {
      unsigned i = arg.getArgNumber();
      if (auto in = work.getArgAttrOfType<IntegerAttr>(i, kInAttr))
        names[arg] = "in:" + std::to_string(in.getInt());
      else if (auto d = work.getArgAttrOfType<IntegerAttr>(i, kDoutAttr))
        names[arg] = "dout:" + std::to_string(d.getInt());
      else if (work.getArgAttr(i, kLossWeightAttr))
        names[arg] = "loss_weight";
      else if (work.getArgAttr(i, kLossScaleAttr))
        names[arg] = "param:loss_scale"; // the last rank's update state
      else if (auto p = work.getArgAttrOfType<StringAttr>(i, "graph.param"))
        names[arg] = "param:" + p.str();
      else if (auto in = work.getArgAttrOfType<StringAttr>(i, "graph.input"))
        names[arg] = "batch:" + in.str();
      else
        return stage.emitError("loom-pipeline-parts: argument ")
               << i << " has no role";
    }
    int64_t savedBytes = 0;
    for (auto [i, v] : llvm::enumerate(saved)) {
      names[v] = "saved:" + std::to_string(i);
      savedBytes += valueBytes(v);
    }
    for (BlockArgument arg : wrtIn)
      savedBytes += valueBytes(arg);
    for (auto [i, v] : llvm::enumerate(inter))
      names[v] = "inter:" + std::to_string(i);

    // The forward.
    SmallVector<std::pair<Value, std::string>> fOut;
    for (auto [i, v] : llvm::enumerate(ret.getOperands()))
      fOut.push_back({v, last ? "loss" : "out:" + std::to_string(i)});
    for (Value v : saved)
      fOut.push_back({v, names[v]});
    func::FuncOp f = emit(b, base + "_F", work, fwd, {}, fOut, names, {});
    f->setAttr(kPartAttr, b.getStringAttr("F"));
    f->setAttr(kSavedBytesAttr, b.getI64IntegerAttr(savedBytes));
    for (StringRef attr : {kFlopsAttr.data(), kDescriptionAttr.data(),
                           kParamsAttr.data(), kSentBytesAttr.data()})
      if (Attribute a = stage->getAttr(attr))
        f->setAttr(attr, a);
    f->setAttr(kStageAttr, b.getI64IntegerAttr(k));
    // The input gradients: every dout is an input, so that the runtime
    // receives each gradient the next stage sends.
    if (hasInput) {
      SmallVector<std::pair<Value, std::string>> iOut;
      for (auto [arg, g] : llvm::zip(wrtIn, dins))
        iOut.push_back({g, "d" + names[arg]}); // "in:i" -> "din:i"
      for (Value v : inter)
        iOut.push_back({v, names[v]});
      SmallVector<Value> extra(douts.begin(), douts.end());
      func::FuncOp i =
          emit(b, base + "_I", work, input, extra, iOut, names, {});
      i->setAttr(kPartAttr, b.getStringAttr("I"));
      i->setAttr(kStageAttr, b.getI64IntegerAttr(k));
    }
    // The weight gradients, summed into acc:N.
    if (!paramGrads.empty()) {
      SmallVector<std::pair<Value, std::string>> wOut;
      for (auto [arg, g] : llvm::zip(wrtParams, paramGrads)) {
        std::string name =
            work.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "graph.param")
                .str();
        wOut.push_back({g, "acc:" + name});
        owned.push_back({name, arg.getType(),
                         work.getArgAttrDict(arg.getArgNumber()),
                         arg.getLoc()});
      }
      SmallVector<Value> extra;
      if (!hasInput)
        extra.assign(douts.begin(), douts.end());
      func::FuncOp w =
          emit(b, base + "_W", work, weight, extra, wOut, names, wOut);
      w->setAttr(kPartAttr, b.getStringAttr("W"));
      w->setAttr(kStageAttr, b.getI64IntegerAttr(k));
    } else if (!hasInput && !douts.empty()) {
      return stage.emitError("loom-pipeline-parts: stage ")
             << k << " trains nothing (no trained parameter, no received "
             << "activation): move its boundary past the frozen layers";
    }
    work.erase();
    return success();
  }

  /// `--loom-recompute` (strategy `recompute`) on stage function `work`,
  /// which holds the forward (ops tagged kForwardTag) and, after it, the
  /// backward making `grads`. The pass takes the ancestors of a result
  /// marked "loss" as the forward: the last stage's loss, or else the sum
  /// of what the stage sends (reduced, as f32), which is made for the pass
  /// and removed after it. Its clones become backward ops, so that the I
  /// and W parts recompute them from the stage's inputs instead of F saving
  /// the values.
  LogicalResult recomputeInStage(ModuleOp module, func::FuncOp work,
                                 func::ReturnOp ret, ArrayRef<Value> grads,
                                 bool last) {
    if (ret.getNumOperands() == 0)
      return success(); // nothing sent: no forward the backward reads
    Block &body = work.getBody().front();
    MLIRContext *ctx = &getContext();
    // The stage's dead forward ops would look like backward ops to it.
    llvm::DenseSet<Value> keep(grads.begin(), grads.end());
    for (bool erased = true; erased;) {
      erased = false;
      for (Operation &op :
           llvm::make_early_inc_range(llvm::reverse(body.without_terminator())))
        if (op.hasAttr(kForwardTag) && op.use_empty() &&
            isMemoryEffectFree(&op) &&
            llvm::none_of(op.getResults(),
                          [&](Value r) { return keep.contains(r); })) {
          op.erase();
          erased = true;
        }
    }
    OpBuilder b(ret);
    Location loc = work.getLoc();
    Type f32 = b.getF32Type();
    SmallVector<Operation *> made;
    Value loss;
    if (last) {
      loss = ret.getOperand(0);
    } else {
      for (Value v : ret.getOperands()) {
        auto t = cast<RankedTensorType>(v.getType());
        Value x = v;
        if (t.getElementType() != f32) {
          x = b.create<graph::CastOp>(loc, x, f32);
          made.push_back(x.getDefiningOp());
        }
        if (t.getRank() > 0) {
          SmallVector<int64_t> all;
          for (int64_t d = 0; d < t.getRank(); ++d)
            all.push_back(d);
          x = b.create<graph::ReduceSumOp>(loc, x, all, false);
          made.push_back(x.getDefiningOp());
        }
        if (loss) {
          loss = b.create<graph::AddOp>(loc, loss, x);
          made.push_back(loss.getDefiningOp());
        } else {
          loss = x;
        }
      }
    }
    // The joint function the pass expects: (loss, gradients...).
    SmallVector<Value> sent(ret.getOperands());
    FunctionType type = work.getFunctionType();
    SmallVector<DictionaryAttr> resultAttrs;
    for (unsigned i = 0; i < work.getNumResults(); ++i)
      resultAttrs.push_back(work.getResultAttrDict(i));
    SmallVector<Value> results{loss};
    results.append(grads.begin(), grads.end());
    SmallVector<Type> types;
    for (Value v : results)
      types.push_back(v.getType());
    SmallVector<DictionaryAttr> jointAttrs(results.size(),
                                           b.getDictionaryAttr({}));
    jointAttrs[0] = b.getDictionaryAttr(
        {b.getNamedAttr("graph.output", b.getStringAttr("loss"))});
    ret->setOperands(results);
    work.setType(FunctionType::get(ctx, type.getInputs(), types));
    work.setAllResultAttrs(jointAttrs);
    // Received activations are batch-dependent (its cut candidates).
    SmallVector<unsigned> marked;
    for (unsigned i = 0; i < work.getNumArguments(); ++i)
      if (work.getArgAttr(i, kInAttr) && !work.getArgAttr(i, "graph.input")) {
        work.setArgAttr(i, "graph.input", b.getStringAttr("in"));
        marked.push_back(i);
      }

    RecomputePassOptions options;
    options.funcName = work.getName().str();
    options.strategy = recompute;
    options.targetPasses = targetPasses;
    options.summary = summary;
    OpPassManager pm(ModuleOp::getOperationName());
    pm.addPass(createRecomputePass(options, nullptr));
    LogicalResult done = runPipeline(pm, module);

    // Back to the stage's own signature.
    ret->setOperands(sent);
    work.setType(type);
    work.setAllResultAttrs(resultAttrs);
    for (unsigned i : marked)
      work.removeArgAttr(i, "graph.input");
    for (Operation *op : llvm::reverse(made))
      op->erase();
    if (failed(done))
      return failure();
    for (Operation &op : body.without_terminator())
      if (op.hasAttr(kRecomputeAttr))
        op.removeAttr(kForwardTag);
    // A forward op reading a clone would make F wait for its backward.
    for (Operation &op : body.without_terminator())
      if (op.hasAttr(kForwardTag))
        for (Value v : op.getOperands())
          if (Operation *def = v.getDefiningOp();
              def && def->hasAttr(kRecomputeAttr))
            return op.emitError("loom-pipeline-parts: internal error: a "
                                "forward op reads a recomputed value");
    return success();
  }

  /// A function of the `part` ops of `work` (cloned in program order)
  /// taking its inputs (and `extra`) by their names and returning
  /// `outputs`. With `accumulate`, each of those outputs is added to a
  /// new input of the same name.
  func::FuncOp emit(OpBuilder &b, const std::string &name, func::FuncOp work,
                    const Part &part, ArrayRef<Value> extra,
                    ArrayRef<std::pair<Value, std::string>> outputs,
                    const llvm::DenseMap<Value, std::string> &names,
                    ArrayRef<std::pair<Value, std::string>> accumulate) {
    MLIRContext *ctx = b.getContext();
    llvm::SetVector<Value> inputs;
    // Arguments first (in order), then the parts' values (in order).
    for (BlockArgument arg : work.getArguments())
      if (part.inputs.contains(arg) || llvm::is_contained(extra, arg))
        inputs.insert(arg);
    for (Value v : part.inputs)
      if (!isa<BlockArgument>(v))
        inputs.insert(v);
    SmallVector<Type> argTypes;
    SmallVector<DictionaryAttr> argAttrs;
    auto named = [&](StringRef n) {
      return b.getDictionaryAttr(
          {b.getNamedAttr("graph.input", b.getStringAttr(n))});
    };
    for (Value v : inputs) {
      argTypes.push_back(v.getType());
      argAttrs.push_back(named(names.lookup(v)));
    }
    for (auto &[v, n] : accumulate) {
      argTypes.push_back(v.getType());
      argAttrs.push_back(named(n));
    }
    SmallVector<Type> resultTypes;
    SmallVector<Attribute> resultAttrs;
    for (auto &[v, n] : outputs) {
      resultTypes.push_back(v.getType());
      resultAttrs.push_back(b.getDictionaryAttr(
          {b.getNamedAttr("graph.output", b.getStringAttr(n))}));
    }
    auto f = b.create<func::FuncOp>(
        work.getLoc(), name, FunctionType::get(ctx, argTypes, resultTypes));
    f.setAllArgAttrs(argAttrs);
    f.setAllResultAttrs(resultAttrs);
    b.setInsertionPointAfter(f);
    Block *entry = f.addEntryBlock();
    IRMapping map;
    for (auto [i, v] : llvm::enumerate(inputs))
      map.map(v, entry->getArgument(i));
    OpBuilder fb = OpBuilder::atBlockEnd(entry);
    for (Operation &op : work.getBody().front().without_terminator())
      if (part.ops.contains(&op))
        fb.clone(op, map);
    SmallVector<Value> results;
    for (auto [i, out] : llvm::enumerate(outputs)) {
      Value v = map.lookupOrDefault(out.first);
      if (!accumulate.empty())
        v = fb.create<graph::AddOp>(out.first.getLoc(),
                                    entry->getArgument(inputs.size() + i), v);
      results.push_back(v);
    }
    fb.create<func::ReturnOp>(work.getLoc(), results);
    return f;
  }

  /// `pipeline_update_<r>(acc:N..., loss, N...) -> (loss, N.grad...)`: the
  /// gradient function of rank r's optimizer step.
  LogicalResult buildUpdate(ModuleOp module, int64_t r,
                            ArrayRef<Param> params) {
    MLIRContext *ctx = &getContext();
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    Location loc = module.getLoc();
    SmallVector<Type> argTypes;
    SmallVector<DictionaryAttr> argAttrs;
    auto input = [&](Type t, StringRef n) {
      argTypes.push_back(t);
      argAttrs.push_back(b.getDictionaryAttr(
          {b.getNamedAttr("graph.input", b.getStringAttr(n))}));
    };
    for (const Param &p : params)
      input(p.type, "acc:" + p.name);
    Type f32 = RankedTensorType::get({}, b.getF32Type());
    input(f32, "loss");
    for (const Param &p : params) {
      argTypes.push_back(p.type);
      argAttrs.push_back(p.attrs);
    }
    // f16: the last rank, whose stage seeds the backward, keeps the scale.
    bool holdsScale = lossScale && r == ranks - 1;
    if (holdsScale) {
      argTypes.push_back(f32);
      argAttrs.push_back(b.getDictionaryAttr(
          {b.getNamedAttr("graph.loss_scale", b.getUnitAttr())}));
    }
    SmallVector<Type> resultTypes{f32};
    SmallVector<Attribute> resultAttrs{b.getDictionaryAttr(
        {b.getNamedAttr("graph.output", b.getStringAttr("loss"))})};
    for (const Param &p : params) {
      resultTypes.push_back(p.type);
      resultAttrs.push_back(b.getDictionaryAttr(
          {b.getNamedAttr("graph.output", b.getStringAttr(p.name + ".grad")),
           b.getNamedAttr("graph.grad_of", b.getStringAttr(p.name))}));
    }
    auto f =
        b.create<func::FuncOp>(loc, "pipeline_update_" + std::to_string(r),
                               FunctionType::get(ctx, argTypes, resultTypes));
    f.setAllArgAttrs(argAttrs);
    f.setAllResultAttrs(resultAttrs);
    f->setAttr(kPartAttr, b.getStringAttr("update"));
    Block *entry = f.addEntryBlock();
    OpBuilder fb = OpBuilder::atBlockEnd(entry);
    // Each result made by an op (a reshape to its own shape, which
    // canonicalization removes): the passes after this one place
    // collectives after the ops that make the gradients.
    SmallVector<Value> results;
    auto passOn = [&](Value v) {
      auto t = cast<RankedTensorType>(v.getType());
      results.push_back(fb.create<graph::ReshapeOp>(loc, v, t.getShape()));
    };
    passOn(entry->getArgument(params.size()));
    Value unscale; // what the gradients are multiplied by
    if (lossScale && ranks > 1) {
      // The scale over the pipe axis: the last rank's, plus 0 from the
      // others, which unscale by it. The last rank's optimizer unscales
      // its own; it multiplies by scale / sum (exactly 1), which keeps its
      // share of the collective.
      std::optional<sharding::MeshAxis> pipe =
          sharding::findAxis(module, "pipe");
      if (!pipe)
        return module.emitError("loom-pipeline-parts: no mesh axis 'pipe'");
      Value mine;
      if (holdsScale)
        mine = entry->getArgument(entry->getNumArguments() - 1);
      else
        mine = fb.create<graph::ConstantOp>(
            loc, DenseElementsAttr::get(cast<ShapedType>(f32), 0.0f));
      Value sum = sharding::allReduce(fb, loc, *pipe, mine);
      sum.getDefiningOp()->setAttr(kLossScaleSumAttr, fb.getUnitAttr());
      if (holdsScale) {
        unscale = fb.create<graph::DivOp>(loc, mine, sum);
      } else {
        Value one = fb.create<graph::ConstantOp>(
            loc, DenseElementsAttr::get(cast<ShapedType>(f32), 1.0f));
        unscale = fb.create<graph::DivOp>(loc, one, sum);
      }
    }
    for (size_t i = 0; i < params.size(); ++i) {
      Value g = entry->getArgument(i);
      if (unscale) {
        auto t = cast<RankedTensorType>(g.getType());
        Value s = unscale;
        if (t.getElementType() != fb.getF32Type())
          s = fb.create<graph::CastOp>(loc, s, t.getElementType());
        g = fb.create<graph::MulOp>(loc, g, s);
      }
      passOn(g);
    }
    fb.create<func::ReturnOp>(loc, results);
    return success();
  }
};

} // namespace
