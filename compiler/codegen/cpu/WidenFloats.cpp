//===- WidenFloats.cpp - f16/bf16 graph ops computed in f32 ---------------===//
//
// --loom-cpu-widen-floats: the CPU backend stores f16 and bf16 in 16 bits
// and computes in f32. Each graph op that computes on a 16-bit float is
// rebuilt on f32 between casts; data movement (Graph_DataMovement), casts
// and constants stay in 16 bits. The rebuild is generic: the op is cloned
// on the widened operands, its 16-bit float attributes widened, and its
// result types inferred again (InferTypeOpInterface), so an op with an i1
// or i64 result (compare, arg_max) keeps it.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/cpu/CpuTransforms.h"
#include "dialects/graph/GraphDialect.h"
#include "dialects/graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;

namespace loom::codegen {

#define GEN_PASS_DEF_CPUWIDENFLOATSPASS
#include "compiler/codegen/cpu/Passes.h.inc"

bool isNarrowFloat(Type type) {
  Type elem = getElementTypeOrSelf(type);
  return elem.isF16() || elem.isBF16();
}

namespace {

/// `t` with f32 for its 16-bit float element type.
Type widened(Type t) {
  if (!isNarrowFloat(t))
    return t;
  Type f32 = Float32Type::get(t.getContext());
  if (auto shaped = dyn_cast<ShapedType>(t))
    return shaped.clone(f32);
  return f32;
}

/// `attr` with its 16-bit float values or types made f32 (exactly: every
/// f16 and bf16 value is an f32 value); null when it has none.
Attribute widenedAttr(Attribute attr) {
  if (auto f = dyn_cast<FloatAttr>(attr); f && isNarrowFloat(f.getType()))
    return FloatAttr::get(widened(f.getType()), f.getValueAsDouble());
  if (auto t = dyn_cast<TypeAttr>(attr); t && isNarrowFloat(t.getValue()))
    return TypeAttr::get(widened(t.getValue()));
  if (auto d = dyn_cast<DenseFPElementsAttr>(attr);
      d && isNarrowFloat(d.getType()))
    return d.mapValues(
        Float32Type::get(attr.getContext()), [](const APFloat &v) {
          APFloat w = v;
          bool lost;
          w.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lost);
          return w.bitcastToAPInt();
        });
  return {};
}

/// Whether `op` computes on a 16-bit float, so that it is rebuilt in f32.
bool computesOnNarrowFloats(Operation *op) {
  // graph.if and graph.loop only pass values in and out of their regions,
  // whose ops are widened one by one.
  if (!isa<graph::GraphDialect>(op->getDialect()) || isa<graph::CastOp>(op) ||
      op->hasTrait<OpTrait::ConstantLike>() ||
      op->hasTrait<graph::GraphTrait::DataMovement>() ||
      op->getNumRegions() > 0 || op->hasTrait<OpTrait::IsTerminator>())
    return false;
  auto narrow = [](Value v) { return isNarrowFloat(v.getType()); };
  return llvm::any_of(op->getOperands(), narrow) ||
         llvm::any_of(op->getResults(), narrow) ||
         llvm::any_of(op->getAttrs(), [](NamedAttribute a) {
           return static_cast<bool>(widenedAttr(a.getValue()));
         });
}

struct CpuWidenFloatsPass : impl::CpuWidenFloatsPassBase<CpuWidenFloatsPass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (computesOnNarrowFloats(op))
        ops.push_back(op);
    });
    for (Operation *op : ops)
      if (failed(widen(op)))
        return signalPassFailure();
  }

  LogicalResult widen(Operation *op) {
    auto infer = dyn_cast<InferTypeOpInterface>(op);
    if (!infer)
      return op->emitOpError("computes on f16/bf16, and the CPU backend "
                             "cannot compute it in f32: its result types "
                             "are not inferred");
    // A cast per user (not one per value shared by its users): fusion then
    // puts each into its user's kernel, and no f32 copy of a 16-bit value
    // crosses a kernel boundary (except into a matmul or conv, which take
    // no prologue).
    IRMapping map;
    OpBuilder b(op);
    for (Value v : op->getOperands())
      if (isNarrowFloat(v.getType()) && !map.contains(v))
        map.map(v, b.create<graph::CastOp>(v.getLoc(), widened(v.getType()), v,
                                           TypeAttr::get(b.getF32Type())));
    Operation *wideOp = b.clone(*op, map);
    for (NamedAttribute a : op->getAttrs())
      if (Attribute w = widenedAttr(a.getValue()))
        wideOp->setAttr(a.getName(), w);
    SmallVector<Type> types;
    if (failed(infer.inferReturnTypes(
            op->getContext(), op->getLoc(), wideOp->getOperands(),
            wideOp->getAttrDictionary(), wideOp->getPropertiesStorage(),
            wideOp->getRegions(), types))) {
      wideOp->erase();
      return op->emitOpError("cannot be computed in f32 on the CPU");
    }
    b.setInsertionPointAfter(wideOp);
    for (auto [old, result, type] :
         llvm::zip_equal(op->getResults(), wideOp->getResults(), types)) {
      assert((old.getType() == type || isNarrowFloat(old.getType())) &&
             "widening changed a result that is not a 16-bit float");
      result.setType(type);
      Value replacement = result;
      if (old.getType() != type)
        replacement = b.create<graph::CastOp>(
            op->getLoc(), old.getType(), result,
            TypeAttr::get(getElementTypeOrSelf(old.getType())));
      old.replaceAllUsesWith(replacement);
    }
    op->erase();
    return success();
  }
};

} // namespace
} // namespace loom::codegen
