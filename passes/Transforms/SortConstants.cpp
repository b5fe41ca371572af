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
