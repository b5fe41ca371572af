//===- MixedPrecision.cpp - autocast as a compiler pass -------------------===//
//
// `--loom-mixed-precision`: decides per op whether it runs in bf16/f16 or
// f32 (Passes.td has the rules), inserts the casts that decision needs,
// then removes all it can: one cast per value and type, no round trips
// through f32, casts moved across data movement to the side with fewer
// elements. Every remaining cast keeps the reason it was made for the
// report.
//
//===----------------------------------------------------------------------===//

#include "passes/MixedPrecision/Passes.h"
#include "passes/MixedPrecision/Precision.h"
#include "passes/PassReport.h"
#include "passes/Training/TrainingUtils.h"

#include "dialects/graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/FormatVariadic.h"

namespace loom {
#define GEN_PASS_DEF_MIXEDPRECISIONPASS
#include "passes/MixedPrecision/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using namespace loom::graph;
using precision::floatElement;
using precision::isExactIn;

namespace {

enum class Rule { Low, F32, Follow };

Rule ruleOf(Operation *op) {
  if (op->hasTrait<GraphTrait::Contraction>())
    return Rule::Low;
  // Sums and products (not max/min, which round nothing) in f32 too.
  if (op->hasTrait<GraphTrait::Normalization>() ||
      isa<ReduceSumOp, ReduceMeanOp, ReduceProdOp, CumSumOp, DynamicReduceSumOp,
          DynamicCumSumOp, GlobalAvgPoolOp, AvgPoolOp, ExpOp, LogOp, PowOp,
          SqrtOp, RsqrtOp, CrossEntropyOp, MseLossOp>(op))
    return Rule::F32;
  return Rule::Follow;
}

/// Ops that only move or select elements: a cast commutes with them.
bool isDataMovement(Operation *op) {
  return isa<ReshapeOp, TransposeOp, SqueezeOp, UnsqueezeOp, FlattenOp,
             BroadcastToOp, SliceOp, GatherOp>(op);
}

/// Ops whose float operands give only a shape, or that have none.
bool isSource(Operation *op) {
  return isa<ConstantOp, IotaOp, FillLikeOp, DynamicFillOp, CastOp>(op);
}

int64_t elements(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  return t.hasStaticShape() ? t.getNumElements() : -1;
}

/// One cast the pass made, for the report.
struct CastInfo {
  std::string reason;
};

struct Rewriter {
  mutable func::FuncOp func; // const accessors of an op handle are not const
  FloatType low, f32;
  StringRef policy;

  llvm::DenseSet<Value> weak; // parameters, constants and what only they make
  llvm::DenseMap<std::pair<Value, Type>, Value> cache;
  llvm::MapVector<Operation *, CastInfo> casts; // the pass's casts
  llvm::DenseMap<Value, Type> original;         // retyped results
  unsigned inserted = 0, removed = 0;
  unsigned lowOps = 0, followLow = 0, keptF32 = 0;

  std::string lowName() const { return report::typeString(low); }

  /// `v` as a tensor of element type `t`: one cast per value and type,
  /// right where `v` becomes available.
  Value castTo(Value v, Type t, const std::string &reason) {
    if (floatElement(v.getType()) == t)
      return v;
    auto key = std::make_pair(v, t);
    if (Value c = cache.lookup(key))
      return c;
    OpBuilder b(func.getContext());
    if (auto arg = dyn_cast<BlockArgument>(v))
      b.setInsertionPointToStart(arg.getOwner());
    else
      b.setInsertionPointAfter(v.getDefiningOp());
    Value c = b.create<CastOp>(v.getLoc(), v, t);
    cache[key] = c;
    casts[c.getDefiningOp()] = {reason};
    ++inserted;
    return c;
  }

  LogicalResult retype(Operation *op) {
    auto infer = dyn_cast<InferTypeOpInterface>(op);
    if (!infer)
      return op->emitError("loom-mixed-precision: cannot infer the result "
                           "types of ")
             << op->getName();
    SmallVector<Type> types;
    if (failed(infer.inferReturnTypes(
            op->getContext(), op->getLoc(), op->getOperands(),
            op->getAttrDictionary(), op->getPropertiesStorage(),
            op->getRegions(), types)))
      return failure();
    for (auto [r, t] : llvm::zip(op->getResults(), types))
      if (r.getType() != t) {
        if (!original.count(r))
          original[r] = r.getType();
        r.setType(t);
      }
    return success();
  }

