//===- SortConstants.cpp - put constants in a canonical order -------------===//

#include "passes/Transforms/Passes.h"

#include "dialects/graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace loom {
#define GEN_PASS_DEF_SORTCONSTANTSPASS
#include "passes/Transforms/Passes.h.inc"
} // namespace loom

namespace {

struct SortConstantsPass
    : loom::impl::SortConstantsPassBase<SortConstantsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    // Each block's own constants at its start (a graph.if branch or a
    // graph.loop body is isolated from above: its constants stay in it).
    func.walk([](Block *block) {
      SmallVector<std::pair<std::string, loom::graph::ConstantOp>> constants;
      for (auto c : block->getOps<loom::graph::ConstantOp>()) {
        std::string key;
        llvm::raw_string_ostream os(key);
        os << c.getType() << " " << c.getValue();
        constants.push_back({os.str(), c});
      }
      llvm::stable_sort(constants, [](const auto &a, const auto &b) {
        return a.first < b.first;
      });
      for (auto &[key, c] : llvm::reverse(constants))
        c->moveBefore(block, block->begin());
    });
  }
};

} // namespace
