//===- Collectives.cpp - mesh collectives to runtime calls ----------------===//
//
// `--loom-cpu-collectives` (Passes.td): each upstream mesh collective on
// tensors becomes `loom_rt_collective_start_T` where it stands and
// `loom_rt_collective_wait_T` right before its first use, so that the
// collective overlaps the code in between. The ABI is in
// docs/distributed.md.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/MeshAbi.h"
#include "compiler/codegen/cpu/CpuTransforms.h"
#include "loom/common/CodegenAbi.h"
#include "loom/common/DType.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Mesh/IR/MeshDialect.h"
#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "mlir/IR/Builders.h"

using namespace mlir;

namespace loom::codegen {

#define GEN_PASS_DEF_CPUCOLLECTIVESPASS
#include "compiler/codegen/cpu/Passes.h.inc"

namespace {

/// The ABI's dtype (loom_dtype, ONNX's numbering) and function suffix of
/// an element type; nullopt when the runtime has none.
std::optional<std::pair<int64_t, StringRef>> dtypeOf(Type t) {
  if (t.isF32())
    return std::pair<int64_t, StringRef>{dtypes::kF32, "f32"};
  if (t.isF16())
    return std::pair<int64_t, StringRef>{dtypes::kF16, "f16"};
  if (t.isBF16())
    return std::pair<int64_t, StringRef>{dtypes::kBF16, "bf16"};
  if (t.isF64())
    return std::pair<int64_t, StringRef>{dtypes::kF64, "f64"};
  if (t.isInteger(64))
    return std::pair<int64_t, StringRef>{dtypes::kI64, "i64"};
  if (t.isInteger(32))
    return std::pair<int64_t, StringRef>{dtypes::kI32, "i32"};
  if (t.isInteger(8))
    return std::pair<int64_t, StringRef>{dtypes::kI8, "i8"};
  return std::nullopt;
}

struct CpuCollectivesPass : impl::CpuCollectivesPassBase<CpuCollectivesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Operation *> collectives;
    WalkResult walk = module.walk([&](Operation *op) {
      if (!isa<mesh::MeshDialect>(op->getDialect()) || isa<mesh::MeshOp>(op))
        return WalkResult::advance();
      if (!isa<mesh::AllReduceOp, mesh::AllGatherOp, mesh::ReduceScatterOp,
               mesh::AllSliceOp, mesh::BroadcastOp>(op)) {
        op->emitError("the CPU backend does not run '")
            << op->getName() << "' (it runs all_reduce, all_gather, "
            << "reduce_scatter, all_slice and broadcast)";
        return WalkResult::interrupt();
      }
      collectives.push_back(op);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    for (Operation *op : collectives)
      if (failed(lower(module, op)))
        return signalPassFailure();
    for (auto m : llvm::make_early_inc_range(module.getOps<mesh::MeshOp>()))
      m.erase();
  }

  /// The mesh axes of `op` as a bit mask.
  static int64_t axesMask(ArrayRef<int16_t> axes) {
    int64_t mask = 0;
    for (int16_t a : axes)
      mask |= int64_t(1) << a;
    return mask;
  }

  LogicalResult lower(ModuleOp module, Operation *op) {
    int64_t kind = 0, code = 0;
    ArrayRef<int16_t> axes;
    if (auto r = dyn_cast<mesh::AllReduceOp>(op)) {
      kind = abi::kAllReduce;
      code = reductionCode(r.getReduction());
      axes = r.getMeshAxes();
    } else if (auto r = dyn_cast<mesh::ReduceScatterOp>(op)) {
      kind = abi::kReduceScatter;
      code = reductionCode(r.getReduction());
      axes = r.getMeshAxes();
      if (r.getScatterAxis().getSExtValue() != 0)
        return op->emitError("the CPU backend scatters dim 0 only");
    } else if (auto g = dyn_cast<mesh::AllGatherOp>(op)) {
      kind = abi::kAllGather;
      axes = g.getMeshAxes();
      if (g.getGatherAxis().getSExtValue() != 0)
        return op->emitError("the CPU backend gathers along dim 0 only");
    } else if (auto s = dyn_cast<mesh::AllSliceOp>(op)) {
      kind = abi::kAllSlice;
      axes = s.getMeshAxes();
      if (s.getSliceAxis().getSExtValue() != 0)
        return op->emitError("the CPU backend slices dim 0 only");
    } else {
      auto bc = cast<mesh::BroadcastOp>(op);
      kind = abi::kBroadcast;
      axes = bc.getMeshAxes();
      ArrayRef<int64_t> root = bc.getRoot();
      if (root.size() != 1 || !bc.getRootDynamic().empty())
        return op->emitError("the CPU backend broadcasts from a static root "
                             "on one mesh axis only");
      code = root[0];
    }
    if (code < 0)
      return op->emitError("the CPU backend reduces with sum, max, min or "
                           "product only");
    Value input = op->getOperand(0);
    auto inType = dyn_cast<RankedTensorType>(input.getType());
    auto outType = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!inType || !outType || !inType.hasStaticShape() ||
        !outType.hasStaticShape())
      return op->emitError("the CPU backend runs collectives on static "
                           "shapes only");
    if (inType.getElementType() != outType.getElementType())
      return op->emitError("the CPU backend reduces in the input's type");
    auto dtype = dtypeOf(inType.getElementType());
    if (!dtype)
      return op->emitError("no collective of the runtime takes ")
             << inType.getElementType();

    OpBuilder b(op);
    Location loc = op->getLoc();
    auto inMem = MemRefType::get(inType.getShape(), inType.getElementType());
    auto outMem = MemRefType::get(outType.getShape(), outType.getElementType());
    auto unranked = UnrankedMemRefType::get(inType.getElementType(), 0);
    Type i64 = b.getI64Type();
    std::string start = (abi::kRtCollectiveStartPrefix + dtype->second).str();
    std::string wait = (abi::kRtCollectiveWaitPrefix + dtype->second).str();
    declareRuntimeFunction(
        module, start,
        b.getFunctionType({unranked, unranked, i64, i64, i64, i64}, {i64}),
        /*cInterface=*/true);
    declareRuntimeFunction(module, wait,
                           b.getFunctionType({i64, unranked, unranked}, {}),
                           /*cInterface=*/true);

    Value in = b.create<bufferization::ToMemrefOp>(loc, inMem, input,
                                                   /*read_only=*/true);
    Value out = b.create<memref::AllocOp>(loc, outMem, b.getI64IntegerAttr(64));
    Value inU = b.create<memref::CastOp>(loc, unranked, in);
    Value outU = b.create<memref::CastOp>(loc, unranked, out);
    auto constant = [&](int64_t v) -> Value {
      return b.create<arith::ConstantIntOp>(loc, v, 64);
    };
    Value handle =
        b.create<func::CallOp>(
             loc, start, TypeRange{i64},
             ValueRange{inU, outU, constant(kind), constant(dtype->first),
                        constant(code), constant(axesMask(axes))})
            .getResult(0);

    // The wait goes right before the first op (in this block) that uses
    // the result, or before the terminator.
    Block *block = op->getBlock();
    Operation *first = block->getTerminator();
    for (Operation *user : op->getResult(0).getUsers()) {
      Operation *at = block->findAncestorOpInBlock(*user);
      if (at && at->isBeforeInBlock(first))
        first = at;
    }
    b.setInsertionPoint(first);
    b.create<func::CallOp>(loc, wait, TypeRange{},
                           ValueRange{handle, inU, outU});
    Value result = b.create<bufferization::ToTensorOp>(
        loc, outType, out, /*restrict=*/true, /*writable=*/true);
    op->getResult(0).replaceAllUsesWith(result);
    op->erase();
    return success();
  }
};

} // namespace

} // namespace loom::codegen
