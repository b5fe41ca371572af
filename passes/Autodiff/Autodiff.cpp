//===- Autodiff.cpp - the gradient function of a scalar loss --------------===//
//
// `--loom-autodiff`: reverse-mode differentiation of a graph function. The
// forward ops are cloned into F_grad; an activity analysis picks the ops
// between the differentiated arguments and the loss; then, walking those
// ops backwards, each op's VjpOpInterface builds its operands' gradients
// from its results' gradients, which are summed per value.
//
//===----------------------------------------------------------------------===//

#include "passes/Autodiff/Passes.h"
#include "passes/Autodiff/Vjp.h"
#include "passes/Training/TrainingUtils.h"

#include "dialects/graph/GraphDialect.h"
#include "dialects/graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

namespace loom {
#define GEN_PASS_DEF_AUTODIFFPASS
#include "passes/Autodiff/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

/// The name an argument goes by: graph.param, graph.input, else argN.
std::string argName(func::FuncOp func, unsigned i) {
  for (StringRef attr : {"graph.param", "graph.input", "graph.state"})
    if (auto s = func.getArgAttrOfType<StringAttr>(i, attr))
      return s.str();
  return "arg" + std::to_string(i);
}

bool isFloatTensor(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  return tensor && isa<FloatType>(tensor.getElementType());
}

LogicalResult checkStatic(func::FuncOp func) {
  for (BlockArgument arg : func.getArguments())
    if (auto t = dyn_cast<RankedTensorType>(arg.getType());
        !t || !t.hasStaticShape())
      return func.emitError("autodiff needs static shapes: argument '")
             << argName(func, arg.getArgNumber()) << "' has type "
             << arg.getType()
             << " (loomc train --batch fixes an ONNX model's dynamic batch "
                "dim; graph IR must be built with static shapes)";
  WalkResult r = func.walk([&](Operation *op) {
    for (Value v : op->getResults())
      if (auto t = dyn_cast<RankedTensorType>(v.getType());
          t && !t.hasStaticShape()) {
        op->emitError("autodiff needs static shapes: this op's result has "
                      "type ")
            << t;
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}

} // namespace

/// Builds the backward of `seeds` (value, its cotangent) with respect to
/// `wrt` at the end of `func`'s body (passes/Autodiff/Vjp.h).
FailureOr<SmallVector<Value>>
loom::autodiff::buildVjp(func::FuncOp func,
                         ArrayRef<std::pair<Value, Value>> seeds,
                         ArrayRef<BlockArgument> wrt, OpBuilder &b) {
  Block &body = func.getBody().front();
  // Varied: depends differentiably on a wrt argument.
  llvm::DenseSet<Value> varied(wrt.begin(), wrt.end());
  for (Operation &op : body.without_terminator()) {
    bool any = false;
    auto vjp = dyn_cast<graph::VjpOpInterface>(&op);
    for (OpOperand &use : op.getOpOperands())
      if (varied.contains(use.get()) &&
          (!vjp || vjp.isDifferentiableOperand(use.getOperandNumber())))
        any = true;
    if (any)
      for (Value r : op.getResults())
        if (isFloatTensor(r.getType()))
          varied.insert(r);
  }
  // Useful: a seeded value depends on it.
  llvm::DenseSet<Value> useful;
  for (auto [v, g] : seeds)
    useful.insert(v);
  for (Operation &op : llvm::reverse(body.without_terminator()))
    if (llvm::any_of(op.getResults(),
                     [&](Value r) { return useful.contains(r); }))
      for (Value v : op.getOperands())
        useful.insert(v);

  llvm::DenseMap<Value, Value> grads;
  // A scatter-add into zeros not used yet (a gather's or an embedding's
  // gradient) takes another contribution as its data instead of being
  // added to it: one buffer fewer, the size of the table (a tied
  // embedding: GPT-2 small's step peaks 147 MiB lower).
  auto scatterInto = [&](Value scatter, Value other) -> Value {
    auto s = scatter.getDefiningOp<graph::ScatterElementsOp>();
    auto zeros = s ? s.getData().getDefiningOp<graph::FillLikeOp>() : nullptr;
    auto zero = zeros ? dyn_cast<FloatAttr>(zeros.getValue()) : nullptr;
    if (!zero || !zero.getValue().isZero() ||
        s.getReduction() != graph::ScatterReduction::add || !s->use_empty() ||
        other.getType() != s.getType())
      return Value();
    Value merged = b.create<graph::ScatterElementsOp>(
        s.getLoc(), other, s.getIndices(), s.getUpdates(), s.getAxis(),
        graph::ScatterReduction::add);
    s->erase();
    if (zeros->use_empty())
      zeros->erase();
    return merged;
  };
  auto accumulate = [&](Value v, Value g) {
    Value &slot = grads[v];
    if (!slot) {
      slot = g;
    } else if (Value merged = scatterInto(g, slot)) {
      slot = merged;
    } else if (Value merged = scatterInto(slot, g)) {
      slot = merged;
    } else {
      slot = b.create<graph::AddOp>(g.getLoc(), slot, g).getResult();
    }
  };
  for (auto [v, g] : seeds)
    accumulate(v, g);

  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops)) {
    SmallVector<Value> resultGrads;
    bool anyGrad = false;
    for (Value r : op->getResults()) {
      Value g =
          useful.contains(r) && varied.contains(r) ? grads.lookup(r) : Value();
      resultGrads.push_back(g);
      anyGrad |= bool(g);
    }
    if (!anyGrad)
      continue;
    auto vjp = dyn_cast<graph::VjpOpInterface>(op);
    if (!vjp)
      return op->emitError("'")
             << op->getName()
             << "' has no VJP rule: the loss cannot be differentiated "
                "through it";
    b.setInsertionPoint(body.getTerminator());
    SmallVector<Value> operandGrads;
    if (failed(vjp.buildVjp(b, resultGrads, operandGrads)))
      return failure();
    for (auto [i, g] : llvm::enumerate(operandGrads)) {
      Value operand = op->getOperand(i);
      if (!g || !varied.contains(operand) || !vjp.isDifferentiableOperand(i))
        continue;
      if (g.getType() != operand.getType())
        return op->emitError("internal error: the VJP rule of '")
               << op->getName() << "' built a gradient of type " << g.getType()
               << " for operand " << i << " of type " << operand.getType();
      accumulate(operand, g);
    }
  }
  SmallVector<Value> out;
  for (BlockArgument arg : wrt)
    out.push_back(grads.lookup(arg));
  return out;
}

/// The gradient of `loss` with respect to each of `wrt` (a null entry
/// where none reaches the argument). `scale` (a f32 scalar, may be null)
/// seeds the backward instead of 1: the gradients of `loss * scale`, loss
/// scaling's scaled backward.
static FailureOr<SmallVector<Value>> buildBackward(func::FuncOp func,
                                                   Value loss,
                                                   ArrayRef<BlockArgument> wrt,
                                                   Value scale, OpBuilder &b) {
  auto lossType = cast<RankedTensorType>(loss.getType());
  Value seed;
  if (scale) {
    seed = scale;
    if (lossType.getElementType() != getElementTypeOrSelf(scale.getType()))
      seed = b.create<graph::CastOp>(loss.getLoc(), seed,
                                     lossType.getElementType());
    if (lossType.getRank() != 0)
      seed =
          b.create<graph::ReshapeOp>(loss.getLoc(), seed, lossType.getShape());
  } else {
    seed = b.create<graph::FillLikeOp>(
        loss.getLoc(), loss, b.getFloatAttr(lossType.getElementType(), 1.0));
  }
  return autodiff::buildVjp(func, {{loss, seed}}, wrt, b);
}

namespace {

struct AutodiffPass : loom::impl::AutodiffPassBase<AutodiffPass> {
  using AutodiffPassBase::AutodiffPassBase;

