//===- CudaEmitRowKernel.cpp - row kernels of reductions and norms --------===//
//
// A reduction, softmax or layer norm whose reduced dims include the last
// one becomes a "row" kernel: rows of up to 1024 elements take a warp
// each (8 rows a block of 256 threads, the lanes striding over the row,
// combined with warp shuffles alone: no shared memory, no barrier);
// longer rows one block each, its threads striding over the row,
// combined with warp shuffles and shared memory (online max/sum for
// softmax, Welford for layer norm); then the region's outputs written in
// the same kernel, per row or per element of the row.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/cuda/CudaEmitInternal.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace loom::graph;

namespace loom::codegen::cuda::detail {
namespace {

/// Whether `value` is computed from `root`'s results (inside the region).
bool dependsOn(Value value, Operation *root) {
  return readsFrom(value, [root](Operation *op) { return op == root; });
}

/// The values a row kernel writes: element outputs (the reduced operand's
/// shape), row outputs (the root's shape) and outputs the root does not
/// feed (left to a map kernel).
struct RowOutputs {
  SmallVector<Value> element, row, other;
  SmallVector<int> elementBuffers, rowBuffers, otherBuffers;
};

} // namespace

bool readsFrom(Value value, llvm::function_ref<bool(Operation *)> pred) {
  SmallVector<Value> work{value};
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || !seen.insert(def).second)
      continue;
    if (pred(def))
      return true;
    work.append(def->operand_begin(), def->operand_end());
  }
  return false;
}

