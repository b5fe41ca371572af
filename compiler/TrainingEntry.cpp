//===- TrainingEntry.cpp - keep the function a training artifact runs -----===//

#include "compiler/Passes.h"

#include "dialects/graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/BitVector.h"

namespace loom {
#define GEN_PASS_DEF_TRAININGENTRYPASS
#include "compiler/Passes.h.inc"
} // namespace loom

using namespace mlir;

namespace {

/// The arguments with an initial value become constants of it.
void bakeParams(func::FuncOp func) {
  OpBuilder b(func.getBody());
  llvm::BitVector erase(func.getNumArguments());
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (auto init =
            func.getArgAttrOfType<ElementsAttr>(i, "graph.initial_value")) {
      Value c = b.create<loom::graph::ConstantOp>(func.getLoc(), init);
      func.getArgument(i).replaceAllUsesWith(c);
      erase.set(i);
    }
  (void)func.eraseArguments(erase);
}

struct TrainingEntryPass
    : loom::impl::TrainingEntryPassBase<TrainingEntryPass> {
  using TrainingEntryPassBase::TrainingEntryPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto f : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
      if (f.getName() != funcName)
        f.erase();
    if (bakeParams)
      if (auto f = module.lookupSymbol<func::FuncOp>(funcName))
        ::bakeParams(f);
  }
};

} // namespace
