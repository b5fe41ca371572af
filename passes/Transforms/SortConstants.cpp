//===- SortConstants.cpp - put constants in a canonical order -------------===//

#include "passes/Transforms/Passes.h"

#include "dialects/graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace {

struct SortConstantsPass
    : PassWrapper<SortConstantsPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(SortConstantsPass)

  StringRef getArgument() const override { return "graph-sort-constants"; }
  StringRef getDescription() const override {
    return "Move graph.constant ops to the top of the function, ordered by "
           "type and value";
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    SmallVector<std::pair<std::string, loom::graph::ConstantOp>> constants;
    func.walk([&](loom::graph::ConstantOp c) {
      std::string key;
      llvm::raw_string_ostream os(key);
      os << c.getType() << " " << c.getValue();
      constants.push_back({os.str(), c});
    });
    llvm::stable_sort(constants, [](const auto &a, const auto &b) {
      return a.first < b.first;
    });
    Block &entry = func.getBody().front();
    for (auto &[key, c] : llvm::reverse(constants))
      c->moveBefore(&entry, entry.begin());
  }
};

} // namespace

std::unique_ptr<Pass> loom::createSortConstantsPass() {
  return std::make_unique<SortConstantsPass>();
}

void loom::registerTransformsPasses() { PassRegistration<SortConstantsPass>(); }