  /// Operands whose type the pass changed get their type back (ops the
  /// pass does not rewrite, the function's results).
  void restoreOperands(Operation *op, StringRef why) {
    for (OpOperand &use : op->getOpOperands()) {
      auto it = original.find(use.get());
      if (it == original.end())
        continue;
      use.set(castTo(use.get(),
                     cast<RankedTensorType>(it->second).getElementType(),
                     why.str()));
    }
  }

  bool isWeak(Value v) const {
    if (weak.contains(v))
      return true;
    if (auto arg = dyn_cast<BlockArgument>(v))
      return bool(func.getArgAttr(arg.getArgNumber(), "graph.param"));
    return false;
  }

  LogicalResult rewriteOp(Operation *op) {
    std::string where = report::describe(op);
    if (isa<func::ReturnOp>(op)) {
      restoreOperands(op, "the function's result keeps its type");
      return success();
    }
    if (!isa<GraphDialect>(op->getDialect())) {
      restoreOperands(op, where + " is not a graph op: its operand keeps "
                                  "its type");
      return success();
    }
    // graph.if, graph.loop: their regions stay as imported.
    if (op->getNumRegions() > 0) {
      restoreOperands(op, where + " holds regions (control flow): its "
                                  "operand keeps its type");
      return success();
    }
    auto allWeak = [&] {
      return llvm::all_of(op->getOperands(),
                          [&](Value v) { return isWeak(v); });
    };
    if (isSource(op)) {
      if (!isa<CastOp>(op) || allWeak())
        for (Value r : op->getResults())
          weak.insert(r);
      return success();
    }
    SmallVector<unsigned> floats;
    for (OpOperand &use : op->getOpOperands()) {
      FloatType e = floatElement(use.get().getType());
      if (!e)
        continue;
      if (e != f32 && e != low) {
        restoreOperands(op, where + " has a " + report::typeString(e) +
                                " operand: left as it is");
        return success();
      }
      floats.push_back(use.getOperandNumber());
    }
    if (floats.empty()) {
      if (allWeak())
        for (Value r : op->getResults())
          weak.insert(r);
      return success();
    }

    Rule rule = ruleOf(op);
    Type target;
    std::string reason;
    if (rule == Rule::Low) {
      target = low;
      reason = where + " runs in " + lowName() + " (matmul/conv rule)";
      ++lowOps;
    } else if (rule == Rule::F32) {
      target = f32;
      reason = where + " stays f32 (softmax, normalization, reduction, "
                       "exp/log, loss rule)";
      ++keptF32;
    } else {
      bool anyActivation = false, anyLow = false, anyF32 = false;
      for (unsigned i : floats) {
        Value v = op->getOperand(i);
        if (isWeak(v))
          continue;
        anyActivation = true;
        (floatElement(v.getType()) == low ? anyLow : anyF32) = true;
      }
      if (!anyActivation) {
        // Only parameters and constants in: so is the result (an embedding
        // lookup of an input's ids is an activation).
        if (allWeak())
          for (Value r : op->getResults())
            weak.insert(r);
        return success();
      }
      bool toLow = policy == "aggressive" ? anyLow
                   : policy == "default"  ? anyLow && !anyF32
                                          : false;
      target = toLow ? Type(low) : Type(f32);
      if (toLow) {
        reason = where + " follows its " + lowName() + " activations (" +
                 policy.str() + " policy)";
        ++followLow;
      } else {
        reason = where + (policy == "conservative"
                              ? std::string(" stays f32 (conservative "
                                            "policy: only matmul and conv "
                                            "run in ") +
                                    lowName() + ")"
                              : std::string(" has an f32 activation "
                                            "operand (default policy)"));
        ++keptF32;
      }
    }
    for (unsigned i : floats)
      op->setOperand(i,
                     castTo(op->getOperand(i), target, "operand of " + reason));
    return retype(op);
  }

  // ---- minimization ----------------------------------------------------

  bool isOurCast(Operation *op) const { return casts.count(op); }

  void eraseCast(Operation *op) {
    casts.erase(op);
    for (auto it = cache.begin(); it != cache.end(); ++it)
      if (it->second.getDefiningOp() == op) {
        cache.erase(it);
        break;
      }
    op->erase();
    ++removed;
  }

