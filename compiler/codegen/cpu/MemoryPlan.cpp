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
//
// The arena is slot 0. Each slot comes from the runtime through
// `loom_rt_slot(slot, bytes) -> memref<?xi8>`, which keeps the slots of a
// run context across runs (runtime/src/Runtime.cpp): after the first run
// nothing is allocated, and memory stays bounded by the plan. The plan is
// recorded in the module attribute `loom.memory_plan`.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/cpu/CpuTransforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include <algorithm>

using namespace mlir;

namespace loom::codegen {
namespace {

constexpr int64_t kAlignment = 64;
constexpr const char *kSlotHook = "loom_rt_slot";

int64_t alignUp(int64_t n) {
  return (n + kAlignment - 1) / kAlignment * kAlignment;
}

/// Bytes per element as stored (i1 takes a byte).
int64_t elementBytes(Type t) {
  if (t.isIndex())
    return 8;
  return std::max<int64_t>(1, (t.getIntOrFloatBitWidth() + 7) / 8);
}

struct Buffer {
  memref::AllocOp alloc; // erased by the rewrite
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

bool overlaps(const Buffer &a, const Buffer &b) {
  return a.first <= b.last && b.first <= a.last;
}

struct CpuMemoryPlanPass
    : PassWrapper<CpuMemoryPlanPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CpuMemoryPlanPass)
  StringRef getArgument() const final { return "loom-cpu-memory-plan"; }
  StringRef getDescription() const final {
    return "plan intermediate buffers into a reused arena and slots";
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Attribute> plans;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isDeclaration() && !func.isPrivate())
        plans.push_back(plan(module, func));
    module->setAttr(kMemoryPlanAttr,
                    ArrayAttr::get(module.getContext(), plans));
  }

  DictionaryAttr plan(ModuleOp module, func::FuncOp func) {
    MLIRContext *ctx = func.getContext();
    Block &block = func.getBody().front();
    DenseMap<Operation *, int64_t> position;
    int64_t i = 0;
    for (Operation &op : block)
      position[&op] = i++;

    std::vector<Buffer> buffers;
    for (auto alloc : block.getOps<memref::AllocOp>()) {
      MemRefType type = alloc.getType();
      if (!type.getLayout().isIdentity() || type.getMemorySpace())
        continue;
      Buffer b;
      b.alloc = alloc;
      b.type = type;
      b.source = sourceOf(alloc.getLoc());
      if (!liveRange(alloc, block, position, b))
        continue;
      if (type.hasStaticShape())
        b.bytes = alignUp(type.getNumElements() *
                          elementBytes(type.getElementType()));
      buffers.push_back(std::move(b));
    }

    // Static buffers: offsets in the arena, largest first, first fit.
    std::vector<Buffer *> fixed, dynamic;
    for (Buffer &b : buffers)
      (b.bytes >= 0 ? fixed : dynamic).push_back(&b);
    std::stable_sort(fixed.begin(), fixed.end(),
                     [](Buffer *a, Buffer *b) { return a->bytes > b->bytes; });
    int64_t arena = 0, unshared = 0;
    std::vector<Buffer *> placed;
    for (Buffer *b : fixed) {
      std::vector<std::pair<int64_t, int64_t>> taken;
      for (Buffer *p : placed)
        if (overlaps(*p, *b))
          taken.push_back({p->offset, p->offset + p->bytes});
      std::sort(taken.begin(), taken.end());
      int64_t offset = 0;
      for (auto [begin, end] : taken) {
        if (offset + b->bytes <= begin)
          break;
        offset = std::max(offset, end);
      }
      b->slot = 0;
      b->offset = offset;
      arena = std::max(arena, offset + b->bytes);
      unshared += b->bytes;
      placed.push_back(b);
    }
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
      rewrite(module, func, buffers, arena);
    return report(ctx, func, buffers, arena, unshared,
                  static_cast<int64_t>(slotFreeAfter.size()));
  }

  void rewrite(ModuleOp module, func::FuncOp func, std::vector<Buffer> &buffers,
               int64_t arena) {
    MLIRContext *ctx = func.getContext();
    OpBuilder b(ctx);
    auto bytesType = MemRefType::get({ShapedType::kDynamic}, b.getI8Type());
    declareRuntimeFunction(
        module, kSlotHook,
        b.getFunctionType({b.getI64Type(), b.getIndexType()}, {bytesType}),
        /*cInterface=*/true);
    Location loc = func.getLoc();
    Value arenaBuffer;
    if (arena > 0) {
      b.setInsertionPointToStart(&func.getBody().front());
      Value slot = b.create<arith::ConstantIntOp>(loc, 0, 64);
      Value size = b.create<arith::ConstantIndexOp>(loc, arena);
      arenaBuffer = b.create<func::CallOp>(loc, kSlotHook, bytesType,
                                           ValueRange{slot, size})
                        .getResult(0);
    }
    for (Buffer &buf : buffers) {
      memref::AllocOp alloc = buf.alloc;
      b.setInsertionPoint(alloc);
      Location l = alloc.getLoc();
      Value source = arenaBuffer, offset;
      if (buf.bytes >= 0) {
        offset = b.create<arith::ConstantIndexOp>(l, buf.offset);
      } else {
        // bytes = elements * element size, from the alloc's dynamic sizes.
        MemRefType type = alloc.getType();
        int64_t staticPart = elementBytes(type.getElementType());
        for (int64_t d : type.getShape())
          if (!ShapedType::isDynamic(d))
            staticPart *= d;
        Value size = b.create<arith::ConstantIndexOp>(l, staticPart);
        for (Value d : alloc.getDynamicSizes())
          size = b.create<arith::MulIOp>(l, size, d);
        Value slot = b.create<arith::ConstantIntOp>(l, buf.slot, 64);
        source = b.create<func::CallOp>(l, kSlotHook, bytesType,
                                        ValueRange{slot, size})
                     .getResult(0);
        offset = b.create<arith::ConstantIndexOp>(l, 0);
      }
      Value view = b.create<memref::ViewOp>(l, alloc.getType(), source, offset,
                                            alloc.getDynamicSizes());
      alloc.getResult().replaceAllUsesWith(view);
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

std::unique_ptr<Pass> createCpuMemoryPlanPass() {
  return std::make_unique<CpuMemoryPlanPass>();
}

} // namespace loom::codegen
