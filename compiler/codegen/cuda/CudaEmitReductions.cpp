//===- CudaEmitReductions.cpp - reductions, softmax, norms, losses --------===//
//
// Ops that combine many elements of their operand into one, each element
// of the result as loops over the elements it reads: reductions, arg
// max/min, cumulative sums, pooling, softmax, the norms and the losses.
// A reduction, softmax or layer norm over the last dim is served better
// by a row kernel (CudaEmitRowKernel.cpp), which is tried first; these
// loops compute every other case.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/cuda/CudaEmitInternal.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace loom::graph;

namespace loom::codegen::cuda::detail {

StringRef reductionKind(Operation *op) {
  return llvm::TypeSwitch<Operation *, StringRef>(op)
      .Case([](ReduceSumOp) { return "sum"; })
      .Case([](ReduceMeanOp) { return "mean"; })
      .Case([](ReduceMaxOp) { return "max"; })
      .Case([](ReduceMinOp) { return "min"; })
      .Case([](ReduceProdOp) { return "prod"; })
      .Default([](Operation *) { return ""; });
}

std::string reductionInit(StringRef kind, Type type) {
  std::string cxxType = computeType(type);
  if (kind == "sum" || kind == "mean")
    return literal(0, type);
  if (kind == "prod")
    return literal(1, type);
  if (cxxType == "int")
    return kind == "max" ? "(-2147483647 - 1)" : "2147483647";
  if (cxxType != "float" && cxxType != "double")
    return literal(kind == "max" ? -9.3e18 : 9.3e18, type);
  return literal(kind == "max" ? -INFINITY : INFINITY, type);
}

std::string reductionCombine(StringRef kind, const std::string &acc,
                             const std::string &element) {
  if (kind == "sum" || kind == "mean")
    return acc + " += " + element + ";";
  if (kind == "prod")
    return acc + " *= " + element + ";";
  return acc + " = loom::" + kind.str() + "_(" + acc + ", " + element + ");";
}

std::string reductionCombineFn(StringRef kind, const std::string &cxxType) {
  StringRef fn = kind == "sum" || kind == "mean" ? "add"
                 : kind == "prod"                ? "mul"
                                                 : kind;
  return "loom::" + fn.str() + "_<" + cxxType + ">";
}

std::string blockReduce(const std::string &value, const std::string &type,
                        const std::string &fn, const std::string &identity) {
  return "loom::block_reduce(" + value + ", [](" + type + " a, " + type +
         " b) { return " + fn + "(a, b); }, " + identity + ", sh)";
}

std::string warpReduce(const std::string &value, const std::string &type,
                       const std::string &fn) {
  return "loom::warp_reduce(" + value + ", [](" + type + " a, " + type +
         " b) { return " + fn + "(a, b); })";
}

int64_t rowBlock(int64_t rowSize) {
  int64_t block = 32;
  while (block < rowSize && block < kBlock)
    block *= 2;
  return block;
}

Idx reductionInputIndex(ArrayRef<int64_t> inputShape, ArrayRef<int64_t> axes,
                        bool keepdims, const Idx &resultIndex,
                        const Idx &reducedIndex) {
  Idx inputIndex;
  size_t kept = 0, reduced = 0;
  for (int64_t dim = 0; dim < static_cast<int64_t>(inputShape.size()); ++dim) {
    if (llvm::is_contained(axes, dim)) {
      inputIndex.push_back(reducedIndex[reduced++]);
      if (keepdims)
        ++kept;
    } else {
      // A kept dim of size 1 is a dim of the result too: its index is 0,
      // and the next kept dim reads the next result index.
      inputIndex.push_back(inputShape[dim] == 1 ? "0" : resultIndex[kept]);
      ++kept;
    }
  }
  return inputIndex;
}

FailureOr<std::string> crossEntropyLabel(KernelText &kernel,
                                         CrossEntropyOp loss, const Idx &row,
                                         std::string &skip) {
  FailureOr<std::string> label = kernel.eval(loss.getLabels(), row);
  skip = "false";
  if (succeeded(label))
    if (auto ignore = loss.getIgnoreIndex())
      skip = *label + " == " +
             literal(static_cast<double>(static_cast<int64_t>(*ignore)),
                     elemOf(loss.getLabels()));
  return label;
}

FailureOr<std::string> crossEntropyRowLoss(KernelText &kernel,
                                           CrossEntropyOp loss, const Idx &row,
                                           const std::string &label,
                                           const std::string &max,
                                           const std::string &sum) {
  int64_t classes = shapeOf(loss.getLogits()).back();
  Idx labelIndex = row;
  labelIndex.push_back(kernel.let(
      "loom::i64",
      "loom::index_(" + label + ", " + std::to_string(classes) + ")", "k"));
  FailureOr<std::string> picked = kernel.eval(loss.getLogits(), labelIndex);
  if (failed(picked))
    return failure();
  return max + " + loom::log_(" + sum + ") - " + *picked;
}

namespace {

/// Opens `for (loom::i64 <fresh> = 0; <fresh> < count; ++<fresh>)`; the
/// loop variable, named with `prefix`.
std::string openCountedLoop(KernelText &kernel, int64_t count,
                            StringRef prefix) {
  std::string loopVar = kernel.fresh(prefix);
  kernel.open("for (loom::i64 " + loopVar + " = 0; " + loopVar + " < " +
              std::to_string(count) + "; ++" + loopVar + ")");
  return loopVar;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// A reduction of `input` over `axes` evaluated at `index` (an index of
/// `op`'s result) as a loop: "sum", "mean", "max", "min", "prod".
FailureOr<std::string> reduceLoop(KernelText &kernel, Operation *op,
                                  Value input, ArrayRef<int64_t> axes,
                                  bool keepdims, const Idx &index,
                                  StringRef kind) {
  ArrayRef<int64_t> inputShape = shapeOf(input);
  Type resultType = elemOf(op->getResult(0));
  SmallVector<int64_t> reducedShape;
  for (int64_t axis : axes)
    reducedShape.push_back(inputShape[axis]);
  int64_t reducedCount = numel(reducedShape);
  std::string acc = kernel.let(computeType(resultType),
                               reductionInit(kind, resultType), "acc");
  std::string loopVar = openCountedLoop(kernel, reducedCount, "r");
  Idx reducedIndex = kernel.decompose(loopVar, reducedShape, "q");
  FailureOr<std::string> element =
      kernel.eval(input, reductionInputIndex(inputShape, axes, keepdims, index,
                                             reducedIndex));
  if (failed(element))
    return failure();
  kernel.line(reductionCombine(kind, acc, *element));
  kernel.close();
  if (kind == "mean")
    kernel.line(acc + " /= " +
                literal(static_cast<double>(reducedCount), resultType) + ";");
  return acc;
}

/// reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod.
FailureOr<std::string> emitReduce(KernelText &kernel, Operation *op,
                                  Value result, const Idx &index) {
  auto axes = cast<DenseI64ArrayAttr>(op->getAttr("axes")).asArrayRef();
  bool keepdims = op->hasAttr("keepdims");
  return reduceLoop(kernel, op, op->getOperand(0), axes, keepdims, index,
                    reductionKind(op));
}

FailureOr<std::string> emitGlobalAvgPool(KernelText &kernel,
                                         GlobalAvgPoolOp pool, Value result,
                                         const Idx &index) {
  SmallVector<int64_t> axes;
  for (int64_t dim = 2; dim < static_cast<int64_t>(shapeOf(result).size());
       ++dim)
    axes.push_back(dim);
  return reduceLoop(kernel, pool, pool.getX(), axes, true, index, "mean");
}

/// arg_max and arg_min: the first (or with select_last_index, the last)
/// position of the extreme element on the axis.
FailureOr<std::string> emitArgExtreme(KernelText &kernel, Operation *op,
                                      Value result, const Idx &index) {
  bool isMax = isa<ArgMaxOp>(op);
  Value input = op->getOperand(0);
  int64_t axis = cast<IntegerAttr>(op->getAttr("axis")).getInt();
  bool keepdims = op->hasAttr("keepdims");
  bool selectLast = op->hasAttr("select_last_index");
  ArrayRef<int64_t> inputShape = shapeOf(input);
  Type inputType = elemOf(input);
  std::string best = kernel.fresh("best"), position = kernel.fresh("arg");
  kernel.line(computeType(inputType) + " " + best + " = " +
              literal(0, inputType) + ";");
  kernel.line("loom::i64 " + position + " = 0;");
  std::string loopVar = openCountedLoop(kernel, inputShape[axis], "r");
  Idx inputIndex;
  size_t kept = 0;
  for (int64_t dim = 0; dim < static_cast<int64_t>(inputShape.size()); ++dim) {
    if (dim == axis) {
      inputIndex.push_back(inputShape[dim] == 1 ? "0" : loopVar);
      if (keepdims)
        ++kept;
    } else {
      // Every kept dim takes its place in `index`, a unit one too.
      inputIndex.push_back(inputShape[dim] == 1 ? "0" : index[kept]);
      ++kept;
    }
  }
  FailureOr<std::string> element = kernel.eval(input, inputIndex);
  if (failed(element))
    return failure();
  std::string better =
      *element + (isMax ? " >" : " <") + (selectLast ? "= " : " ") + best;
  kernel.line("if (" + loopVar + " == 0 || " + better + ") { " + best + " = " +
              *element + "; " + position + " = " + loopVar + "; }");
  kernel.close();
  std::string cxxType = computeType(elemOf(result));
  return kernel.let(cxxType, "(" + cxxType + ")" + position);
}

FailureOr<std::string> emitCumSum(KernelText &kernel, CumSumOp cumsum,
                                  Value result, const Idx &index) {
  Type resultType = elemOf(result);
  int64_t axis = cumsum.getAxis();
  int64_t size = shapeOf(result)[axis];
  std::string acc =
      kernel.let(computeType(resultType), literal(0, resultType), "acc");
  std::string loopVar = kernel.fresh("r");
  std::string low = "0",
              high = index[axis] + (cumsum.getExclusive() ? "" : " + 1");
  if (cumsum.getReverse()) {
    low = index[axis] + (cumsum.getExclusive() ? " + 1" : "");
    high = std::to_string(size);
  }
  kernel.open("for (loom::i64 " + loopVar + " = " + low + "; " + loopVar +
              " < " + high + "; ++" + loopVar + ")");
  Idx inputIndex = index;
  inputIndex[axis] = loopVar;
  FailureOr<std::string> element = kernel.eval(cumsum.getX(), inputIndex);
  if (failed(element))
    return failure();
  kernel.line(acc + " += " + *element + ";");
  kernel.close();
  return rounded(kernel, resultType, acc);
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

/// max_pool and avg_pool: a loop over the window, skipping positions in
/// the padding (avg_pool's count_include_pad counts those up to the pad).
FailureOr<std::string> emitPool(KernelText &kernel, Operation *op, Value result,
                                const Idx &index) {
  bool isMax = isa<MaxPoolOp>(op);
  Type resultType = elemOf(result);
  std::string cxxType = computeType(resultType);
  Value input = op->getOperand(0);
  ArrayRef<int64_t> inputShape = shapeOf(input);
  auto window = cast<DenseI64ArrayAttr>(op->getAttr("kernel")).asArrayRef();
  auto strides = cast<DenseI64ArrayAttr>(op->getAttr("strides")).asArrayRef();
  auto padding = cast<DenseI64ArrayAttr>(op->getAttr("padding")).asArrayRef();
  SmallVector<int64_t> dilations(window.size(), 1);
  if (auto attr = op->getAttrOfType<DenseI64ArrayAttr>("dilations"))
    dilations.assign(attr.asArrayRef().begin(), attr.asArrayRef().end());
  bool includePad = op->hasAttr("count_include_pad");
  size_t spatialDims = window.size();
  std::string acc = kernel.let(
      cxxType, isMax ? literal(-INFINITY, resultType) : literal(0, resultType),
      "acc");
  if (cxxType != "float" && cxxType != "double" && isMax)
    acc = kernel.let(cxxType, literal(-9.3e18, resultType), "acc");
  std::string count = kernel.let("loom::i64", "0", "cnt");
  std::string windowVar = openCountedLoop(kernel, numel(window), "w");
  Idx windowIndex = kernel.decompose(windowVar, window, "kw");
  Idx inputIndex(index.begin(), index.begin() + 2);
  std::string valid, withinPadding;
  for (size_t dim = 0; dim < spatialDims; ++dim) {
    std::string position = kernel.let(
        "loom::i64",
        index[2 + dim] + " * " + std::to_string(strides[dim]) + " - " +
            std::to_string(padding[dim]) + " + " + windowIndex[dim] + " * " +
            std::to_string(dilations[dim]),
        "pos");
    std::string size = std::to_string(inputShape[2 + dim]);
    valid += std::string(valid.empty() ? "" : " && ") + "0 <= " + position +
             " && " + position + " < " + size;
    withinPadding += std::string(withinPadding.empty() ? "" : " && ") +
                     position + " < " + size + " + " +
                     std::to_string(padding[spatialDims + dim]);
    inputIndex.push_back(position);
  }
  if (!isMax && includePad)
    kernel.line("if (" + withinPadding + ") ++" + count + ";");
  kernel.open("if (" + valid + ")");
  FailureOr<std::string> element = kernel.eval(input, inputIndex);
  if (failed(element))
    return failure();
  if (isMax)
    kernel.line(acc + " = loom::max_(" + acc + ", " + *element + ");");
  else
    kernel.line(acc + " += " + *element + ";");
  if (!isMax && !includePad)
    kernel.line("++" + count + ";");
  kernel.close();
  kernel.close();
  if (isMax)
    return acc;
  return rounded(kernel, resultType,
                 acc + " / (" + cxxType + ")(" + count + " > 0 ? " + count +
                     " : 1)");
}

//===----------------------------------------------------------------------===//
// Softmax and norms
//===----------------------------------------------------------------------===//

/// softmax and log_softmax: a pass for the max, one for the sum of
/// exponentials, then the element.
FailureOr<std::string> emitSoftmax(KernelText &kernel, Operation *op,
                                   Value result, const Idx &index) {
  Type resultType = elemOf(result);
  std::string cxxType = computeType(resultType);
  Value input = op->getOperand(0);
  int64_t axis = cast<IntegerAttr>(op->getAttr("axis")).getInt();
  int64_t size = shapeOf(result)[axis];
  std::string max = kernel.let(cxxType, literal(-INFINITY, resultType), "m");
  std::string sum = kernel.let(cxxType, literal(0, resultType), "s");
  for (int pass = 0; pass < 2; ++pass) {
    std::string loopVar = openCountedLoop(kernel, size, "r");
    Idx inputIndex = index;
    inputIndex[axis] = size == 1 ? "0" : loopVar;
    FailureOr<std::string> element = kernel.eval(input, inputIndex);
    if (failed(element))
      return failure();
    if (pass == 0)
      kernel.line(max + " = loom::max_(" + max + ", " + *element + ");");
    else
      kernel.line(sum + " += loom::exp_(" + *element + " - " + max + ");");
    kernel.close();
  }
  FailureOr<std::string> element = kernel.eval(input, index);
  if (failed(element))
    return failure();
  if (isa<SoftmaxOp>(op))
    return rounded(kernel, resultType,
                   "loom::exp_(" + *element + " - " + max + ") / " + sum);
  return rounded(kernel, resultType,
                 *element + " - " + max + " - loom::log_(" + sum + ")");
}

/// Two passes over the normalized dims (mean, then variance).
FailureOr<std::string> emitLayerNorm(KernelText &kernel, LayerNormOp norm,
                                     Value result, const Idx &index) {
  Type resultType = elemOf(result);
  std::string cxxType = computeType(resultType);
  ArrayRef<int64_t> resultShape = shapeOf(result);
  int64_t axis = norm.getAxis();
  SmallVector<int64_t> normalizedShape(resultShape.begin() + axis,
                                       resultShape.end());
  int64_t count = numel(normalizedShape);
  std::string mean = kernel.let(cxxType, literal(0, resultType), "mean");
  std::string variance = kernel.let(cxxType, literal(0, resultType), "var");
  for (int pass = 0; pass < 2; ++pass) {
    std::string loopVar = openCountedLoop(kernel, count, "r");
    Idx normalizedIndex = kernel.decompose(loopVar, normalizedShape, "q");
    Idx inputIndex(index.begin(), index.begin() + axis);
    inputIndex.append(normalizedIndex.begin(), normalizedIndex.end());
    FailureOr<std::string> element = kernel.eval(norm.getX(), inputIndex);
    if (failed(element))
      return failure();
    if (pass == 0)
      kernel.line(mean + " += " + *element + ";");
    else
      kernel.line(variance + " += (" + *element + " - " + mean + ") * (" +
                  *element + " - " + mean + ");");
    kernel.close();
    std::string total = literal(static_cast<double>(count), resultType);
    kernel.line((pass == 0 ? mean : variance) + " /= " + total + ";");
  }
  Idx paramIndex(index.begin() + axis, index.end());
  FailureOr<std::string> x = kernel.eval(norm.getX(), index);
  FailureOr<std::string> scale = kernel.eval(norm.getScale(), paramIndex);
  if (failed(x) || failed(scale))
    return failure();
  std::string expr = "(" + *x + " - " + mean + ") * loom::rsqrt_(" + variance +
                     " + " +
                     literal(norm.getEpsilon().convertToDouble(), resultType) +
                     ") * " + *scale;
  if (norm.getBias()) {
    FailureOr<std::string> bias = kernel.eval(norm.getBias(), paramIndex);
    if (failed(bias))
      return failure();
    expr += " + " + *bias;
  }
  return rounded(kernel, resultType, expr);
}

/// Inference batch norm: the statistics are operands, read per channel.
FailureOr<std::string> emitBatchNorm(KernelText &kernel, BatchNormOp norm,
                                     Value result, const Idx &index) {
  Type resultType = elemOf(result);
  Idx channel{index.size() > 1 ? index[1] : "0"};
  FailureOr<std::string> x = kernel.evalBroadcast(norm.getX(), result, index);
  FailureOr<std::string> scale = kernel.eval(norm.getScale(), channel);
  FailureOr<std::string> bias = kernel.eval(norm.getBias(), channel);
  FailureOr<std::string> mean = kernel.eval(norm.getMean(), channel);
  FailureOr<std::string> variance = kernel.eval(norm.getVariance(), channel);
  if (failed(x) || failed(scale) || failed(bias) || failed(mean) ||
      failed(variance))
    return failure();
  return rounded(kernel, resultType,
                 "(" + *x + " - " + *mean + ") / loom::sqrt_(" + *variance +
                     " + " +
                     literal(norm.getEpsilon().convertToDouble(), resultType) +
                     ") * " + *scale + " + " + *bias);
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

FailureOr<std::string> emitMseLoss(KernelText &kernel, MseLossOp loss,
                                   Value result, const Idx &index) {
  Type resultType = elemOf(result);
  if (loss.getReduction() == Reduction::none) {
    FailureOr<std::string> pred = kernel.eval(loss.getPred(), index);
    FailureOr<std::string> target = kernel.eval(loss.getTarget(), index);
    if (failed(pred) || failed(target))
      return failure();
    return rounded(kernel, resultType,
                   "(" + *pred + " - " + *target + ") * (" + *pred + " - " +
                       *target + ")");
  }
  ArrayRef<int64_t> predShape = shapeOf(loss.getPred());
  std::string acc =
      kernel.let(computeType(resultType), literal(0, resultType), "acc");
  std::string loopVar = openCountedLoop(kernel, numel(predShape), "r");
  Idx predIndex = kernel.decompose(loopVar, predShape, "q");
  FailureOr<std::string> pred = kernel.eval(loss.getPred(), predIndex);
  FailureOr<std::string> target = kernel.eval(loss.getTarget(), predIndex);
  if (failed(pred) || failed(target))
    return failure();
  kernel.line(acc + " += (" + *pred + " - " + *target + ") * (" + *pred +
              " - " + *target + ");");
  kernel.close();
  if (loss.getReduction() == Reduction::mean)
    kernel.line(acc + " /= " +
                literal(static_cast<double>(numel(predShape)), resultType) +
                ";");
  return rounded(kernel, resultType, acc);
}

/// Per row: logsumexp(logits) - logits[label]; ignored labels give 0 and
/// leave the mean's count.
FailureOr<std::string> emitCrossEntropy(KernelText &kernel, CrossEntropyOp loss,
                                        Value result, const Idx &index) {
  Type resultType = elemOf(result);
  std::string cxxType = computeType(resultType);
  ArrayRef<int64_t> logitsShape = shapeOf(loss.getLogits());
  int64_t classes = logitsShape.back();
  SmallVector<int64_t> rowShape(logitsShape.begin(), logitsShape.end() - 1);
  bool unreduced = loss.getReduction() == Reduction::none;
  std::string acc = kernel.let(cxxType, literal(0, resultType), "acc");
  std::string count = kernel.let(cxxType, literal(0, resultType), "cnt");
  Idx row = index;
  if (!unreduced) {
    std::string rowVar = openCountedLoop(kernel, numel(rowShape), "row");
    row = kernel.decompose(rowVar, rowShape, "q");
  }
  std::string skip;
  FailureOr<std::string> label = crossEntropyLabel(kernel, loss, row, skip);
  if (failed(label))
    return failure();
  kernel.open("if (!(" + skip + "))");
  std::string max = kernel.let(cxxType, literal(-INFINITY, resultType), "m");
  std::string sum = kernel.let(cxxType, literal(0, resultType), "s");
  for (int pass = 0; pass < 2; ++pass) {
    std::string classVar = openCountedLoop(kernel, classes, "c");
    Idx logitIndex = row;
    logitIndex.push_back(classes == 1 ? "0" : classVar);
    FailureOr<std::string> logit = kernel.eval(loss.getLogits(), logitIndex);
    if (failed(logit))
      return failure();
    if (pass == 0)
      kernel.line(max + " = loom::max_(" + max + ", " + *logit + ");");
    else
      kernel.line(sum + " += loom::exp_(" + *logit + " - " + max + ");");
    kernel.close();
  }
  FailureOr<std::string> rowLoss =
      crossEntropyRowLoss(kernel, loss, row, *label, max, sum);
  if (failed(rowLoss))
    return failure();
  kernel.line(acc + " += " + *rowLoss + ";");
  kernel.line(count + " += 1;");
  kernel.close();
  if (!unreduced)
    kernel.close();
  if (loss.getReduction() == Reduction::mean)
    kernel.line(acc + " = " + count + " > 0 ? " + acc + " / " + count + " : " +
                literal(NAN, resultType) + ";");
  return rounded(kernel, resultType, acc);
}

} // namespace

void registerReductionEmitters(OpEmitterTable &table) {
  table.addValue<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp,
                 ReduceProdOp>(emitReduce);
  table.add(emitGlobalAvgPool);
  table.addValue<ArgMaxOp, ArgMinOp>(emitArgExtreme);
  table.add(emitCumSum);
  table.addValue<MaxPoolOp, AvgPoolOp>(emitPool);
  table.addValue<SoftmaxOp, LogSoftmaxOp>(emitSoftmax);
  table.add(emitLayerNorm);
  table.add(emitBatchNorm);
  table.add(emitMseLoss);
  table.add(emitCrossEntropy);
  table.addWholeRegion(emitSumSquaresRegion);
  table.addRowKernel<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp,
                     ReduceProdOp, SoftmaxOp, LogSoftmaxOp, LayerNormOp>(
      emitRowKernel);
}

} // namespace loom::codegen::cuda::detail
