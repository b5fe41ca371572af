//===- CudaEmitDataMovement.cpp - data movement as index arithmetic -------===//
//
// Reshapes, transposes, slices, concatenation, padding, gathers and
// broadcasts compute no new values: each maps the index of its result to
// an index of its operand (or picks the operand, or a pad value). A
// scatter writes where its indices say, so it takes its whole region: a
// copy of the data, then a kernel of the updates.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/cuda/CudaEmitInternal.h"

#include "dialects/graph/LocationString.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace mlir;
using namespace loom::graph;

namespace loom::codegen::cuda::detail {
namespace {

//===----------------------------------------------------------------------===//
// Views and permutations
//===----------------------------------------------------------------------===//

/// Reshape, flatten, squeeze and unsqueeze: when the dims other than the
/// size-1 ones are the same in the same order, each maps to its own;
/// otherwise through the flat offset.
FailureOr<std::string> emitReshape(KernelText &kernel, Operation *op,
                                   Value result, const Idx &index) {
  Value input = op->getOperand(0);
  ArrayRef<int64_t> resultShape = shapeOf(result);
  ArrayRef<int64_t> inputShape = shapeOf(input);
  SmallVector<int64_t> resultDims, inputDims;
  for (int64_t dim : resultShape)
    if (dim != 1)
      resultDims.push_back(dim);
  for (int64_t dim : inputShape)
    if (dim != 1)
      inputDims.push_back(dim);
  if (resultDims == inputDims) {
    Idx nonUnitIndex;
    for (size_t dim = 0; dim < resultShape.size(); ++dim)
      if (resultShape[dim] != 1)
        nonUnitIndex.push_back(index[dim]);
    Idx inputIndex;
    size_t next = 0;
    for (int64_t dim : inputShape)
      inputIndex.push_back(dim == 1 ? "0" : nonUnitIndex[next++]);
    return kernel.eval(input, inputIndex);
  }
  std::string flat =
      kernel.let("loom::i64", linearize(index, resultShape), "f");
  return kernel.eval(input, kernel.decompose(flat, inputShape, "u"));
}

FailureOr<std::string> emitTranspose(KernelText &kernel, TransposeOp transpose,
                                     Value result, const Idx &index) {
  Idx inputIndex(index.size());
  for (auto [resultDim, inputDim] : llvm::enumerate(transpose.getPerm()))
    inputIndex[inputDim] = index[resultDim];
  return kernel.eval(transpose.getX(), inputIndex);
}

FailureOr<std::string> emitBroadcastTo(KernelText &kernel,
                                       BroadcastToOp broadcast, Value result,
                                       const Idx &index) {
  return kernel.evalBroadcast(broadcast.getX(), result, index);
}

//===----------------------------------------------------------------------===//
// Slices, concatenation, padding
//===----------------------------------------------------------------------===//

FailureOr<std::string> emitSlice(KernelText &kernel, SliceOp slice,
                                 Value result, const Idx &index) {
  ArrayRef<int64_t> inputShape = shapeOf(slice.getX());
  Idx inputIndex;
  for (size_t dim = 0; dim < inputShape.size(); ++dim) {
    int64_t size = inputShape[dim], step = slice.getSteps()[dim],
            start = slice.getStarts()[dim];
    if (start < 0)
      start = start + size;
    start = step > 0 ? std::clamp<int64_t>(start, 0, size)
                     : std::clamp<int64_t>(start, 0, size - 1);
    if (inputShape[dim] == 1) {
      inputIndex.push_back("0");
      continue;
    }
    std::string position = index[dim];
    if (step != 1)
      position = "(" + position + ") * " + std::to_string(step);
    if (start != 0)
      position = std::to_string(start) + " + " + position;
    inputIndex.push_back(kernel.let("loom::i64", position, "s"));
  }
  return kernel.eval(slice.getX(), inputIndex);
}

/// An if-else chain over the inputs by the position on the axis.
FailureOr<std::string> emitConcat(KernelText &kernel, ConcatOp concat,
                                  Value result, const Idx &index) {
  int64_t axis = concat.getAxis();
  std::string out = kernel.fresh();
  kernel.line(computeType(elemOf(result)) + " " + out + ";");
  int64_t offset = 0;
  auto inputs = concat.getInputs();
  for (auto [i, input] : llvm::enumerate(inputs)) {
    int64_t size = shapeOf(input)[axis];
    if (size == 0)
      continue;
    bool last = i + 1 == inputs.size();
    std::string cond = index[axis] + " < " + std::to_string(offset + size);
    if (offset == 0)
      kernel.open("if (" + cond + ")");
    else if (!last)
      kernel.open("else if (" + cond + ")");
    else
      kernel.open("else");
    Idx inputIndex = index;
    if (offset != 0)
      inputIndex[axis] = kernel.let(
          "loom::i64", index[axis] + " - " + std::to_string(offset), "k");
    FailureOr<std::string> element = kernel.eval(input, inputIndex);
    if (failed(element))
      return failure();
    kernel.line(out + " = " + *element + ";");
    kernel.close();
    offset += size;
  }
  return out;
}

FailureOr<std::string> emitPad(KernelText &kernel, PadOp pad, Value result,
                               const Idx &index) {
  Type resultType = elemOf(result);
  ArrayRef<int64_t> inputShape = shapeOf(pad.getX());
  ArrayRef<int64_t> pads = pad.getPads();
  size_t rank = inputShape.size();
  Idx inputIndex;
  std::string inside;
  for (size_t dim = 0; dim < rank; ++dim) {
    std::string position =
        pads[dim]
            ? kernel.let("loom::i64",
                         index[dim] + " - " + std::to_string(pads[dim]), "p")
            : index[dim];
    std::string size = std::to_string(inputShape[dim]);
    switch (pad.getMode()) {
    case PadMode::constant:
      if (pads[dim] || pads[dim + rank])
        inside += std::string(inside.empty() ? "" : " && ") +
                  "0 <= " + position + " && " + position + " < " + size;
      break;
    case PadMode::reflect:
      position =
          kernel.let("loom::i64",
                     position + " < 0 ? -" + position + " : " + position, "p");
      position = kernel.let("loom::i64",
                            position + " >= " + size + " ? 2 * (" + size +
                                " - 1) - " + position + " : " + position,
                            "p");
      break;
    case PadMode::edge:
      position =
          kernel.let("loom::i64",
                     position + " < 0 ? 0 : (" + position + " >= " + size +
                         " ? " + size + " - 1 : " + position + ")",
                     "p");
      break;
    }
    inputIndex.push_back(
        inputShape[dim] == 1 && pad.getMode() != PadMode::constant ? "0"
                                                                   : position);
  }
  if (inside.empty())
    return kernel.eval(pad.getX(), inputIndex);
  std::string out =
      kernel.let(computeType(resultType),
                 literal(pad.getValue().convertToDouble(), resultType), "v");
  kernel.open("if (" + inside + ")");
  FailureOr<std::string> element = kernel.eval(pad.getX(), inputIndex);
  if (failed(element))
    return failure();
  kernel.line(out + " = " + *element + ";");
  kernel.close();
  return out;
}

/// The lower (or upper) triangle of the last two dims, zero elsewhere.
FailureOr<std::string> emitTrilu(KernelText &kernel, TriluOp trilu,
                                 Value result, const Idx &index) {
  Type resultType = elemOf(result);
  FailureOr<std::string> x = kernel.eval(trilu.getX(), index);
  if (failed(x))
    return failure();
  std::string row = index[index.size() - 2], column = index.back();
  std::string keep = "(" + column + " - " + row +
                     (trilu.getUpper() ? " >= " : " <= ") +
                     std::to_string(trilu.getK()) + ")";
  return kernel.let(computeType(resultType),
                    keep + " ? " + *x + " : " + literal(0, resultType));
}

//===----------------------------------------------------------------------===//
// Gathers
//===----------------------------------------------------------------------===//

/// An index read from a tensor, wrapped and clamped into `size` as a local.
std::string dataIndex(KernelText &kernel, const std::string &read,
                      int64_t size) {
  return kernel.let("loom::i64",
                    "loom::index_(" + read + ", " + std::to_string(size) + ")",
                    "k");
}

FailureOr<std::string> emitGather(KernelText &kernel, GatherOp gather,
                                  Value result, const Idx &index) {
  int64_t axis = gather.getAxis();
  ArrayRef<int64_t> indicesShape = shapeOf(gather.getIndices());
  Idx indicesIndex(index.begin() + axis,
                   index.begin() + axis + indicesShape.size());
  FailureOr<std::string> picked =
      kernel.eval(gather.getIndices(), indicesIndex);
  if (failed(picked))
    return failure();
  Idx dataIdx(index.begin(), index.begin() + axis);
  dataIdx.push_back(
      dataIndex(kernel, *picked, shapeOf(gather.getData())[axis]));
  dataIdx.append(index.begin() + axis + indicesShape.size(), index.end());
  return kernel.eval(gather.getData(), dataIdx);
}

FailureOr<std::string> emitEmbedding(KernelText &kernel, EmbeddingOp embedding,
                                     Value result, const Idx &index) {
  Idx idsIndex(index.begin(), index.end() - 1);
  FailureOr<std::string> id = kernel.eval(embedding.getIds(), idsIndex);
  if (failed(id))
    return failure();
  std::string row = dataIndex(kernel, *id, shapeOf(embedding.getTable())[0]);
  return kernel.eval(embedding.getTable(), {row, index.back()});
}

FailureOr<std::string> emitGatherElements(KernelText &kernel,
                                          GatherElementsOp gather, Value result,
                                          const Idx &index) {
  FailureOr<std::string> picked = kernel.eval(gather.getIndices(), index);
  if (failed(picked))
    return failure();
  Idx dataIdx = index;
  int64_t axis = gather.getAxis();
  ArrayRef<int64_t> dataShape = shapeOf(gather.getData());
  dataIdx[axis] = dataIndex(kernel, *picked, dataShape[axis]);
  for (size_t dim = 0; dim < dataShape.size(); ++dim)
    if (dataShape[dim] == 1)
      dataIdx[dim] = "0";
  return kernel.eval(gather.getData(), dataIdx);
}

//===----------------------------------------------------------------------===//
// Scatter: a whole region
//===----------------------------------------------------------------------===//

/// A copy of the data (a map kernel), then a kernel of the updates
/// (atomics for reductions).
LogicalResult emitScatterRegion(RegionEmitter &region,
                                ScatterElementsOp scatter) {
  if (failed(region.emitMap({scatter.getData()}, {region.resultBuffers[0]})))
    return failure();
  ArrayRef<int64_t> updatesShape = shapeOf(scatter.getUpdates());
  ArrayRef<int64_t> dataShape = shapeOf(scatter.getData());
  int64_t updates = numel(updatesShape);
  if (updates == 0)
    return success();
  Type type = elemOf(scatter.getResult());
  auto reduction = scatter.getReduction();
  if (reduction != ScatterReduction::none &&
      reduction != ScatterReduction::add && storageBytes(type) < 4)
    return scatter.emitError("CUDA codegen: graph.scatter_elements with a ")
           << stringifyScatterReduction(reduction) << " reduction of " << type
           << " is not supported yet [" << locationString(scatter.getLoc())
           << "]";
  KernelText kernel(region, region.kernelName());
  kernel.open("for (loom::i64 i = blockIdx.x * (loom::i64)blockDim.x + "
              "threadIdx.x; i < " +
              std::to_string(updates) +
              "; i += (loom::i64)gridDim.x * blockDim.x)");
  Idx index = kernel.decompose("i", updatesShape, "x");
  FailureOr<std::string> picked = kernel.eval(scatter.getIndices(), index);
  FailureOr<std::string> update = kernel.eval(scatter.getUpdates(), index);
  if (failed(picked) || failed(update))
    return failure();
  int64_t axis = scatter.getAxis();
  Idx outIndex = index;
  outIndex[axis] = dataIndex(kernel, *picked, dataShape[axis]);
  for (size_t dim = 0; dim < dataShape.size(); ++dim)
    if (dataShape[dim] == 1)
      outIndex[dim] = "0";
  std::string out = kernel.param(region.resultBuffers[0], type, true);
  std::string target = out + " + " + linearize(outIndex, dataShape);
  std::string cxxType = computeType(type);
  // The atomics work on 4- and 8-byte words (and 16-bit floats for add).
  if (reduction != ScatterReduction::none && isa<IntegerType>(type) &&
      storageBytes(type) < 4)
    return scatter.emitError("CUDA codegen: scatter with a reduction of ")
           << type << " is not supported yet";
  switch (reduction) {
  case ScatterReduction::none:
    kernel.line("loom::st(" + target + ", " + *update + ");");
    break;
  case ScatterReduction::add:
    kernel.line("loom::atomic_add(" + target + ", " + *update + ");");
    break;
  default: {
    std::string combine = reduction == ScatterReduction::mul ? "a * b"
                          : reduction == ScatterReduction::max
                              ? "loom::max_(a, b)"
                              : "loom::min_(a, b)";
    kernel.line("loom::atomic_apply(" + target + ", " + *update + ", [](" +
                cxxType + " a, " + cxxType + " b) { return " + combine +
                "; });");
  }
  }
  kernel.close();
  region.addKernel(kernel, gridFor(updates, kBlock), kBlock, "scatter");
  return success();
}

} // namespace

void registerDataMovementEmitters(OpEmitterTable &table) {
  table.addValue<ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp>(emitReshape);
  table.add(emitTranspose);
  table.add(emitBroadcastTo);
  table.add(emitSlice);
  table.add(emitConcat);
  table.add(emitPad);
  table.add(emitTrilu);
  table.add(emitGather);
  table.add(emitEmbedding);
  table.add(emitGatherElements);
  table.addWholeRegion(emitScatterRegion);
}

} // namespace loom::codegen::cuda::detail