  /// cast(cast(x : T -> f32) -> T) is x when T is narrower: remove it.
  bool foldRoundTrips() {
    bool changed = false;
    SmallVector<CastOp> all;
    func.walk([&](CastOp c) { all.push_back(c); });
    for (CastOp c : all) {
      if (!isOurCast(c))
        continue;
      auto inner = c.getOperand().getDefiningOp<CastOp>();
      if (!inner || inner.getOperand().getType() != c.getType())
        continue;
      FloatType from = floatElement(inner.getOperand().getType());
      FloatType mid = floatElement(inner.getType());
      if (!from || !mid || !isExactIn(from, mid))
        continue;
      c.getResult().replaceAllUsesWith(inner.getOperand());
      eraseCast(c);
      changed = true;
    }
    return changed;
  }

  /// cast(move(x)) -> move(cast(x)) when x has no more elements than the
  /// move's result (a broadcast, a reshape, a transpose: the cast moves
  /// towards the parameter it converts, where its uses share it). The rules
  /// never put a cast right before a move to fewer elements (a slice or
  /// gather follows its operand's precision), so no cast sinks.
  LogicalResult moveCasts(bool &changed) {
    SmallVector<CastOp> all;
    func.walk([&](CastOp c) { all.push_back(c); });
    for (CastOp c : all) {
      if (!isOurCast(c))
        continue;
      Operation *m = c.getOperand().getDefiningOp();
      Type to = cast<RankedTensorType>(c.getType()).getElementType();
      if (m && isDataMovement(m) && m->hasOneUse()) {
        Value x = m->getOperand(0);
        int64_t ex = elements(x), em = elements(m->getResult(0));
        if (ex >= 0 && em >= 0 && ex <= em && floatElement(x.getType())) {
          std::string reason =
              casts[c].reason + "; moved above " + report::describe(m) +
              (ex == em ? std::string(" (as many elements, and next to the "
                                      "value, where its uses share it)")
                        : " (" + std::to_string(ex) + " elements, not " +
                              std::to_string(em) + ")");
          m->setOperand(0, castTo(x, to, reason));
          if (failed(retype(m)))
            return failure();
          c.getResult().replaceAllUsesWith(m->getResult(0));
          eraseCast(c);
          changed = true;
          continue;
        }
      }
    }
    return success();
  }

  /// Casts of the same value to the same type: one, where the value is.
  bool dedupe() {
    bool changed = false;
    llvm::DenseMap<std::pair<Value, Type>, CastOp> first;
    SmallVector<CastOp> all;
    func.walk([&](CastOp c) { all.push_back(c); });
    for (CastOp c : all) {
      if (!isOurCast(c))
        continue;
      auto key = std::make_pair(c.getOperand(), c.getType());
      auto [it, fresh] = first.try_emplace(key, c);
      if (fresh)
        continue;
      CastOp keep = it->second;
      // Both are placed right after the value (or moved there): keep the
      // one that comes first.
      if (c->isBeforeInBlock(keep)) {
        std::swap(keep, c);
        it->second = keep;
      }
      c.getResult().replaceAllUsesWith(keep.getResult());
      eraseCast(c);
      changed = true;
    }
    return changed;
  }

  void eraseDead() {
    SmallVector<Operation *> dead;
    func.walk([&](Operation *op) {
      if (op->use_empty() && (isOurCast(op) || isDataMovement(op)))
        dead.push_back(op);
    });
    for (Operation *op : dead) {
      if (isOurCast(op))
        eraseCast(op);
      else
        op->erase();
    }
  }

  LogicalResult minimize() {
    for (bool changed = true; changed;) {
      changed = foldRoundTrips();
      if (failed(moveCasts(changed)))
        return failure();
      changed |= dedupe();
      eraseDead();
    }
    return success();
  }

  // ---- report --------------------------------------------------------

