//===- ExecToCpu.cpp - exec buffers to the CPU runtime's slots ------------===//
//
// Each function's exec.buffers become views of the slots that the runtime
// keeps per run context, `loom_rt_slot(slot, bytes) -> memref<?xi8>`
// (loom/common/CodegenAbi.h):
//
//   %arena = call @loom_rt_slot(%c0_i64, %arena_bytes)    // top of function
//   %a = memref.view %arena[%offset][] : memref<?xi8> to memref<64x64xf32>
//   %s = call @loom_rt_slot(%c2_i64, %bytes)              // where %b was
//   %b = memref.view %s[%c0][%n] : memref<?xi8> to memref<?x64xf32>
//
// The arena's call is shared by the function's static-size buffers. A
// dynamic slot is asked for at each of its buffers, with that buffer's
// bytes (whose sizes may only be known there): the runtime grows the slot
// to the largest, which is safe because the buffers of one slot have
// disjoint live ranges.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/cpu/CpuTransforms.h"
#include "dialects/exec/ExecOps.h"
#include "loom/common/CodegenAbi.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;

namespace loom::codegen {

#define GEN_PASS_DEF_EXECTOCPUPASS
#include "compiler/codegen/cpu/Passes.h.inc"

namespace {

constexpr const char *kSlotHook = abi::kRtSlot;

struct ExecToCpuPass : impl::ExecToCpuPassBase<ExecToCpuPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTableCollection symbols;
    for (auto func : module.getOps<func::FuncOp>()) {
      SmallVector<exec::BufferOp> buffers;
      func.walk([&](exec::BufferOp op) { buffers.push_back(op); });
      if (!buffers.empty() && failed(lower(module, func, buffers, symbols)))
        return signalPassFailure();
    }
    // Plans still named (by buffers outside a func.func) stay.
    for (auto plan : llvm::make_early_inc_range(module.getOps<exec::PlanOp>()))
      if (SymbolTable::symbolKnownUseEmpty(plan, module))
        plan.erase();
  }

  LogicalResult lower(ModuleOp module, func::FuncOp func,
                      MutableArrayRef<exec::BufferOp> buffers,
                      SymbolTableCollection &symbols) {
    for (exec::BufferOp op : buffers) {
      if (op.getPlanAttr() != buffers.front().getPlanAttr())
        return op.emitOpError("names plan '")
               << op.getPlan() << "' but another buffer of '" << func.getName()
               << "' names '" << buffers.front().getPlan()
               << "'; the CPU lowering takes one plan per function";
      if (op.getType().getMemorySpace())
        return op.emitOpError("is in memory space ")
               << op.getType().getMemorySpace()
               << "; the CPU runtime's slots are host memory";
    }
    OpBuilder b(func.getContext());
    auto bytesType = MemRefType::get({ShapedType::kDynamic}, b.getI8Type());
    declareRuntimeFunction(
        module, kSlotHook,
        b.getFunctionType({b.getI64Type(), b.getIndexType()}, {bytesType}),
        /*cInterface=*/true);

    // The arena, once, at the top of the function.
    Value arena;
    auto arenaBuffer = llvm::find_if(
        buffers, [](exec::BufferOp op) { return op.getSlot() == 0; });
    if (arenaBuffer != buffers.end()) {
      auto plan = symbols.lookupNearestSymbolFrom<exec::PlanOp>(
          *arenaBuffer, arenaBuffer->getPlanAttr());
      Location loc = func.getLoc();
      b.setInsertionPointToStart(&func.getBody().front());
      Value slot = b.create<arith::ConstantIntOp>(loc, 0, 64);
      Value size = b.create<arith::ConstantIndexOp>(loc, plan.getArena());
      arena = b.create<func::CallOp>(loc, kSlotHook, bytesType,
                                     ValueRange{slot, size})
                  .getResult(0);
    }

    for (exec::BufferOp op : buffers) {
      b.setInsertionPoint(op);
      Location loc = op.getLoc();
      MemRefType type = op.getType();
      Value source = arena, offset;
      if (op.getSlot() == 0) {
        offset = b.create<arith::ConstantIndexOp>(loc, op.getOffset());
      } else {
        // bytes = elements * element size, from the dynamic sizes.
        int64_t staticPart = exec::getElementBytes(type.getElementType());
        for (int64_t d : type.getShape())
          if (!ShapedType::isDynamic(d))
            staticPart *= d;
        Value size = b.create<arith::ConstantIndexOp>(loc, staticPart);
        for (Value d : op.getDynamicSizes())
          size = b.create<arith::MulIOp>(loc, size, d);
        Value slot = b.create<arith::ConstantIntOp>(loc, op.getSlot(), 64);
        source = b.create<func::CallOp>(loc, kSlotHook, bytesType,
                                        ValueRange{slot, size})
                     .getResult(0);
        offset = b.create<arith::ConstantIndexOp>(loc, 0);
      }
      Value view = b.create<memref::ViewOp>(loc, type, source, offset,
                                            op.getDynamicSizes());
      op.getResult().replaceAllUsesWith(view);
      op.erase();
    }
    return success();
  }
};

} // namespace
} // namespace loom::codegen
