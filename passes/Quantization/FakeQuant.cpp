//===- FakeQuant.cpp - fake int8 quantization for QAT ---------------------===//
//
// `--loom-fake-quant` (Passes.td): the products `loomc train --qat` marked
// read fake-quantized operands, as the QDQ export will quantize them: the
// weight per output channel, symmetric s8, its scale recomputed from the
// weight; the activation u8 asymmetric with the observed range's scale
// and zero point (constants, or trained parameters with learned-scales).
//
//===----------------------------------------------------------------------===//

#include "passes/Quantization/Passes.h"

#include "dialects/graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace loom::graph;

namespace loom {
#define GEN_PASS_DEF_FAKEQUANTPASS
#include "passes/Quantization/Passes.h.inc"
} // namespace loom

namespace {

constexpr StringLiteral kQatAttr = "loom.qat";

/// The u8 scale and zero point of the range [lo, hi] widened to hold 0, as
/// ONNX Runtime (and `loomc quantize`'s activationParams) computes them.
std::pair<float, float> activationParams(double lo, double hi) {
  lo = std::min(lo, 0.0);
  hi = std::max(hi, 0.0);
  double s = (hi - lo) / 255.0;
  if (!(s > 0) || !std::isfinite(s))
    return {1.0f, 0.0f};
  auto scale = static_cast<float>(s);
  double zero = std::min(255.0, std::max(0.0, std::nearbyint(-lo / scale)));
  return {scale, static_cast<float>(zero)};
}

struct FakeQuantPass : loom::impl::FakeQuantPassBase<FakeQuantPass> {
  using FakeQuantPassBase::FakeQuantPassBase;

  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (failed(run(func)))
        return signalPassFailure();
  }

  Value scalar(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, float v) {
    auto t = RankedTensorType::get(shape, b.getF32Type());
    return b.create<ConstantOp>(loc, DenseElementsAttr::get(t, v));
  }

  /// max |w| / 127 along every dim but `axis` (1 where the max is 0), the
  /// zero point 0: the weight's s8 fake quantization.
  Value fakeWeight(OpBuilder &b, Location loc, Value w, int64_t axis) {
    auto t = cast<RankedTensorType>(w.getType());
    SmallVector<int64_t> axes;
    for (int64_t i = 0; i < t.getRank(); ++i)
      if (i != axis)
        axes.push_back(i);
    Value m = b.create<ReduceMaxOp>(loc, b.create<AbsOp>(loc, w), axes,
                                    /*keepdims=*/true);
    Value s = b.create<DivOp>(loc, m, scalar(b, loc, {}, 127.0f));
    Value positive = b.create<CompareOp>(loc, CompareDirection::gt, m,
                                         scalar(b, loc, {}, 0.0f));
    s = b.create<WhereOp>(loc, positive, s, scalar(b, loc, {}, 1.0f));
    Value z = b.create<FillLikeOp>(loc, s, b.getF32FloatAttr(0.0f));
    return b.create<FakeQuantizeOp>(loc, w, s, z, b.getI64IntegerAttr(-127),
                                    b.getI64IntegerAttr(127), UnitAttr());
  }

  /// The activation's u8 fake quantization with the range in `qat`.
  FailureOr<Value> fakeActivation(OpBuilder &b, Operation *op, Value x,
                                  DictionaryAttr qat, func::FuncOp func) {
    auto name = qat.getAs<StringAttr>("activation");
    auto lo = qat.getAs<FloatAttr>("min"), hi = qat.getAs<FloatAttr>("max");
    if (!name || !lo || !hi)
      return op->emitError("loom-fake-quant: ")
             << kQatAttr << " must hold activation (a string), min and max "
             << "(floats), not " << qat;
    if (!std::isfinite(lo.getValueAsDouble()) ||
        !std::isfinite(hi.getValueAsDouble()) ||
        lo.getValueAsDouble() > hi.getValueAsDouble())
      return op->emitError("loom-fake-quant: the range of activation '")
             << name.getValue() << "' is not a finite [min, max]: ["
             << lo.getValueAsDouble() << ", " << hi.getValueAsDouble() << "]";
    auto [scale, zero] =
        activationParams(lo.getValueAsDouble(), hi.getValueAsDouble());
    Location loc = op->getLoc();
    Value s, z;
    UnitAttr learned;
    if (learnedScales) {
      auto t = RankedTensorType::get({1}, b.getF32Type());
      auto addParam = [&](StringRef suffix, float init) -> Value {
        unsigned i = func.getNumArguments();
        NamedAttribute attrs[] = {
            b.getNamedAttr("graph.param",
                           b.getStringAttr(name.getValue() + suffix)),
            b.getNamedAttr("graph.initial_value",
                           DenseElementsAttr::get(t, init))};
        func.insertArgument(i, t, b.getDictionaryAttr(attrs), loc);
        return func.getArgument(i);
      };
      s = addParam("/qat_scale", scale);
      z = addParam("/qat_zero_point", zero);
      learned = b.getUnitAttr();
    } else {
      s = scalar(b, loc, {}, scale);
      z = scalar(b, loc, {}, zero);
    }
    return b
        .create<FakeQuantizeOp>(loc, x, s, z, b.getI64IntegerAttr(0),
                                b.getI64IntegerAttr(255), learned)
        .getResult();
  }

  LogicalResult run(func::FuncOp func) {
    SmallVector<Operation *> marked;
    func.walk([&](Operation *op) {
      if (op->hasAttr(kQatAttr))
        marked.push_back(op);
    });
    // One fake quantization per value: walk order is program order, so
    // the first reader's copy dominates the later readers.
    llvm::DenseMap<Value, Value> weights, activations;
    OpBuilder b(func.getContext());
    for (Operation *op : marked) {
      auto qat = op->getAttrOfType<DictionaryAttr>(kQatAttr);
      if (!qat)
        return op->emitError("loom-fake-quant: ")
               << kQatAttr << " must be a dictionary";
      int64_t axis;
      Value w = op->getNumOperands() >= 2 ? op->getOperand(1) : Value();
      auto wt =
          w ? dyn_cast<RankedTensorType>(w.getType()) : RankedTensorType();
      if (auto mm = dyn_cast<MatmulOp>(op)) {
        if (!wt || wt.getRank() != 2)
          return op->emitError("loom-fake-quant: a marked matmul's rhs must "
                               "be a matrix (the weight)");
        axis = mm.getTransposeRhs() ? 0 : 1;
      } else if (isa<ConvOp>(op)) {
        axis = 0;
      } else {
        return op->emitError("loom-fake-quant: only matmul and conv can be "
                             "quantized, not ")
               << op->getName();
      }
      if (!wt || !wt.hasStaticShape() || !wt.getElementType().isF32() ||
          !cast<RankedTensorType>(op->getOperand(0).getType())
               .getElementType()
               .isF32())
        return op->emitError("loom-fake-quant: a marked op's operands must be "
                             "f32 with a static weight shape");
      b.setInsertionPoint(op);
      Value &fw = weights[w];
      if (!fw)
        fw = fakeWeight(b, op->getLoc(), w, axis);
      Value x = op->getOperand(0);
      Value &fx = activations[x];
      if (!fx) {
        FailureOr<Value> q = fakeActivation(b, op, x, qat, func);
        if (failed(q))
          return failure();
        fx = *q;
      }
      op->setOperand(0, fx);
      op->setOperand(1, fw);
      op->removeAttr(kQatAttr);
    }
    return success();
  }
};

} // namespace