  std::string valueName(Value v) const {
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      for (StringRef key : {"graph.param", "graph.input"})
        if (auto name =
                func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), key))
          return (key == "graph.param" ? "parameter " : "input ") + name.str();
      return "argument " + std::to_string(arg.getArgNumber());
    }
    return report::describe(v.getDefiningOp());
  }

  /// The pass's casts in IR order.
  SmallVector<std::pair<Operation *, const CastInfo *>> ordered() const {
    SmallVector<std::pair<Operation *, const CastInfo *>> list;
    func.walk([&](CastOp c) {
      auto it = casts.find(c);
      if (it != casts.end())
        list.push_back({c, &it->second});
    });
    return list;
  }

  unsigned paramCasts() const {
    unsigned n = 0;
    for (auto &[op, info] : casts)
      n += isWeak(op->getOperand(0));
    return n;
  }

  llvm::json::Value toJson() const {
    llvm::json::Array list;
    for (auto [op, info] : ordered()) {
      Value v = op->getOperand(0);
      list.push_back(llvm::json::Object{
          {"value", valueName(v)},
          {"from", report::typeString(floatElement(v.getType()))},
          {"to", report::typeString(floatElement(op->getResult(0).getType()))},
          {"elements", elements(v)},
          {"reason", info->reason}});
    }
    return llvm::json::Object{{"function", func.getName()},
                              {"dtype", lowName()},
                              {"policy", policy},
                              {"ops_low", lowOps},
                              {"ops_following_low", followLow},
                              {"ops_f32", keptF32},
                              {"casts_inserted", inserted},
                              {"casts_removed", removed},
                              {"casts", std::move(list)}};
  }

  void printSummary(llvm::raw_ostream &os) const {
    os << llvm::formatv(
        "mixed precision of '{0}' ({1}, {2} policy): {3} ops in {1} ({4} "
        "matmul/conv, {5} following them), {6} in f32; {7} casts ({8} of "
        "parameters and constants, once per step), {9} inserted and {10} "
        "removed\n",
        func.getName(), lowName(), policy, lowOps + followLow, lowOps,
        followLow, keptF32, casts.size(), paramCasts(), inserted, removed);
    for (auto [op, info] : ordered()) {
      Value v = op->getOperand(0);
      os << "  " << valueName(v) << " "
         << report::typeString(floatElement(v.getType())) << " -> "
         << report::typeString(floatElement(op->getResult(0).getType())) << ": "
         << info->reason << "\n";
    }
  }
};

struct MixedPrecisionPass
    : loom::impl::MixedPrecisionPassBase<MixedPrecisionPass> {
  using MixedPrecisionPassBase::MixedPrecisionPassBase;
  /// Where the report goes instead of `report`.
  report::Sink *sink = nullptr;

  void runOnOperation() override {
    if (failed(run()))
      signalPassFailure();
  }

  LogicalResult run() {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    FloatType low;
    if (dtype == "bf16")
      low = FloatType::getBF16(ctx);
    else if (dtype == "f16")
      low = FloatType::getF16(ctx);
    else
      return module.emitError("loom-mixed-precision: dtype must be bf16 or "
                              "f16, not '")
             << dtype << "'";
    if (policy != "default" && policy != "aggressive" &&
        policy != "conservative")
      return module.emitError("loom-mixed-precision: unknown policy '")
             << policy << "' (conservative, default, aggressive)";
    FailureOr<func::FuncOp> func =
        training::pickFunction(module, funcName, "loom-mixed-precision");
    if (failed(func))
      return failure();
    if (!func->getBody().hasOneBlock())
      return func->emitError("loom-mixed-precision: the function must have "
                             "one block");

    Rewriter r;
    r.func = *func;
    r.low = low;
    r.f32 = FloatType::getF32(ctx);
    r.policy = policy;
    SmallVector<Operation *> ops;
    for (Operation &op : func->getBody().front())
      ops.push_back(&op);
    for (Operation *op : ops)
      if (failed(r.rewriteOp(op)))
        return failure();
    if (failed(r.minimize()))
      return failure();

    if (summary)
      r.printSummary(llvm::errs());
    if ((sink || !report.empty()) &&
        failed(loom::report::emit(sink, "mixed_precision", module,
                                  "loom-mixed-precision", report, r.toJson())))
      return failure();
    return success();
  }
};

} // namespace

std::unique_ptr<mlir::Pass>
loom::createMixedPrecisionPass(const MixedPrecisionPassOptions &options,
                               report::Sink *sink) {
  auto pass = std::make_unique<MixedPrecisionPass>(options);
  pass->sink = sink;
  return pass;
}
