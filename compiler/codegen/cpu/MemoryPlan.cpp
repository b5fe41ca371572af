//===- MemoryPlan.cpp - liveness-based buffer plan for the CPU code -------===//
//
// After bufferization every intermediate is a memref.alloc, freed at the end
// of the function. This pass plans them instead:
//
//  * A buffer's live range runs from its alloc to the last use of it or of
//    any view of it, in program order. Buffers that escape (returned,
//    passed to an unknown call) are left alone.
//  * Static-size buffers get offsets in one arena, first-fit in decreasing
//    size: two buffers share bytes only when their live ranges are
//    disjoint. The arena's size is the planned peak of the static part.
//  * Dynamic-size buffers (a dynamic batch) get slots: buffers with
//    disjoint live ranges share a slot, whose size at run time is the
//    largest of them.
//  * Buffers allocated inside a region (a graph.loop body, now an
//    scf.while) are not planned: they live for one iteration or are
//    carried to the next, and stay with malloc and the deallocation
//    pipeline. A planned buffer used inside a region is live over the
//    whole region op.
//
// The arena is slot 0. The plan becomes IR: `exec.plan @f_plan` declares
// the slots and each planned alloc becomes an `exec.buffer` at its place
// (its deallocs go). --loom-exec-to-cpu (ExecToCpu.cpp) then asks the
// runtime for the slots; a GPU backend can run the same plan as one device
// arena. The plan is also recorded, for people, in the module attribute
// `loom.memory_plan`.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/cpu/CpuTransforms.h"
#include "dialects/exec/ExecOps.h"
#include "passes/MemoryPlan/ArenaPlanner.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include <algorithm>

using namespace mlir;

namespace loom::codegen {

#define GEN_PASS_DEF_CPUMEMORYPLANPASS
#include "compiler/codegen/cpu/Passes.h.inc"

namespace {

struct Buffer {
  memref::AllocOp alloc; // replaced by an exec.buffer
  MemRefType type;
  std::string source;          // "@node" or ""
  int64_t first = 0, last = 0; // positions in the block
  int64_t bytes = -1;          // -1: dynamic
  int64_t slot = 0, offset = 0;
  SmallVector<Operation *> deallocs;
};

/// The live range of `alloc` and its deallocs; false when it escapes.
bool liveRange(memref::AllocOp alloc, Block &block,
               const DenseMap<Operation *, int64_t> &position, Buffer &b) {
  b.first = b.last = position.lookup(alloc);
  SmallVector<Value> worklist = {alloc.getResult()};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (isa<memref::DeallocOp>(user)) {
        b.deallocs.push_back(user);
        continue;
      }
      // Returned, or taken apart into pointers (a dynamic-ownership
      // dealloc would free it through them): left to malloc.
      if (isa<func::ReturnOp, memref::ExtractStridedMetadataOp,
              memref::ExtractAlignedPointerAsIndexOp>(user))
        return false;
      if (auto call = dyn_cast<func::CallOp>(user))
        if (!call.getCallee().starts_with("loom_"))
          return false;
      // Any other op that hands out a memref (scf.yield into a loop's
      // results, arith.select, ...) may carry the buffer past the range
      // seen here: leave it to malloc.
      bool viewLike = isa<ViewLikeOpInterface, memref::CastOp>(user);
      if (!viewLike && !isa<func::CallOp>(user) &&
          (llvm::any_of(user->getResultTypes(),
                        [](Type t) { return isa<BaseMemRefType>(t); }) ||
           isa<RegionBranchTerminatorOpInterface>(user)))
        return false;
      if (auto view = dyn_cast<ViewLikeOpInterface>(user))
        if (view.getViewSource() == v)
          for (Value r : user->getResults())
            worklist.push_back(r);
      // The memref.cast feeding a library call is a view too.
      if (isa<memref::CastOp>(user))
        worklist.push_back(user->getResult(0));
      Operation *top = block.findAncestorOpInBlock(*user);
      if (!top)
        return false;
      b.last = std::max(b.last, position.lookup(top));
    }
  }
  return true;
}

