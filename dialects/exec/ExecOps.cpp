//===- ExecOps.cpp - exec op verifiers ------------------------------------===//
//
// Each rule is tagged (`buffer_c3`) and exercised by
// test/dialects/exec/invalid.mlir.
//
//===----------------------------------------------------------------------===//

#include "dialects/exec/ExecOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace loom::exec;

int64_t loom::exec::getElementBytes(Type type) {
  if (type.isIndex())
    return 8;
  return std::max<int64_t>(1, (type.getIntOrFloatBitWidth() + 7) / 8);
}

int64_t loom::exec::getStaticBytes(MemRefType type) {
  return type.getNumElements() * getElementBytes(type.getElementType());
}

//===----------------------------------------------------------------------===//
// PlanOp
//===----------------------------------------------------------------------===//

LogicalResult PlanOp::verify() {
  // plan_c1: the arena has a size.
  if (getArena() < 0)
    return emitOpError("arena must be >= 0 bytes, got ") << getArena();
  // plan_c2: a count of dynamic slots.
  if (getDynamicSlots() < 0)
    return emitOpError("dynamic_slots must be >= 0, got ") << getDynamicSlots();
  // plan_c3: the alignment is a power of two.
  if (getAlignment() <= 0 || !llvm::isPowerOf2_64(getAlignment()))
    return emitOpError("alignment must be a power of two, got ")
           << getAlignment();
  return success();
}

//===----------------------------------------------------------------------===//
// BufferOp
//===----------------------------------------------------------------------===//

LogicalResult BufferOp::verify() {
  MemRefType type = getType();
  // buffer_c1: contiguous bytes, the identity layout.
  if (!type.getLayout().isIdentity())
    return emitOpError("needs the identity layout, got ") << type;
  // buffer_c2: one size operand per dynamic dim.
  if (static_cast<int64_t>(getDynamicSizes().size()) !=
      type.getNumDynamicDims())
    return emitOpError("has ")
           << getDynamicSizes().size() << " size operands for "
           << type.getNumDynamicDims() << " dynamic dims of " << type;
  return success();
}

LogicalResult BufferOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  // buffer_c3: the plan exists.
  auto plan = symbolTable.lookupNearestSymbolFrom<PlanOp>(*this, getPlanAttr());
  if (!plan)
    return emitOpError("'") << getPlan() << "' is not an exec.plan";
  int64_t slot = getSlot(), offset = getOffset();
  // buffer_c4: the slot exists.
  if (!plan.hasSlot(slot))
    return emitOpError("slot ") << slot << " is not a slot of '" << getPlan()
                                << "' (0 to " << plan.getDynamicSlots() << ")";
  // buffer_c5: the offset is aligned.
  if (offset < 0 || offset % plan.getAlignment() != 0)
    return emitOpError("offset ")
           << offset << " is not a multiple of the alignment "
           << plan.getAlignment();
  MemRefType type = getType();
  if (type.hasStaticShape()) {
    // buffer_c6: a static-size buffer lies in the arena.
    if (slot != 0)
      return emitOpError("static-size buffer in dynamic slot ") << slot;
    // buffer_c7: ... and fits in it.
    int64_t bytes = getStaticBytes(type);
    if (offset + bytes > plan.getArena())
      return emitOpError("bytes [")
             << offset << ", " << offset + bytes << ") do not fit in the "
             << plan.getArena() << "-byte arena";
    return success();
  }
  // buffer_c8: a dynamic-size buffer only in a dynamic slot ...
  if (slot == 0)
    return emitOpError("dynamic-size buffer in the arena (slot 0)");
  // buffer_c9: ... which it starts.
  if (offset != 0)
    return emitOpError("dynamic-size buffer at offset ")
           << offset << " of its slot, not 0";
  return success();
}

#define GET_OP_CLASSES
#include "dialects/exec/ExecOps.cpp.inc"
