//===- SaveNarrow.cpp - 16-bit activations kept for the backward ----------===//
//
// `--loom-save-narrow` (Passes.td): a widening cast the backward needs is
// recomputed next to its backward use, so that the backward keeps the
// 16-bit value alive instead of its f32 copy.
//
//===----------------------------------------------------------------------===//

#include "passes/MixedPrecision/Passes.h"
#include "passes/MixedPrecision/Precision.h"
#include "passes/Training/TrainingUtils.h"

#include "dialects/graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace loom {
#define GEN_PASS_DEF_SAVENARROWPASS
#include "passes/MixedPrecision/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

struct SaveNarrowPass : loom::impl::SaveNarrowPassBase<SaveNarrowPass> {
  using SaveNarrowPassBase::SaveNarrowPassBase;

  void runOnOperation() override {
    FailureOr<func::FuncOp> func =
        training::pickFunction(getOperation(), funcName, "loom-save-narrow");
    if (failed(func))
      return signalPassFailure();
    if (!func->getBody().hasOneBlock())
      return;
    Block &body = func->getBody().front();
    std::optional<unsigned> lossIndex;
    for (unsigned i = 0; i < func->getNumResults(); ++i)
      if (auto out = func->getResultAttrOfType<StringAttr>(i, "graph.output"))
        if (out.getValue() == "loss")
          lossIndex = i;
    if (!lossIndex)
      return; // no training function: nothing to do
    // The forward: what the loss depends on.
    llvm::DenseSet<Operation *> forward;
    SmallVector<Value> worklist{body.getTerminator()->getOperand(*lossIndex)};
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val().getDefiningOp();
      if (!op || !forward.insert(op).second)
        continue;
      for (Value v : op->getOperands())
        worklist.push_back(v);
    }
    SmallVector<graph::CastOp> casts;
    for (Operation &op : body)
      if (auto c = dyn_cast<graph::CastOp>(&op))
        if (forward.contains(c))
          casts.push_back(c);
    for (graph::CastOp c : casts) {
      FloatType from = precision::floatElement(c.getOperand().getType());
      FloatType to = precision::floatElement(c.getType());
      if (!from || !to || from.getWidth() >= to.getWidth() ||
          !precision::isExactIn(from, to))
        continue;
      Operation *first = nullptr;
      for (Operation *user : c->getUsers())
        if (!forward.contains(user) && (!first || user->isBeforeInBlock(first)))
          first = user;
      if (!first || first == body.getTerminator())
        continue;
      OpBuilder b(first);
      Operation *again = b.clone(*c);
      c.getResult().replaceUsesWithIf(again->getResult(0), [&](OpOperand &u) {
        return !forward.contains(u.getOwner()) &&
               u.getOwner() != body.getTerminator();
      });
    }
  }
};

} // namespace