struct CpuMemoryPlanPass : impl::CpuMemoryPlanPassBase<CpuMemoryPlanPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (alignment <= 0 || !llvm::isPowerOf2_64(alignment)) {
      module.emitError("loom-cpu-memory-plan: alignment must be a power of "
                       "two, got ")
          << alignment;
      return signalPassFailure();
    }
    SymbolTable symbols(module);
    SmallVector<Attribute> plans;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isDeclaration() && !func.isPrivate())
        plans.push_back(plan(symbols, func));
    module->setAttr(kMemoryPlanAttr,
                    ArrayAttr::get(module.getContext(), plans));
  }

  DictionaryAttr plan(SymbolTable &symbols, func::FuncOp func) {
    MLIRContext *ctx = func.getContext();
    Block &block = func.getBody().front();
    DenseMap<Operation *, int64_t> position;
    int64_t i = 0;
    for (Operation &op : block)
      position[&op] = i++;

    std::vector<Buffer> buffers;
    for (auto alloc : block.getOps<memref::AllocOp>()) {
      MemRefType type = alloc.getType();
      Type element = type.getElementType();
      if (!type.getLayout().isIdentity() || type.getMemorySpace() ||
          !element.isIntOrIndexOrFloat())
        continue;
      Buffer b;
      b.alloc = alloc;
      b.type = type;
      b.source = sourceOf(alloc.getLoc());
      if (!liveRange(alloc, block, position, b))
        continue;
      if (type.hasStaticShape())
        b.bytes = memplan::alignUp(exec::getStaticBytes(type), alignment);
      buffers.push_back(std::move(b));
    }

    // Static buffers: offsets in the arena, largest first, first fit
    // (passes/MemoryPlan/ArenaPlanner.h, shared with --loom-recompute).
    std::vector<Buffer *> fixed, dynamic;
    for (Buffer &b : buffers)
      (b.bytes >= 0 ? fixed : dynamic).push_back(&b);
    std::vector<memplan::LiveBuffer> live;
    for (Buffer *b : fixed)
      live.push_back({b->first, b->last, b->bytes});
    memplan::ArenaPlan arenaPlan = memplan::planArena(live);
    for (auto [b, offset] : llvm::zip(fixed, arenaPlan.offsets)) {
      b->slot = 0;
      b->offset = offset;
    }
    int64_t arena = arenaPlan.peak, unshared = arenaPlan.unshared;
    // Dynamic buffers: slots shared by disjoint live ranges.
    std::stable_sort(dynamic.begin(), dynamic.end(),
                     [](Buffer *a, Buffer *b) { return a->first < b->first; });
    std::vector<int64_t> slotFreeAfter; // slot i+1 is free after this
    for (Buffer *b : dynamic) {
      size_t s = 0;
      while (s < slotFreeAfter.size() && slotFreeAfter[s] >= b->first)
        ++s;
      if (s == slotFreeAfter.size())
        slotFreeAfter.push_back(0);
      slotFreeAfter[s] = b->last;
      b->slot = static_cast<int64_t>(s) + 1;
    }

    if (!buffers.empty())
      rewrite(symbols, func, buffers, arena,
              static_cast<int64_t>(slotFreeAfter.size()));
    return report(ctx, func, buffers, arena, unshared,
                  static_cast<int64_t>(slotFreeAfter.size()));
  }

  /// `exec.plan @<func>_plan` before `func`, and an exec.buffer for each
  /// planned alloc.
  void rewrite(SymbolTable &symbols, func::FuncOp func,
               std::vector<Buffer> &buffers, int64_t arena, int64_t slots) {
    OpBuilder b(func);
    auto plan =
        b.create<exec::PlanOp>(func.getLoc(), (func.getName() + "_plan").str(),
                               arena, slots, alignment);
    // Renamed if the name is taken.
    symbols.insert(plan, Block::iterator(func));
    StringRef planName = plan.getSymName();
    for (Buffer &buf : buffers) {
      memref::AllocOp alloc = buf.alloc;
      b.setInsertionPoint(alloc);
      Value buffer = b.create<exec::BufferOp>(
          alloc.getLoc(), alloc.getType(), planName, buf.slot,
          buf.bytes >= 0 ? buf.offset : 0, alloc.getDynamicSizes());
      alloc.getResult().replaceAllUsesWith(buffer);
      for (Operation *d : buf.deallocs)
        d->erase();
      alloc.erase();
    }
  }

  DictionaryAttr report(MLIRContext *ctx, func::FuncOp func,
                        const std::vector<Buffer> &buffers, int64_t arena,
                        int64_t unshared, int64_t slots) {
    Builder b(ctx);
    SmallVector<Attribute> list;
    for (const Buffer &buf : buffers) {
      list.push_back(b.getDictionaryAttr({
          b.getNamedAttr("type", TypeAttr::get(buf.type)),
          b.getNamedAttr("bytes", b.getI64IntegerAttr(buf.bytes)),
          b.getNamedAttr("slot", b.getI64IntegerAttr(buf.slot)),
          b.getNamedAttr("offset", b.getI64IntegerAttr(buf.offset)),
          b.getNamedAttr("first", b.getI64IntegerAttr(buf.first)),
          b.getNamedAttr("last", b.getI64IntegerAttr(buf.last)),
          b.getNamedAttr("source", b.getStringAttr(buf.source)),
      }));
    }
    return b.getDictionaryAttr({
        b.getNamedAttr("function", b.getStringAttr(func.getName())),
        b.getNamedAttr("arena_bytes", b.getI64IntegerAttr(arena)),
        b.getNamedAttr("unshared_bytes", b.getI64IntegerAttr(unshared)),
        b.getNamedAttr("dynamic_slots", b.getI64IntegerAttr(slots)),
        b.getNamedAttr("buffers", b.getArrayAttr(list)),
    });
  }
};

} // namespace
} // namespace loom::codegen
