//===- CudaEmitCollective.cpp - mesh collectives as CUDA program steps ----===//
//
// The sharding passes leave MLIR's upstream `mesh` collectives between the
// kernel.fusion regions of a data, tensor or ZeRO parallel training step.
// The CUDA program runs each as a Collective step: the kind, element type,
// reduction (or broadcast root) and mesh axes of the op, as the CPU
// backend passes them to the runtime (loom/common/CodegenAbi.h,
// compiler/codegen/cpu/Collectives.cpp), so that both targets run the same
// collectives. The driver (CudaEmitter.cpp) gives each its buffers and
// places its start and its wait.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/MeshAbi.h"
#include "compiler/codegen/cuda/CudaEmitInternal.h"
#include "dialects/graph/LocationString.h"
#include "loom/common/CodegenAbi.h"

#include "mlir/Dialect/Mesh/IR/MeshDialect.h"
#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using loom::graph::locationString;

namespace loom::codegen::cuda::detail {

namespace {

/// Whether the runtime's collectives take elements of `type`
/// (f32, f16, bf16, f64, i64, i32, i8: docs/distributed.md, "What the
/// generated code calls").
bool collectiveElement(Type type) {
  return type.isF32() || type.isF16() || type.isBF16() || type.isF64() ||
         type.isInteger(64) || type.isInteger(32) || type.isInteger(8);
}

int64_t axesMask(ArrayRef<int16_t> axes) {
  int64_t mask = 0;
  for (int16_t a : axes)
    mask |= int64_t(1) << a;
  return mask;
}

std::string typeText(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return text;
}

} // namespace

bool isMeshCollective(Operation *op) {
  return isa<mesh::AllReduceOp, mesh::AllGatherOp, mesh::ReduceScatterOp,
             mesh::BroadcastOp, mesh::AllSliceOp>(op);
}

FailureOr<Collective> collectiveOf(Operation *op) {
  std::string where = " [" + locationString(op->getLoc()) + "]";
  auto error = [&](const Twine &why) {
    return op->emitError("CUDA codegen: ")
           << op->getName() << ": " << why << where;
  };
  Collective c;
  ArrayRef<int16_t> axes;
  std::string detail;
  if (auto r = dyn_cast<mesh::AllReduceOp>(op)) {
    c.kind = abi::kAllReduce;
    c.op = reductionCode(r.getReduction());
    axes = r.getMeshAxes();
    detail = " (" + mesh::stringifyReductionKind(r.getReduction()).str() + ")";
  } else if (auto r = dyn_cast<mesh::ReduceScatterOp>(op)) {
    c.kind = abi::kReduceScatter;
    c.op = reductionCode(r.getReduction());
    axes = r.getMeshAxes();
    detail = " (" + mesh::stringifyReductionKind(r.getReduction()).str() + ")";
    if (r.getScatterAxis().getSExtValue() != 0)
      return error("the CUDA target scatters along dim 0 only");
  } else if (auto g = dyn_cast<mesh::AllGatherOp>(op)) {
    c.kind = abi::kAllGather;
    axes = g.getMeshAxes();
    if (g.getGatherAxis().getSExtValue() != 0)
      return error("the CUDA target gathers along dim 0 only");
  } else if (auto s = dyn_cast<mesh::AllSliceOp>(op)) {
    c.kind = abi::kAllSlice;
    axes = s.getMeshAxes();
    if (s.getSliceAxis().getSExtValue() != 0)
      return error("the CUDA target slices along dim 0 only");
  } else if (auto b = dyn_cast<mesh::BroadcastOp>(op)) {
    c.kind = abi::kBroadcast;
    axes = b.getMeshAxes();
    ArrayRef<int64_t> root = b.getRoot();
    if (root.size() != 1 || !b.getRootDynamic().empty())
      return error("the CUDA target broadcasts from a static root on one "
                   "mesh axis only");
    c.op = root[0];
    detail = " (root " + std::to_string(c.op) + ")";
  } else {
    return error("the CUDA target runs all_reduce, all_gather, "
                 "reduce_scatter, broadcast and all_slice only");
  }
  if (c.op < 0)
    return error("the CUDA target reduces with sum, max, min or product "
                 "only");
  auto inType = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  auto outType = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!inType || !outType || !inType.hasStaticShape() ||
      !outType.hasStaticShape())
    return error("the CUDA target runs collectives on static shapes only");
  if (inType.getElementType() != outType.getElementType())
    return error("the result's element type is not the operand's");
  if (!collectiveElement(inType.getElementType()))
    return error("no collective of the runtime takes " +
                 typeText(inType.getElementType()) +
                 " (f32, f16, bf16, f64, i64, i32, i8)");
  c.axes = axesMask(axes);
  c.elementType = typeText(inType.getElementType());
  std::string axesText;
  for (int16_t a : axes)
    axesText += (axesText.empty() ? "" : ", ") + std::to_string(a);
  c.name = op->getName().getStringRef().str() + " over mesh axes [" + axesText +
           "]" + detail + " of " + typeText(inType) + " -> " +
           typeText(outType);
  std::string location = locationString(op->getLoc());
  if (!location.empty())
    c.name += " @ " + location;
  return c;
}

} // namespace loom::codegen::cuda::detail
