//===- VerifyCollectives.cpp - same collectives, same order, every rank ---===//
//
// `--loom-verify-collectives` (Passes.td): simulates which collectives each
// rank of the mesh issues, in order, and checks that the ranks of every
// group agree, so that a mismatch is a compile error instead of a hang.
//
//===----------------------------------------------------------------------===//

#include "passes/Sharding/Passes.h"
#include "passes/Sharding/ShardingUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>

namespace loom {
#define GEN_PASS_DEF_VERIFYCOLLECTIVESPASS
#include "passes/Sharding/Passes.h.inc"
} // namespace loom

using namespace mlir;
using namespace loom;

namespace {

/// What a collective is, as its group's ranks must agree on it: the op
/// with its attributes (minus the location) and its types.
std::string signature(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << op->getName() << " " << op->getAttrDictionary() << " : (";
  llvm::interleaveComma(op->getOperandTypes(), os);
  os << ") -> (";
  llvm::interleaveComma(op->getResultTypes(), os);
  os << ")";
  return s;
}

struct VerifyCollectivesPass
    : loom::impl::VerifyCollectivesPassBase<VerifyCollectivesPass> {
  using VerifyCollectivesPassBase::VerifyCollectivesPassBase;
  void runOnOperation() override {
    if (failed(run()))
      signalPassFailure();
  }

  /// The collectives of `f` in program order; an error for one nested in a
  /// region.
  static FailureOr<SmallVector<Operation *>> collectives(func::FuncOp f) {
    SmallVector<Operation *> found;
    WalkResult walk = f.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (!isa<mesh::MeshDialect>(op->getDialect()) || isa<mesh::MeshOp>(op))
        return WalkResult::advance();
      if (op->getParentOp() != f) {
        op->emitError("loom-verify-collectives: a collective inside '")
            << op->getParentOp()->getName()
            << "': the ranks of its group may not all reach it";
        return WalkResult::interrupt();
      }
      found.push_back(op);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    return found;
  }

  static SmallVector<int16_t> axesOf(Operation *op) {
    if (auto axes = op->getAttrOfType<DenseI16ArrayAttr>("mesh_axes"))
      return SmallVector<int16_t>(axes.asArrayRef());
    return {};
  }

  LogicalResult run() {
    ModuleOp module = getOperation();
    mesh::MeshOp mesh = sharding::findMesh(module);
    std::map<int64_t, func::FuncOp> program; // rank -> its function
    std::map<Operation *, SmallVector<Operation *>> ops;
    SmallVector<func::FuncOp> everyRank;
    for (auto f : module.getOps<func::FuncOp>()) {
      if (f.isDeclaration() || f.isPrivate() ||
          (!funcName.empty() && f.getName() != funcName))
        continue;
      FailureOr<SmallVector<Operation *>> found = collectives(f);
      if (failed(found))
        return failure();
      ops[f] = std::move(*found);
    }
    bool any = llvm::any_of(ops, [](auto &e) { return !e.second.empty(); });
    if (!any)
      return success();
    if (!mesh)
      return module.emitError("loom-verify-collectives: collectives but no "
                              "mesh (mesh.mesh @")
             << sharding::kMeshName << ")";
    ArrayRef<int64_t> shape = mesh.getShape();
    int64_t world = 1;
    for (int64_t n : shape) {
      if (n <= 0)
        return mesh.emitError("loom-verify-collectives: the mesh needs "
                              "static sizes");
      world *= n;
    }
    for (auto &[fop, _] : ops) {
      auto f = cast<func::FuncOp>(fop);
      auto ranks = f->getAttrOfType<DenseI64ArrayAttr>("loom.ranks");
      if (!ranks) {
        everyRank.push_back(f);
        continue;
      }
      for (int64_t r : ranks.asArrayRef()) {
        if (r < 0 || r >= world)
          return f.emitError("loom-verify-collectives: rank ")
                 << r << " is not on the mesh (" << world << " ranks)";
        if (!program.emplace(r, f).second)
          return f.emitError("loom-verify-collectives: rank ")
                 << r << " runs two programs, @" << program[r].getName()
                 << " and @" << f.getName();
      }
    }
    if (everyRank.size() > 1 || (everyRank.size() == 1 && !program.empty()))
      return mesh.emitError("loom-verify-collectives: several programs "
                            "without loom.ranks; say which ranks run each");
    for (int64_t r = 0; r < world; ++r) {
      if (!program.count(r)) {
        if (everyRank.empty())
          return mesh.emitError("loom-verify-collectives: rank ")
                 << r << " runs no program";
        program[r] = everyRank.front();
      }
    }

    // Coordinates, row-major over the mesh shape.
    auto coords = [&](int64_t rank) {
      SmallVector<int64_t> c(shape.size());
      for (int64_t i = shape.size() - 1; i >= 0; --i) {
        c[i] = rank % shape[i];
        rank /= shape[i];
      }
      return c;
    };
    // The group of `rank` over `axes`, as its sorted member list.
    auto groupOf = [&](int64_t rank, ArrayRef<int16_t> axes) {
      SmallVector<int64_t> mine = coords(rank), members;
      for (int64_t other = 0; other < world; ++other) {
        SmallVector<int64_t> c = coords(other);
        bool same = true;
        for (size_t i = 0; i < c.size(); ++i)
          if (!llvm::is_contained(axes, (int16_t)i) && c[i] != mine[i])
            same = false;
        if (same)
          members.push_back(other);
      }
      return members;
    };
    // group -> rank -> the collectives it issues in that group.
    std::map<SmallVector<int64_t>, std::map<int64_t, SmallVector<Operation *>>>
        groups;
    for (int64_t r = 0; r < world; ++r)
      for (Operation *op : ops[program[r]]) {
        SmallVector<int16_t> axes = axesOf(op);
        for (int16_t a : axes)
          if (a < 0 || a >= (int16_t)shape.size())
            return op->emitError("loom-verify-collectives: mesh axis ")
                   << a << " is not on the mesh";
        groups[groupOf(r, axes)][r].push_back(op);
      }
    for (auto &[members, byRank] : groups) {
      std::string group;
      for (int64_t m : members)
        group += (group.empty() ? "{" : ", ") + std::to_string(m);
      group += "}";
      int64_t first = members.front();
      const SmallVector<Operation *> &ref = byRank[first];
      for (int64_t m : members) {
        const SmallVector<Operation *> &seq = byRank[m];
        size_t n = std::max(ref.size(), seq.size());
        for (size_t i = 0; i < n; ++i) {
          Operation *a = i < ref.size() ? ref[i] : nullptr;
          Operation *b = i < seq.size() ? seq[i] : nullptr;
          if (a && b && signature(a) == signature(b))
            continue;
          Operation *at = a ? a : b;
          auto what = [](Operation *op) {
            return op ? signature(op) : std::string("nothing (it waits)");
          };
          return at->emitError(llvm::formatv(
              "loom-verify-collectives: collective #{0} of group {1} "
              "differs: rank {2} issues {3}, rank {4} issues {5}",
              i, group, first, what(a), m, what(b)));
        }
      }
    }
    return success();
  }
};

} // namespace