  void runOnOperation() override {
    if (failed(run()))
      signalPassFailure();
  }

  LogicalResult run() {
    if (wrt != "params" && wrt != "all")
      return getOperation().emitError("loom-autodiff: wrt must be 'params' "
                                      "or 'all', not '")
             << wrt << "'";
    std::optional<llvm::Regex> frozen;
    if (!freeze.empty()) {
      frozen.emplace(freeze);
      std::string why;
      if (!frozen->isValid(why))
        return getOperation().emitError("loom-autodiff: bad freeze regex '")
               << freeze << "': " << why;
    }
    FailureOr<func::FuncOp> forward =
        training::pickFunction(getOperation(), funcName, "loom-autodiff");
    if (failed(forward))
      return failure();
    if (failed(checkStatic(*forward)))
      return failure();
    if (lossIndex >= forward->getNumResults())
      return forward->emitError("loom-autodiff: no result ")
             << static_cast<unsigned>(lossIndex) << " to be the loss";
    auto lossType =
        dyn_cast<RankedTensorType>(forward->getResultTypes()[lossIndex]);
    if (!lossType || !isa<FloatType>(lossType.getElementType()) ||
        lossType.getNumElements() != 1)
      return forward->emitError("loom-autodiff: the loss (result ")
             << static_cast<unsigned>(lossIndex)
             << ") must be a float scalar, not "
             << forward->getResultTypes()[lossIndex];

    OpBuilder b(forward->getContext());
    b.setInsertionPointAfter(*forward);
    auto gradFunc = cast<func::FuncOp>(b.clone(**forward));
    std::string gradName = (forward->getName() + "_grad").str();
    if (getOperation().lookupSymbol(gradName))
      return forward->emitError("loom-autodiff: a function '")
             << gradName << "' exists already";
    gradFunc.setName(gradName);

    SmallVector<BlockArgument> wrtArgs;
    std::string report;
    llvm::raw_string_ostream os(report);
    for (BlockArgument arg : gradFunc.getArguments()) {
      unsigned i = arg.getArgNumber();
      bool param = bool(gradFunc.getArgAttr(i, "graph.param"));
      if (!isFloatTensor(arg.getType()) || (wrt == "params" && !param))
        continue;
      std::string name = argName(gradFunc, i);
      if (frozen && frozen->match(name)) {
        os << "  " << name << ": frozen (matches '" << freeze << "')\n";
        continue;
      }
      wrtArgs.push_back(arg);
    }
    if (wrtArgs.empty())
      return forward->emitError("loom-autodiff: nothing to differentiate: "
                                "no ")
             << (wrt == "params" ? "graph.param" : "float")
             << " argument that is not frozen";

    auto ret = cast<func::ReturnOp>(gradFunc.getBody().front().getTerminator());
    Value loss = ret.getOperand(lossIndex);
    Value scale;
    if (lossScale) {
      unsigned n = gradFunc.getNumArguments();
      gradFunc.insertArgument(n, RankedTensorType::get({}, b.getF32Type()),
                              b.getDictionaryAttr({b.getNamedAttr(
                                  "graph.loss_scale", b.getUnitAttr())}),
                              loss.getLoc());
      scale = gradFunc.getArgument(n);
    }
    b.setInsertionPoint(ret);
    FailureOr<SmallVector<Value>> grads =
        buildBackward(gradFunc, loss, wrtArgs, scale, b);
    if (failed(grads)) {
      gradFunc.erase();
      return failure();
    }

    b.setInsertionPoint(ret);
    MLIRContext *ctx = &getContext();
    SmallVector<Value> results{loss};
    SmallVector<Attribute> resultAttrs{b.getDictionaryAttr(
        {b.getNamedAttr("graph.output", b.getStringAttr("loss"))})};
    for (auto [arg, g] : llvm::zip(wrtArgs, *grads)) {
      std::string name = argName(gradFunc, arg.getArgNumber());
      if (!g) {
        gradFunc.emitWarning("loom-autodiff: the loss does not depend on '")
            << name << "': its gradient is zero";
        os << "  " << name << ": zero (the loss does not depend on it)\n";
        auto t = cast<RankedTensorType>(arg.getType());
        g = b.create<graph::FillLikeOp>(
            arg.getLoc(), arg, b.getFloatAttr(t.getElementType(), 0.0));
      } else {
        os << "  " << name << ": gradient\n";
      }
      results.push_back(g);
      resultAttrs.push_back(b.getDictionaryAttr(
          {b.getNamedAttr("graph.output", b.getStringAttr(name + ".grad")),
           b.getNamedAttr("graph.grad_of", b.getStringAttr(name))}));
    }
    b.create<func::ReturnOp>(ret.getLoc(), results);
    ret.erase();
    SmallVector<Type> types;
    for (Value v : results)
      types.push_back(v.getType());
    gradFunc.setFunctionType(
        FunctionType::get(ctx, gradFunc.getArgumentTypes(), types));
    gradFunc.setAllResultAttrs(resultAttrs);
    if (summary)
      llvm::errs() << "loom-autodiff: " << gradName << " = d loss / d ("
                   << wrtArgs.size() << " arguments)\n"
                   << report;
    return success();
  }
};

} // namespace
