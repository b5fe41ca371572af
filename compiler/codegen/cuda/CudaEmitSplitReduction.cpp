//===- CudaEmitSplitReduction.cpp - reductions spread over the grid -------===//
//
// A reduction with few results over many elements (the sum of squares of
// a parameter for the gradient norm, a bias gradient summed over every
// token, a loss over the batch) gets, as a map or row kernel, one thread
// or one block per result: a few SMs work while the rest wait. Here such
// a reduction becomes two kernels:
//
// 1. partials over the whole grid: P partial results per result, partial
//    p combining the reduced elements p, p + P, p + 2P, ... (so that
//    neighbouring threads read neighbouring elements), written to a
//    scratch buffer in the compute type;
// 2. a kernel that combines each result's P partials in order,
//
// then the region's map kernel reads the combined value instead of
// computing it. Fixed P and a fixed order keep the result deterministic:
// run to run, the same bits (no atomics).
//
// Cross-entropy with a mean or sum reduction is split by rows instead: a
// block per row (max, then the sum of exponentials, as block reductions),
// each block's loss and count summed in the block, then combined in
// order. MSE with a reduction is a split sum of squared differences.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/cuda/CudaEmitInternal.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace loom::graph;

namespace loom::codegen::cuda::detail {
namespace {

/// Threads the partials kernel aims for: 256 blocks of 256, two blocks
/// per SM of an H100 (132 SMs) with room to spare.
constexpr int64_t kSplitThreads = 65536;
/// Below this many elements read, one thread or block per result is
/// quick enough: no split.
constexpr int64_t kSplitMinElements = 65536;
/// Results below this many: a block per partial (else a thread).
constexpr int64_t kBlockPartsBelow = 32;
/// Block partials: about this many elements each, at most this many per
/// result in all (the combining block reads them).
constexpr int64_t kElementsPerBlockPart = 2048;
constexpr int64_t kMaxBlockParts = 1024;
/// Thread partials: at most this many per result (the combining thread
/// reads them all).
constexpr int64_t kMaxThreadParts = 256;
/// A loss over this many logits or elements is split whatever its size:
/// the unsplit loss is one thread.
constexpr int64_t kSplitMinLoss = 4096;
/// The most blocks of a cross-entropy's partials kernel.
constexpr int64_t kLossBlocks = 1024;

/// Ops that combine many elements: the ones a split must not read from
/// (their value would be recomputed per element), and the ones a region
/// must have none of besides the split ones.
bool combinesElements(Operation *op) {
  return !reductionKind(op).empty() ||
         isa<SoftmaxOp, LogSoftmaxOp, LayerNormOp, CrossEntropyOp, MseLossOp,
             GlobalAvgPoolOp, ArgMaxOp, ArgMinOp, CumSumOp, MaxPoolOp,
             AvgPoolOp, BatchNormOp>(op);
}

/// Whether `value` is computed, inside the region, from an op that
/// combines elements.
bool readsCombined(Value value) { return readsFrom(value, combinesElements); }

/// The type partials are kept in: the compute type of `type` (f32 for
/// the 16-bit floats).
Type partialType(Type type) {
  if (type.isF16() || type.isBF16())
    return Float32Type::get(type.getContext());
  return type;
}

/// Writes into `kernel` the element at flat reduced index `r` of the
/// reduction, for the result element at `resultIndex`.
using ElementFn = std::function<FailureOr<std::string>(
    KernelText &kernel, const Idx &resultIndex, const std::string &r)>;

/// A reduction of `kind` of `reducedCount` elements per element of
/// `result`, as a partials kernel and a combining kernel that writes into
/// buffer `target` (of `result`'s type and shape; -1: a new scratch
/// buffer); the buffer of the combined values.
FailureOr<int> emitSplit(RegionEmitter &region, Value result, StringRef kind,
                         int64_t reducedCount, const ElementFn &element,
                         int target) {
  ArrayRef<int64_t> resultShape = shapeOf(result);
  Type resultType = elemOf(result);
  Type accType = partialType(resultType);
  std::string cxxType = computeType(resultType);
  std::string init = reductionInit(kind, resultType);
  int64_t outCount = std::max<int64_t>(1, numel(resultShape));
  std::string outText = std::to_string(outCount);
  std::string total = std::to_string(reducedCount);
  // Few results: a block per partial, its threads on neighbouring
  // elements, combined with a block reduction. Many results: a thread per
  // partial, neighbouring threads on neighbouring results.
  bool blockParts = outCount < kBlockPartsBelow;
  int64_t parts =
      blockParts
          ? std::clamp<int64_t>(reducedCount / kElementsPerBlockPart, 2,
                                std::max<int64_t>(2, kMaxBlockParts / outCount))
          : std::clamp<int64_t>(
                (kSplitThreads + outCount - 1) / outCount, 2,
                std::max<int64_t>(
                    2, std::min<int64_t>(kMaxThreadParts, reducedCount / 8)));
  std::string partsText = std::to_string(parts);
  std::string combineFn = reductionCombineFn(kind, cxxType);
  // Partial p of result o: [o][p] for block partials, [p][o] for thread
  // partials (the layout each kernel writes coalesced).
  int partials =
      region.newScratch(accType,
                        blockParts ? SmallVector<int64_t>{outCount, parts}
                                   : SmallVector<int64_t>{parts, outCount},
                        "partials");

  // 1. The partials, each over the reduced elements p, p + P, ... (thread
  // partials) or over blocks of elements P blocks apart (block partials).
  {
    KernelText kernel(region, region.kernelName());
    int64_t count = parts * outCount;
    std::string o, first, stride;
    if (blockParts) {
      kernel.line("__shared__ " + cxxType + " sh[32];");
      kernel.open("for (loom::i64 t = blockIdx.x; t < " +
                  std::to_string(count) + "; t += gridDim.x)");
      o = kernel.let("loom::i64", "t / " + partsText, "o");
      std::string p = kernel.let("loom::i64", "t % " + partsText, "p");
      first = p + " * (loom::i64)blockDim.x + threadIdx.x";
      stride = partsText + " * (loom::i64)blockDim.x";
    } else {
      kernel.open("for (loom::i64 t = blockIdx.x * (loom::i64)blockDim.x + "
                  "threadIdx.x; t < " +
                  std::to_string(count) +
                  "; t += (loom::i64)gridDim.x * blockDim.x)");
      o = kernel.let("loom::i64", "t % " + outText, "o");
      first = kernel.let("loom::i64", "t / " + outText, "p");
      stride = partsText;
    }
    Idx resultIndex = kernel.decompose(o, resultShape, "y");
    std::string acc = kernel.let(cxxType, init, "acc");
    kernel.open("for (loom::i64 r = " + first + "; r < " + total +
                "; r += " + stride + ")");
    FailureOr<std::string> value = element(kernel, resultIndex, "r");
    if (failed(value))
      return failure();
    kernel.line(reductionCombine(kind, acc, *value));
    kernel.close();
    std::string out = kernel.param(partials, accType, true);
    if (blockParts) {
      kernel.line(acc + " = " + blockReduce(acc, cxxType, combineFn, init) +
                  ";");
      kernel.open("if (threadIdx.x == 0)");
    }
    kernel.line("loom::st(" + out + " + t, " + acc + ");");
    if (blockParts)
      kernel.close();
    kernel.close();
    region.addKernel(
        kernel,
        blockParts ? std::min<int64_t>(count, 65535) : gridFor(count, kBlock),
        kBlock, "split reduction: " + partsText + " partials per result");
  }

  // 2. Each result's partials, combined in a fixed order.
  int combined = target >= 0
                     ? target
                     : region.newScratch(resultType, resultShape, "reduced");
  {
    KernelText kernel(region, region.kernelName());
    std::string in = kernel.param(partials, accType, false);
    if (blockParts) {
      kernel.line("__shared__ " + cxxType + " sh[32];");
      kernel.open("for (loom::i64 o = blockIdx.x; o < " + outText +
                  "; o += gridDim.x)");
    } else {
      kernel.open("for (loom::i64 o = blockIdx.x * (loom::i64)blockDim.x + "
                  "threadIdx.x; o < " +
                  outText + "; o += (loom::i64)gridDim.x * blockDim.x)");
    }
    std::string acc = kernel.let(cxxType, init, "acc");
    if (blockParts) {
      kernel.open("for (loom::i64 p = threadIdx.x; p < " + partsText +
                  "; p += blockDim.x)");
      kernel.line(reductionCombine(
          kind, acc, "loom::ld(" + in + "[o * " + partsText + " + p])"));
      kernel.close();
      kernel.line(acc + " = " + blockReduce(acc, cxxType, combineFn, init) +
                  ";");
    } else {
      kernel.open("for (loom::i64 p = 0; p < " + partsText + "; ++p)");
      kernel.line(reductionCombine(
          kind, acc, "loom::ld(" + in + "[p * " + outText + " + o])"));
      kernel.close();
    }
    if (kind == "mean")
      kernel.line(acc + " /= " +
                  literal(static_cast<double>(reducedCount), resultType) + ";");
    if (blockParts)
      kernel.open("if (threadIdx.x == 0)");
    kernel.line("loom::st(" + kernel.param(combined, resultType, true) +
                " + o, " + acc + ");");
    if (blockParts)
      kernel.close();
    kernel.close();
    region.addKernel(kernel, blockParts ? outCount : gridFor(outCount, kBlock),
                     kBlock, "split reduction: combine");
  }
  return combined;
}

/// Whether `op` qualifies for a split: a reduce op that reads many
/// elements for few results, or a loss with a mean or sum reduction; the
/// values it reads come from no other op that combines elements.
bool splittable(Operation *op) {
  if (!reductionKind(op).empty()) {
    Value input = op->getOperand(0);
    ArrayRef<int64_t> inputShape = shapeOf(input);
    auto axes = cast<DenseI64ArrayAttr>(op->getAttr("axes")).asArrayRef();
    int64_t reducedCount = 1;
    for (int64_t axis : axes)
      reducedCount *= inputShape[axis];
    int64_t outCount = std::max<int64_t>(1, numel(shapeOf(op->getResult(0))));
    // A row kernel (reducing the last dim) gives a block per result; a
    // map kernel a thread per 4 results. Split when that leaves most of
    // the GPU idle and each partial still has work.
    bool rows = !inputShape.empty() &&
                llvm::is_contained(axes, int64_t(inputShape.size()) - 1);
    return numel(inputShape) >= kSplitMinElements && !readsCombined(input) &&
           reducedCount >= 256 && outCount < (rows ? 132 : 65536);
  }
  if (auto mse = dyn_cast<MseLossOp>(op))
    return mse.getReduction() != Reduction::none &&
           numel(shapeOf(mse.getPred())) >= kSplitMinLoss &&
           !readsCombined(mse.getPred()) && !readsCombined(mse.getTarget());
  if (auto ce = dyn_cast<CrossEntropyOp>(op)) {
    ArrayRef<int64_t> shape = shapeOf(ce.getLogits());
    return ce.getReduction() != Reduction::none && !shape.empty() &&
           numel(shape) >= kSplitMinLoss && !readsCombined(ce.getLogits()) &&
           !readsCombined(ce.getLabels());
  }
  return false;
}

/// A reduce op as a split reduction.
FailureOr<int> splitReduce(RegionEmitter &region, Operation *op, int target) {
  Value input = op->getOperand(0);
  ArrayRef<int64_t> inputShape = shapeOf(input);
  auto axes = cast<DenseI64ArrayAttr>(op->getAttr("axes")).asArrayRef();
  bool keepdims = op->hasAttr("keepdims");
  SmallVector<int64_t> reducedShape;
  for (int64_t axis : axes)
    reducedShape.push_back(inputShape[axis]);
  return emitSplit(
      region, op->getResult(0), reductionKind(op), numel(reducedShape),
      [&](KernelText &kernel, const Idx &resultIndex, const std::string &r) {
        Idx reducedIndex = kernel.decompose(r, reducedShape, "q");
        return kernel.eval(input,
                           reductionInputIndex(inputShape, axes, keepdims,
                                               resultIndex, reducedIndex));
      },
      target);
}

/// MSE with a mean or sum reduction as a split sum of squares.
FailureOr<int> splitMse(RegionEmitter &region, MseLossOp loss, int target) {
  ArrayRef<int64_t> predShape = shapeOf(loss.getPred());
  StringRef kind = loss.getReduction() == Reduction::mean ? "mean" : "sum";
  return emitSplit(
      region, loss.getResult(), kind, numel(predShape),
      [&](KernelText &kernel, const Idx &,
          const std::string &r) -> FailureOr<std::string> {
        Idx index = kernel.decompose(r, predShape, "q");
        FailureOr<std::string> pred = kernel.eval(loss.getPred(), index);
        FailureOr<std::string> truth = kernel.eval(loss.getTarget(), index);
        if (failed(pred) || failed(truth))
          return failure();
        std::string diff = kernel.let(computeType(elemOf(loss.getResult())),
                                      *pred + " - " + *truth, "d");
        return diff + " * " + diff;
      },
      target);
}

/// Cross-entropy with a mean or sum reduction: a block per row, the
/// blocks' sums and counts combined in order.
FailureOr<int> splitCrossEntropy(RegionEmitter &region, CrossEntropyOp loss,
                                 int target) {
  ArrayRef<int64_t> logitsShape = shapeOf(loss.getLogits());
  Value result = loss.getResult();
  Type resultType = elemOf(result);
  Type accType = partialType(resultType);
  std::string cxxType = computeType(resultType);
  int64_t classes = logitsShape.back();
  SmallVector<int64_t> rowShape(logitsShape.begin(), logitsShape.end() - 1);
  int64_t rows = numel(rowShape);
  int64_t blocks = std::clamp<int64_t>(rows, 1, kLossBlocks);
  int64_t block = rowBlock(classes);
  int sums = region.newScratch(accType, {blocks}, "loss partials");
  int counts = region.newScratch(accType, {blocks}, "loss counts");
  {
    KernelText kernel(region, region.kernelName());
    kernel.line("__shared__ " + cxxType + " sh[32];");
    std::string acc = kernel.let(cxxType, literal(0, resultType), "acc");
    std::string count = kernel.let(cxxType, literal(0, resultType), "cnt");
    kernel.open("for (loom::i64 row = blockIdx.x; row < " +
                std::to_string(rows) + "; row += gridDim.x)");
    Idx row = kernel.decompose("row", rowShape, "y");
    std::string skip;
    FailureOr<std::string> label = crossEntropyLabel(kernel, loss, row, skip);
    if (failed(label))
      return failure();
    // The whole block takes the branch (the label is the row's): the block
    // reductions inside stay uniform.
    kernel.open("if (!(" + skip + "))");
    std::string stats[2];
    for (int pass = 0; pass < 2; ++pass) {
      std::string local = kernel.let(cxxType,
                                     pass == 0 ? literal(-INFINITY, resultType)
                                               : literal(0, resultType),
                                     pass == 0 ? "m" : "s");
      kernel.open("for (loom::i64 c = threadIdx.x; c < " +
                  std::to_string(classes) + "; c += blockDim.x)");
      Idx logitIndex = row;
      logitIndex.push_back(classes == 1 ? "0" : "c");
      FailureOr<std::string> logit = kernel.eval(loss.getLogits(), logitIndex);
      if (failed(logit))
        return failure();
      if (pass == 0)
        kernel.line(local + " = loom::max_(" + local + ", " + *logit + ");");
      else
        kernel.line(local + " += loom::exp_(" + *logit + " - " + stats[0] +
                    ");");
      kernel.close();
      stats[pass] = kernel.let(
          cxxType,
          blockReduce(local, cxxType,
                      reductionCombineFn(pass == 0 ? "max" : "sum", cxxType),
                      pass == 0 ? literal(-INFINITY, resultType)
                                : literal(0, resultType)),
          pass == 0 ? "rm" : "rs");
    }
    FailureOr<std::string> rowLoss =
        crossEntropyRowLoss(kernel, loss, row, *label, stats[0], stats[1]);
    if (failed(rowLoss))
      return failure();
    kernel.line(acc + " += " + *rowLoss + ";");
    kernel.line(count + " += 1;");
    kernel.close();
    kernel.close();
    kernel.open("if (threadIdx.x == 0)");
    kernel.line("loom::st(" + kernel.param(sums, accType, true) +
                " + blockIdx.x, " + acc + ");");
    kernel.line("loom::st(" + kernel.param(counts, accType, true) +
                " + blockIdx.x, " + count + ");");
    kernel.close();
    region.addKernel(kernel, blocks, block,
                     "split loss: a block per row, " + std::to_string(blocks) +
                         " partials");
  }
  int combined =
      target >= 0 ? target : region.newScratch(resultType, {}, "loss");
  {
    KernelText kernel(region, region.kernelName());
    kernel.open("if (blockIdx.x == 0 && threadIdx.x == 0)");
    std::string acc = kernel.let(cxxType, literal(0, resultType), "acc");
    std::string count = kernel.let(cxxType, literal(0, resultType), "cnt");
    std::string inSums = kernel.param(sums, accType, false);
    std::string inCounts = kernel.param(counts, accType, false);
    kernel.open("for (loom::i64 b = 0; b < " + std::to_string(blocks) +
                "; ++b)");
    kernel.line(acc + " += loom::ld(" + inSums + "[b]);");
    kernel.line(count + " += loom::ld(" + inCounts + "[b]);");
    kernel.close();
    if (loss.getReduction() == Reduction::mean)
      kernel.line(acc + " = " + count + " > 0 ? " + acc + " / " + count +
                  " : " + literal(NAN, resultType) + ";");
    kernel.line("loom::st(" + kernel.param(combined, resultType, true) + ", " +
                acc + ");");
    kernel.close();
    region.addKernel(kernel, 1, 32, "split loss: combine");
  }
  return combined;
}

} // namespace

/// Elements per chunk of a graph.sum_squares, and the most blocks that walk
/// the chunks.
constexpr int64_t kSquaresChunk = 65536;
constexpr int64_t kSquaresBlocks = 1024;

/// graph.sum_squares: one kernel over every operand (through a pointer
/// table, whatever their number), its blocks walking a table of chunks of
/// kSquaresChunk elements (chunk c: operand, first element, count) with a
/// stride of the grid and writing one partial sum each; then one block
/// sums the partials in order. Every operand is read once; the result is
/// the same bits run to run.
LogicalResult emitSumSquaresRegion(RegionEmitter &region, SumSquaresOp op) {
  Type elem = elemOf(op.getResult());
  std::string acc = computeType(elem) == "double" ? "double" : "float";
  // The chunk table, in the source as constants.
  SmallVector<int64_t> chunkOperand, chunkStart, chunkCount;
  for (auto [k, input] : llvm::enumerate(op.getInputs())) {
    int64_t n = numel(shapeOf(input));
    for (int64_t start = 0; start < n; start += kSquaresChunk) {
      chunkOperand.push_back(static_cast<int64_t>(k));
      chunkStart.push_back(start);
      chunkCount.push_back(std::min(kSquaresChunk, n - start));
    }
  }
  int64_t chunks = static_cast<int64_t>(chunkOperand.size());
  int64_t blocks = std::max<int64_t>(1, std::min(chunks, kSquaresBlocks));
  std::string name = region.kernelName();
  auto table = [&](StringRef suffix, StringRef type, ArrayRef<int64_t> v) {
    std::vector<std::string> elements;
    for (int64_t x : v)
      elements.push_back(std::to_string(x));
    return region.deviceArray(name + "_" + suffix.str(), type, elements);
  };
  std::string operandOf = table("operand", "int", chunkOperand);
  std::string startOf = table("start", "long long", chunkStart);
  std::string countOf = table("count", "int", chunkCount);
  Type accType = acc == "double" ? Type(Float64Type::get(op.getContext()))
                                 : Type(Float32Type::get(op.getContext()));
  int partials = region.newScratch(accType, {blocks}, "sum_squares_partials");
  {
    KernelText kernel(region, name);
    kernel.tableAlways = true;
    for (Value input : op.getInputs()) {
      FailureOr<int> buffer = operandBuffer(region, input);
      if (failed(buffer))
        return failure();
      kernel.param(*buffer, elem, false);
    }
    std::string out = kernel.param(partials, accType, true);
    std::string st = storageType(elem);
    kernel.line("__shared__ " + acc + " sh[32];");
    kernel.line(acc + " acc = 0;");
    kernel.open("for (int c = blockIdx.x; c < " + std::to_string(chunks) +
                "; c += gridDim.x)");
    kernel.line("const " + st + " *x = static_cast<const " + st +
                " *>(loom_table[" + operandOf + "[c]]) + " + startOf + "[c];");
    kernel.open("for (int e = threadIdx.x; e < " + countOf +
                "[c]; e += blockDim.x)");
    kernel.line(acc + " v = loom::ld(x[e]);");
    kernel.line("acc += v * v;");
    kernel.close();
    kernel.close();
    kernel.line(
        "acc = " +
        blockReduce("acc", acc, "loom::add_<" + acc + ">", acc + "(0)") + ";");
    kernel.line("if (threadIdx.x == 0) " + out + "[blockIdx.x] = acc;");
    region.addKernel(kernel, blocks, kBlock,
                     "sum of squares, " + std::to_string(chunks) +
                         " chunks of " + std::to_string(op.getNumOperands()) +
                         " tensors");
  }
  int result = region.bufferOfResult(op.getResult());
  if (result < 0)
    return success(); // the region does not yield it: nothing reads it
  {
    KernelText kernel(region, region.kernelName());
    std::string in = kernel.param(partials, accType, false);
    std::string out = kernel.param(result, elem, true);
    kernel.line("__shared__ " + acc + " sh[32];");
    kernel.line(acc + " acc = 0;");
    kernel.line("for (int p = threadIdx.x; p < " + std::to_string(blocks) +
                "; p += blockDim.x) acc += " + in + "[p];");
    kernel.line(
        "acc = " +
        blockReduce("acc", acc, "loom::add_<" + acc + ">", acc + "(0)") + ";");
    kernel.line("if (threadIdx.x == 0) loom::st(" + out + ", acc);");
    region.addKernel(kernel, 1, kBlock, "sum of squares: the partials");
  }
  return success();
}

FailureOr<bool> emitSplitReductions(RegionEmitter &region) {
  Block &body = region.fusion.getBody().front();
  // Every op that combines elements must split; otherwise the region
  // keeps its row or map kernel.
  SmallVector<Operation *> splits;
  for (Operation &op : body.without_terminator())
    if (combinesElements(&op))
      splits.push_back(&op);
  if (splits.empty())
    return false;
  // Every op decided first: the kernels are emitted only when all qualify.
  if (!llvm::all_of(splits, splittable))
    return false;
  // A split result the region yields as it is: the combining kernel
  // writes the region's result buffer, and the map kernel skips it.
  auto yield = cast<kernel::YieldOp>(body.getTerminator());
  SmallVector<Value> values;
  SmallVector<int> buffers;
  DenseMap<Value, int> direct;
  for (auto [value, buffer] :
       llvm::zip(yield.getOperands(), region.resultBuffers)) {
    Operation *def = value.getDefiningOp();
    if (def && llvm::is_contained(splits, def) && !direct.count(value)) {
      direct[value] = buffer;
      continue;
    }
    values.push_back(value);
    buffers.push_back(buffer);
  }
  DenseMap<Value, int> readBack;
  for (Operation *op : splits) {
    Value result = op->getResult(0);
    int target = direct.count(result) ? direct[result] : -1;
    FailureOr<int> buffer =
        isa<CrossEntropyOp>(op)
            ? splitCrossEntropy(region, cast<CrossEntropyOp>(op), target)
        : isa<MseLossOp>(op) ? splitMse(region, cast<MseLossOp>(op), target)
                             : splitReduce(region, op, target);
    if (failed(buffer))
      return failure();
    readBack[result] = *buffer;
  }
  if (!values.empty() && failed(region.emitMap(values, buffers, readBack)))
    return failure();
  return true;
}

} // namespace loom::codegen::cuda::detail
