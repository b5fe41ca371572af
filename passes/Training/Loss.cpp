//===- Loss.cpp - a model's outputs replaced by a training loss -----------===//
//
// `--loom-loss`: the first step from an inference model to a training step.
// The model function gains a labels argument and returns one scalar loss.
//
//===----------------------------------------------------------------------===//

#include "passes/Training/Passes.h"
#include "passes/Training/TrainingUtils.h"

#include "dialects/graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace loom {
#define GEN_PASS_DEF_LOSSPASS
#include "passes/Training/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;
using namespace loom::graph;

namespace {

struct LossPass : loom::impl::LossPassBase<LossPass> {
  using LossPassBase::LossPassBase;

  void runOnOperation() override {
    if (failed(run()))
      signalPassFailure();
  }

  /// The result the loss reads.
  FailureOr<unsigned> logitsResult(func::FuncOp func) {
    if (logits.empty()) {
      if (func.getNumResults() != 1)
        return func.emitError("loom-loss: the model has ")
               << func.getNumResults()
               << " outputs: name the one the loss reads (logits=)";
      return 0u;
    }
    std::string names;
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      auto name = func.getResultAttrOfType<StringAttr>(i, "graph.output");
      if (name && name.getValue() == logits)
        return i;
      names += (names.empty() ? "" : ", ") +
               (name ? name.str() : "output" + std::to_string(i));
    }
    return func.emitError("loom-loss: the model has no output '")
           << logits << "' (its outputs: " << names << ")";
  }

  LogicalResult run() {
    FailureOr<func::FuncOp> func =
        training::pickFunction(getOperation(), funcName, "loom-loss");
    if (failed(func))
      return failure();
    FailureOr<unsigned> index = logitsResult(*func);
    if (failed(index))
      return failure();
    auto ret = cast<func::ReturnOp>(func->getBody().front().getTerminator());
    Value out = ret.getOperand(*index);
    auto type = dyn_cast<RankedTensorType>(out.getType());
    if (!type || !type.hasStaticShape() ||
        !isa<FloatType>(type.getElementType()))
      return func->emitError("loom-loss: the output the loss reads must be a "
                             "float tensor of static shape, not ")
             << out.getType()
             << " (loomc train --batch fixes an ONNX model's dynamic batch "
                "dim; graph IR must be built with static shapes)";
    for (unsigned i = 0; i < func->getNumArguments(); ++i)
      if (auto s = func->getArgAttrOfType<StringAttr>(i, "graph.input");
          s && s.getValue() == labels)
        return func->emitError("loom-loss: the model has an input named '")
               << labels << "' already: name the labels otherwise";

    Type labelType;
    if (loss == "cross_entropy") {
      if (type.getRank() < 1)
        return func->emitError("loom-loss: cross_entropy needs logits with a "
                               "class dim, not ")
               << type;
      labelType = RankedTensorType::get(type.getShape().drop_back(),
                                        IntegerType::get(&getContext(), 64));
      if (labelSmoothing < 0 || labelSmoothing >= 1)
        return func->emitError("loom-loss: label-smoothing must be in [0, "
                               "1), not ")
               << labelSmoothing;
    } else if (loss == "mse") {
      labelType = type;
    } else {
      return func->emitError("loom-loss: unknown loss '")
             << loss << "' (cross_entropy, mse)";
    }

    OpBuilder b(ret);
    unsigned argIndex = func->getNumArguments();
    func->insertArgument(argIndex, labelType,
                         b.getDictionaryAttr({b.getNamedAttr(
                             "graph.input", b.getStringAttr(labels))}),
                         func->getLoc());
    Value labelArg = func->getArgument(argIndex);
    Location loc = out.getLoc();
    Value result;
    if (loss == "mse") {
      result = b.create<MseLossOp>(loc, out, labelArg, Reduction::mean);
    } else {
      if (emptyMeanZero) {
        // The sum over the kept rows over their count, at least 1.
        Value sum = b.create<CrossEntropyOp>(loc, out, labelArg, Reduction::sum,
                                             b.getI64IntegerAttr(ignoreIndex));
        result = b.create<DivOp>(loc, sum, keptRows(b, loc, out, labelArg));
      } else {
        result = b.create<CrossEntropyOp>(loc, out, labelArg, Reduction::mean,
                                          b.getI64IntegerAttr(ignoreIndex));
      }
      if (labelSmoothing > 0)
        result = smoothed(b, loc, out, labelArg, result);
    }
    b.create<func::ReturnOp>(ret.getLoc(), result);
    ret.erase();
    func->setFunctionType(FunctionType::get(
        &getContext(), func->getArgumentTypes(), {result.getType()}));
    func->setAllResultAttrs(ArrayRef<DictionaryAttr>{b.getDictionaryAttr(
        {b.getNamedAttr("graph.output", b.getStringAttr("loss"))})});
    return success();
  }

  /// 1 for each row whose label is kept, 0 for an ignored one.
  Value keptMask(OpBuilder &b, Location loc, Value logits, Value labels) {
    auto type = cast<RankedTensorType>(logits.getType());
    training::Scalars s(b, loc, type.getElementType());
    return b.create<CastOp>(loc,
                            b.create<CompareOp>(loc, CompareDirection::ne,
                                                labels,
                                                s.intConst(ignoreIndex)),
                            type.getElementType());
  }

  /// The sum over the rows (every dim but the class dim) of `x`.
  Value sumRows(OpBuilder &b, Location loc, Value x, int64_t rank) {
    if (rank <= 1)
      return x;
    SmallVector<int64_t> rows;
    for (int64_t i = 0; i < rank - 1; ++i)
      rows.push_back(i);
    return b.create<ReduceSumOp>(loc, x, rows, false);
  }

  /// The count of kept rows; with empty-mean-zero at least 1, so that a
  /// mean over no row is 0.
  Value keptRows(OpBuilder &b, Location loc, Value logits, Value labels) {
    auto type = cast<RankedTensorType>(logits.getType());
    training::Scalars s(b, loc, type.getElementType());
    Value kept =
        sumRows(b, loc, keptMask(b, loc, logits, labels), type.getRank());
    return emptyMeanZero ? b.create<MaxOp>(loc, kept, s.constant(1.0)) : kept;
  }

  /// (1 - e) nll + e * (sum over kept rows of -mean_c log_softmax) / kept.
  Value smoothed(OpBuilder &b, Location loc, Value logits, Value labels,
                 Value nll) {
    auto type = cast<RankedTensorType>(logits.getType());
    int64_t rank = type.getRank();
    training::Scalars s(b, loc, type.getElementType());
    Value logp = b.create<LogSoftmaxOp>(loc, logits, rank - 1);
    Value rowMean = b.create<ReduceMeanOp>(
        loc, logp, ArrayRef<int64_t>{rank - 1}, /*keepdims=*/false);
    Value total = sumRows(
        b, loc, b.create<MulOp>(loc, rowMean, keptMask(b, loc, logits, labels)),
        rank);
    Value kept = keptRows(b, loc, logits, labels);
    Value smooth =
        b.create<NegOp>(loc, b.create<DivOp>(loc, total, kept).getResult());
    return b.create<AddOp>(loc, s.mul(nll, 1.0 - labelSmoothing),
                           s.mul(smooth, (double)labelSmoothing));
  }
};

} // namespace
