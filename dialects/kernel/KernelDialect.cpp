//===- KernelDialect.cpp - the kernel dialect and its verifiers -----------===//

#include "dialects/kernel/KernelDialect.h"
#include "dialects/kernel/KernelOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace loom::kernel;

#include "dialects/kernel/KernelDialect.cpp.inc"
#include "dialects/kernel/KernelEnums.cpp.inc"

void KernelDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/kernel/KernelOps.cpp.inc"
      >();
}

YieldOp FusionOp::getYield() {
  return cast<YieldOp>(getBody().front().getTerminator());
}

/// Whether `op` (or an op nested in it) allocates, frees, reads or writes
/// a buffer, or has effects it does not declare. Effects on no value -- the
/// abstract write of a run-time check such as cf.assert, which lowerings
/// of graph ops emit inside regions -- do not count.
static bool touchesMemory(Operation *op) {
  if (isMemoryEffectFree(op))
    return false;
  auto iface = dyn_cast<MemoryEffectOpInterface>(op);
  bool recursive = op->hasTrait<OpTrait::HasRecursiveMemoryEffects>();
  if (!iface && !recursive)
    return true;
  if (iface) {
    SmallVector<MemoryEffects::EffectInstance> effects;
    iface.getEffects(effects);
    for (const MemoryEffects::EffectInstance &e : effects)
      if (e.getValue() ||
          isa<MemoryEffects::Allocate, MemoryEffects::Free>(e.getEffect()))
        return true;
  }
  if (recursive)
    for (Region &region : op->getRegions())
      for (Operation &nested : region.getOps())
        if (touchesMemory(&nested))
          return true;
  return false;
}

LogicalResult FusionOp::canonicalize(FusionOp op, PatternRewriter &rewriter) {
  Block &body = op.getBody().front();
  if (body.getOperations().size() != 1)
    return rewriter.notifyMatchFailure(op, "the body computes something");
  // Only the terminator is left, so it yields block arguments.
  SmallVector<Value> forwarded;
  for (Value v : op.getYield().getValues())
    forwarded.push_back(op.getInputs()[cast<BlockArgument>(v).getArgNumber()]);
  rewriter.replaceOp(op, forwarded);
  return success();
}

LogicalResult FusionOp::verify() {
  Block &body = getBody().front();
  // fusion_args: one block argument per operand, of the same type.
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("has ")
           << getInputs().size() << " operands but its body has "
           << body.getNumArguments() << " arguments";
  for (auto [i, operand, arg] :
       llvm::enumerate(getInputs(), body.getArguments()))
    if (operand.getType() != arg.getType())
      return emitOpError("body argument #")
             << i << " has type " << arg.getType() << " but operand #" << i
             << " has type " << operand.getType();
  // fusion_yield: the body ends with kernel.yield of the results' types.
  auto yield = dyn_cast_or_null<YieldOp>(body.empty() ? nullptr : &body.back());
  if (!yield)
    return emitOpError("body must end with 'kernel.yield'");
  if (yield.getValues().size() != getNumResults())
    return emitOpError("has ")
           << getNumResults() << " results but its body yields "
           << yield.getValues().size() << " values";
  for (auto [i, result, value] :
       llvm::enumerate(getResults(), yield.getValues()))
    if (result.getType() != value.getType())
      return emitOpError("result #")
             << i << " has type " << result.getType() << " but the body yields "
             << value.getType();
  // fusion_nonempty: a region computes something.
  if (body.getOperations().size() < 2)
    return emitOpError("body must hold at least one op before 'kernel.yield'");
  // fusion_pure: the body touches no memory.
  for (Operation &op : body.without_terminator())
    if (touchesMemory(&op))
      return op.emitOpError("has side effects and cannot be in a "
                            "'kernel.fusion' body");
  return success();
}

#define GET_OP_CLASSES
#include "dialects/kernel/KernelOps.cpp.inc"