FailureOr<bool> emitRowKernel(RegionEmitter &region, Operation *root) {
  Value input = root->getOperand(0);
  ArrayRef<int64_t> inputShape = shapeOf(input);
  int64_t rank = inputShape.size();
  if (rank == 0)
    return false;
  SmallVector<int64_t> axes;
  StringRef kind;
  bool keepdims = true;
  if (auto norm = dyn_cast<LayerNormOp>(root)) {
    for (int64_t dim = norm.getAxis(); dim < rank; ++dim)
      axes.push_back(dim);
    kind = "norm";
  } else if (isa<SoftmaxOp, LogSoftmaxOp>(root)) {
    axes.push_back(cast<IntegerAttr>(root->getAttr("axis")).getInt());
    kind = isa<SoftmaxOp>(root) ? "softmax" : "log_softmax";
  } else {
    kind = reductionKind(root);
    if (kind.empty())
      return false;
    auto rootAxes = cast<DenseI64ArrayAttr>(root->getAttr("axes")).asArrayRef();
    axes.assign(rootAxes.begin(), rootAxes.end());
    keepdims = root->hasAttr("keepdims");
  }
  if (!llvm::is_contained(axes, rank - 1))
    return false;
  SmallVector<int64_t> keptShape, reducedShape;
  for (int64_t dim = 0; dim < rank; ++dim)
    (llvm::is_contained(axes, dim) ? reducedShape : keptShape)
        .push_back(inputShape[dim]);
  int64_t rows = numel(keptShape), rowSize = numel(reducedShape);
  if (rowSize < 32 || rows == 0)
    return false;
  Type resultType = elemOf(root->getResult(0));
  bool isFloat = isa<FloatType>(resultType);
  if (!isFloat && (kind == "norm" || kind == "softmax"))
    return false;

  auto yield =
      cast<kernel::YieldOp>(region.fusion.getBody().front().getTerminator());
  RowOutputs outs;
  ArrayRef<int64_t> rootShape = shapeOf(root->getResult(0));
  for (auto [value, buffer] :
       llvm::zip(yield.getOperands(), region.resultBuffers)) {
    if (ArrayRef<int64_t>(shapeOf(value)) == inputShape) {
      outs.element.push_back(value);
      outs.elementBuffers.push_back(buffer);
    } else if (ArrayRef<int64_t>(shapeOf(value)) == rootShape) {
      outs.row.push_back(value);
      outs.rowBuffers.push_back(buffer);
    } else if (!dependsOn(value, root)) {
      outs.other.push_back(value);
      outs.otherBuffers.push_back(buffer);
    } else {
      return false;
    }
  }

  // A warp per row for short rows, a block per row for long ones.
  bool warpRows = rowSize <= kWarpRowMax;
  int64_t block = warpRows ? kBlock : rowBlock(rowSize);
  int64_t rowsPerBlock = warpRows ? kBlock / 32 : 1;
  std::string lane = warpRows ? "(threadIdx.x & 31)" : "threadIdx.x";
  std::string laneStride = warpRows ? "32" : "blockDim.x";
  KernelText kernel(region, region.kernelName());
  std::string cxxType = computeType(resultType);
  // Softmax and norm statistics in the compute type (double for f64).
  bool isMaxsum = kind == "softmax" || kind == "log_softmax";
  bool isWelford = kind == "norm";
  std::string accType = isMaxsum    ? "loom::maxsum_t<" + cxxType + ">"
                        : isWelford ? "loom::welford_t<" + cxxType + ">"
                                    : cxxType;
  std::string zero = literal(0, resultType), one = literal(1, resultType);
  if (warpRows) {
    kernel.open("for (loom::i64 row = blockIdx.x * " +
                std::to_string(rowsPerBlock) +
                "ll + (threadIdx.x >> 5); row < " + std::to_string(rows) +
                "; row += (loom::i64)gridDim.x * " +
                std::to_string(rowsPerBlock) + ")");
  } else {
    kernel.line("__shared__ " + accType + " sh[32];");
    kernel.open("for (loom::i64 row = blockIdx.x; row < " +
                std::to_string(rows) + "; row += gridDim.x)");
  }
  Idx rowIndex = kernel.decompose("row", keptShape, "y");
  // The input index of an element of the row, from its reduced index.
  auto inputIndexOf = [&](const Idx &reducedIndex) {
    Idx inputIndex;
    size_t kept = 0, reduced = 0;
    for (int64_t dim = 0; dim < rank; ++dim)
      inputIndex.push_back(llvm::is_contained(axes, dim)
                               ? reducedIndex[reduced++]
                               : rowIndex[kept++]);
    return inputIndex;
  };

  // The accumulator: its initial value, combine function and identity.
  std::string init, combine, identity;
  if (isMaxsum) {
    init = identity =
        accType + "{" + literal(-INFINITY, resultType) + ", " + zero + "}";
    combine = "loom::combine_maxsum";
  } else if (isWelford) {
    init = identity = accType + "{" + zero + ", " + zero + ", " + zero + "}";
    combine = "loom::combine_welford";
  } else {
    init = identity = reductionInit(kind, resultType);
    combine = reductionCombineFn(kind, cxxType);
  }
  std::string acc = kernel.let(accType, init, "acc");
  kernel.open("for (loom::i64 r = " + lane + "; r < " +
              std::to_string(rowSize) + "; r += " + laneStride + ")");
  {
    Idx inputIndex = inputIndexOf(kernel.decompose("r", reducedShape, "z"));
    FailureOr<std::string> element = kernel.eval(input, inputIndex);
    if (failed(element))
      return failure();
    if (isMaxsum)
      kernel.line(acc + " = loom::combine_maxsum(" + acc + ", " + accType +
                  "{" + *element + ", " + one + "});");
    else if (isWelford)
      kernel.line(acc + " = loom::combine_welford(" + acc + ", " + accType +
                  "{" + one + ", " + *element + ", " + zero + "});");
    else
      kernel.line(acc + " = " + combine + "(" + acc + ", " + *element + ");");
  }
  kernel.close();
  kernel.line(acc + " = " +
              (warpRows ? warpReduce(acc, accType, combine)
                        : blockReduce(acc, accType, combine, identity)) +
              ";");

  // The root's value, per row or per element of the row: an override that
  // serves only the row (or element) being written.
  Idx current; // the input index of the element being written
  Idx rootRowIndex;
  if (kind != "norm" && kind != "softmax" && kind != "log_softmax") {
    size_t kept = 0;
    for (int64_t dim = 0; dim < rank; ++dim) {
      if (llvm::is_contained(axes, dim)) {
        if (keepdims)
          rootRowIndex.push_back("0");
      } else {
        rootRowIndex.push_back(rowIndex[kept++]);
      }
    }
    std::string statistic = acc;
    if (kind == "mean")
      statistic = kernel.let(
          cxxType,
          acc + " / " + literal(static_cast<double>(rowSize), resultType));
    statistic = rounded(kernel, resultType, statistic);
    kernel.overrides[root->getResult(0)] =
        [&kernel, statistic,
         rootRowIndex](const Idx &index) -> FailureOr<std::string> {
      if (index != rootRowIndex) {
        kernel.refused = true;
        return failure();
      }
      return statistic;
    };
  } else if (kind == "norm") {
    auto norm = cast<LayerNormOp>(root);
    std::string mean = kernel.let(cxxType, acc + ".mean", "mean");
    std::string rstd = kernel.let(
        cxxType,
        "loom::rsqrt_(" + acc + ".m2 / " +
            literal(static_cast<double>(rowSize), resultType) + " + " +
            literal(norm.getEpsilon().convertToDouble(), resultType) + ")",
        "rstd");
    int64_t axis = norm.getAxis();
    kernel.overrides[root->getResult(0)] =
        [&kernel, &current, input, mean, rstd, norm, axis,
         resultType](const Idx &index) mutable -> FailureOr<std::string> {
      if (index != current) {
        kernel.refused = true;
        return failure();
      }
      FailureOr<std::string> element = kernel.eval(input, index);
      Idx paramIndex(index.begin() + axis, index.end());
      FailureOr<std::string> scale = kernel.eval(norm.getScale(), paramIndex);
      if (failed(element) || failed(scale))
        return failure();
      std::string normalized =
          "(" + *element + " - " + mean + ") * " + rstd + " * " + *scale;
      if (norm.getBias()) {
        FailureOr<std::string> bias = kernel.eval(norm.getBias(), paramIndex);
        if (failed(bias))
          return failure();
        normalized += " + " + *bias;
      }
      return rounded(kernel, resultType, normalized);
    };
  } else {
    bool isLog = kind == "log_softmax";
    std::string post =
        isLog
            ? kernel.let(cxxType, acc + ".m + loom::log_(" + acc + ".s)", "lse")
            : kernel.let(cxxType, one + " / " + acc + ".s", "inv");
    std::string max = acc + ".m";
    kernel.overrides[root->getResult(0)] =
        [&kernel, &current, input, post, max, isLog,
         resultType](const Idx &index) -> FailureOr<std::string> {
      if (index != current) {
        kernel.refused = true;
        return failure();
      }
      FailureOr<std::string> element = kernel.eval(input, index);
      if (failed(element))
        return failure();
      return rounded(kernel, resultType,
                     isLog ? *element + " - " + post
                           : "loom::exp_(" + *element + " - " + max + ") * " +
                                 post);
    };
  }

  // The outputs: row outputs by one thread, element outputs by all.
  if (!outs.row.empty()) {
    kernel.open("if (" + lane + " == 0)");
    for (auto [value, buffer] : llvm::zip(outs.row, outs.rowBuffers)) {
      FailureOr<std::string> element = kernel.eval(value, rootRowIndex);
      if (failed(element)) {
        if (kernel.refused)
          return false;
        return failure();
      }
      std::string out = kernel.param(buffer, elemOf(value), true);
      kernel.line("loom::st(" + out + " + " +
                  linearize(rootRowIndex, rootShape) + ", " + *element + ");");
    }
    kernel.close();
  }
  if (!outs.element.empty()) {
    kernel.open("for (loom::i64 r = " + lane + "; r < " +
                std::to_string(rowSize) + "; r += " + laneStride + ")");
    current = inputIndexOf(kernel.decompose("r", reducedShape, "z"));
    for (auto [value, buffer] : llvm::zip(outs.element, outs.elementBuffers)) {
      FailureOr<std::string> element = kernel.eval(value, current);
      if (failed(element)) {
        if (kernel.refused)
          return false;
        return failure();
      }
      std::string out = kernel.param(buffer, elemOf(value), true);
      kernel.line("loom::st(" + out + " + " + linearize(current, inputShape) +
                  ", " + *element + ");");
    }
    kernel.close();
  }
  kernel.close();
  region.addKernel(
      kernel,
      std::min<int64_t>((rows + rowsPerBlock - 1) / rowsPerBlock, 65535), block,
      warpRows ? "warp rows" : "rows");
  if (!outs.other.empty() &&
      failed(region.emitMap(outs.other, outs.otherBuffers)))
    return failure();
  return true;
}

} // namespace loom::codegen::cuda::detail
