//===- CudaEmitGemm.cpp - matmuls as cuBLASLt calls -----------------------===//
//
// A region holding a matmul becomes a cuBLASLt call (bias + ReLU or
// tanh-GELU as its epilogue when that is all the region adds), followed
// by a map kernel for any other epilogue, which reads the product back
// from its buffer. Operands that are not region operands are computed
// into scratch by map kernels first. Convolutions are not emitted yet.
//
// Integer matmuls (`graph.matmul_integer`, exact in i32): cuBLASLt's int8
// GEMM (s8 x s8 -> s32, CUBLAS_COMPUTE_32I) where its IMMA layout rules
// hold (K and N multiples of 4; A row-major, B stored N x K), with small
// kernels around it for what cuBLASLt cannot do: u8 operands read less
// 128 (their zero points too) and laid out as cuBLASLt wants, in one pass
// that also sums each row when the other operand's zero point is not 0;
// the zero-point corrections
//   (a - za)(b - zb) = ab - za colsum(b) - zb rowsum(a) + k za zb
// are computed where the map kernel reads the product, with the region's
// epilogue (a requantization). Other shapes, and `graph.matmul` of
// integers, are an exact loop over K per output in the map kernel.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/cuda/CudaEmitInternal.h"

#include "dialects/graph/LocationString.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace loom::graph;

namespace loom::codegen::cuda::detail {
namespace {

/// cuBLASLt's name of element type `type` ("f32", "f16", "bf16", "f64");
/// "" for a type it does not take.
std::string gemmElementType(Type type) {
  return type.isF32()    ? "f32"
         : type.isF16()  ? "f16"
         : type.isBF16() ? "bf16"
         : type.isF64()  ? "f64"
                         : "";
}

/// Fills `gemm`'s M, N, K, batch count, transposes and batch strides from
/// the matmul's operand shapes (row-major terms, see Gemm).
template <typename MatmulT>
LogicalResult setGemmShape(MatmulT matmul, Gemm &gemm, bool report = true) {
  ArrayRef<int64_t> lhsShape = shapeOf(matmul.getLhs()),
                    rhsShape = shapeOf(matmul.getRhs());
  gemm.transA = matmul.getTransposeLhs() && lhsShape.size() >= 2;
  gemm.transB = matmul.getTransposeRhs() && rhsShape.size() >= 2;
  SmallVector<int64_t> lhsBatch, rhsBatch;
  if (lhsShape.size() == 1) {
    gemm.m = 1;
    gemm.k = lhsShape[0];
  } else {
    lhsBatch.assign(lhsShape.begin(), lhsShape.end() - 2);
    gemm.m = gemm.transA ? lhsShape.back() : lhsShape[lhsShape.size() - 2];
    gemm.k = gemm.transA ? lhsShape[lhsShape.size() - 2] : lhsShape.back();
  }
  if (rhsShape.size() == 1) {
    gemm.n = 1;
  } else {
    rhsBatch.assign(rhsShape.begin(), rhsShape.end() - 2);
    gemm.n = gemm.transB ? rhsShape[rhsShape.size() - 2] : rhsShape.back();
  }
  int64_t lhsBatches = numel(lhsBatch), rhsBatches = numel(rhsBatch);
  auto stripLeadingOnes = [](SmallVector<int64_t> shape) {
    while (!shape.empty() && shape.front() == 1)
      shape.erase(shape.begin());
    return shape;
  };
  if (rhsBatches == 1 && !gemm.transA) {
    // One right-hand side: the left's batches are more rows.
    gemm.m *= lhsBatches;
  } else if (lhsBatches == rhsBatches &&
             stripLeadingOnes(lhsBatch) == stripLeadingOnes(rhsBatch)) {
    gemm.batch = lhsBatches;
    gemm.strideA = gemm.m * gemm.k;
    gemm.strideB = gemm.k * gemm.n;
  } else if (lhsBatches == 1) {
    gemm.batch = rhsBatches;
    gemm.strideB = gemm.k * gemm.n;
  } else if (rhsBatches == 1) {
    gemm.batch = lhsBatches;
    gemm.strideA = gemm.m * gemm.k;
  } else if (!report) {
    return failure();
  } else {
    return matmul.emitError("CUDA codegen: ")
           << matmul->getName()
           << " with batch dims broadcast on both sides is not supported yet ["
           << locationString(matmul.getLoc()) << "]";
  }
  gemm.strideD = gemm.batch > 1 ? gemm.m * gemm.n : 0;
  return success();
}

/// The region's ops other than `matmul` and constants: its epilogue.
SmallVector<Operation *> epilogueOps(RegionEmitter &region, MatmulOp matmul) {
  SmallVector<Operation *> rest;
  for (Operation &op : region.fusion.getBody().front().without_terminator())
    if (&op != matmul.getOperation() && !isa<graph::ConstantOp>(op))
      rest.push_back(&op);
  return rest;
}

/// Whether the epilogue `rest` is only a bias add and an optional ReLU or
/// tanh-GELU that cuBLASLt computes, and the region's one result; sets
/// `gemm`'s bias and activation when it is (they may be set when not).
bool fuseEpilogue(RegionEmitter &region, MatmulOp matmul,
                  ArrayRef<Operation *> rest, Gemm &gemm) {
  auto yield =
      cast<kernel::YieldOp>(region.fusion.getBody().front().getTerminator());
  Value product = matmul.getResult();
  Value last = product;
  bool fused = yield.getNumOperands() == 1 && rest.size() <= 2;
  if (fused && !rest.empty()) {
    auto add = dyn_cast<AddOp>(rest[0]);
    fused = add && product.hasOneUse() &&
            ArrayRef<int64_t>(shapeOf(add.getResult())) == shapeOf(product);
    if (fused) {
      Value bias = add.getLhs() == product ? add.getRhs() : add.getLhs();
      ArrayRef<int64_t> biasShape = shapeOf(bias);
      fused = isa<BlockArgument>(bias) && !biasShape.empty() &&
              biasShape.back() == gemm.n && numel(biasShape) == gemm.n &&
              gemm.n > 1;
      if (fused)
        gemm.bias = region.bufferOfArg(cast<BlockArgument>(bias));
      last = add.getResult();
    }
    if (fused && rest.size() == 2) {
      Operation *activation = rest[1];
      auto gelu = dyn_cast<GeluOp>(activation);
      fused = activation->getOperand(0) == last && last.hasOneUse() &&
              (isa<ReluOp>(activation) ||
               (gelu && gelu.getApproximate() == GeluApproximation::tanh));
      gemm.activation = isa<ReluOp>(activation) ? "relu" : "gelu";
      last = activation->getResult(0);
    }
  }
  return fused && yield.getOperand(0) == last;
}

/// The region's results computed by one map kernel.
LogicalResult emitRegionMap(RegionEmitter &region) {
  auto yield =
      cast<kernel::YieldOp>(region.fusion.getBody().front().getTerminator());
  SmallVector<Value> values(yield.getOperands());
  return region.emitMap(values, region.resultBuffers);
}

/// The shapes of a matmul (graph.matmul's rules: 1-D operands as vectors,
/// batch dims broadcast, transpose flags on 2-D and up).
struct MatmulShape {
  ArrayRef<int64_t> lhs, rhs, result;
  bool transLhs = false, transRhs = false;
  int64_t k = 0;

  MatmulShape(Value lhsValue, Value rhsValue, Value resultValue,
              bool transposeLhs, bool transposeRhs)
      : lhs(shapeOf(lhsValue)), rhs(shapeOf(rhsValue)),
        result(shapeOf(resultValue)), transLhs(transposeLhs && lhs.size() >= 2),
        transRhs(transposeRhs && rhs.size() >= 2) {
    k = lhs.size() == 1 ? lhs[0] : transLhs ? lhs[lhs.size() - 2] : lhs.back();
  }

  /// The batch dims of the result.
  int64_t resultBatchRank() const {
    return static_cast<int64_t>(result.size()) - (lhs.size() > 1) -
           (rhs.size() > 1);
  }

  /// The index into an operand of `shape` (2-D or more, transposed when
  /// `trans`) of row `row` and column `col` of its matrix, its batch dims
  /// taken from the result's `index`.
  static Idx operandIdx(ArrayRef<int64_t> shape, int64_t resultBatchRank,
                        const Idx &index, const std::string &row,
                        const std::string &col, bool trans) {
    Idx out;
    int64_t batchRank = static_cast<int64_t>(shape.size()) - 2;
    for (int64_t d = 0; d < batchRank; ++d)
      out.push_back(shape[d] == 1 ? "0"
                                  : index[resultBatchRank - batchRank + d]);
    out.push_back(trans ? col : row);
    out.push_back(trans ? row : col);
    for (int64_t d = batchRank; d < batchRank + 2; ++d)
      if (shape[d] == 1)
        out[d] = "0";
    return out;
  }

  /// The lhs element (i, r) and rhs element (r, j) of the result element
  /// at `index`, r the reduction's variable.
  Idx lhsIdx(const Idx &index, const std::string &r) const {
    std::string i = lhs.size() == 1 ? "0" : index[resultBatchRank()];
    if (lhs.size() == 1)
      return {lhs[0] == 1 ? "0" : r};
    return operandIdx(lhs, resultBatchRank(), index, i, r, transLhs);
  }
  Idx rhsIdx(const Idx &index, const std::string &r) const {
    std::string j = rhs.size() == 1 ? "0" : index.back();
    if (rhs.size() == 1)
      return {rhs[0] == 1 ? "0" : r};
    return operandIdx(rhs, resultBatchRank(), index, r, j, transRhs);
  }
};

/// An integer matmul's element at `index`: an exact loop over K. For
/// graph.matmul_integer, `(a - za) * (b - zb)` summed in 64 bits (exact:
/// each product is below 2^16) and stored as i32; for graph.matmul of
/// integers, products and sums wrapping at the result's width, as on the
/// CPU.
FailureOr<std::string> emitIntegerDot(KernelText &kernel, Operation *op,
                                      Value lhs, Value rhs, Value lhsZero,
                                      Value rhsZero, bool transLhs,
                                      bool transRhs, const Idx &index) {
  Value result = op->getResult(0);
  MatmulShape shape(lhs, rhs, result, transLhs, transRhs);
  std::string za, zb;
  if (lhsZero) {
    FailureOr<std::string> z = kernel.eval(lhsZero, {});
    if (failed(z))
      return failure();
    za = *z;
    z = kernel.eval(rhsZero, {});
    if (failed(z))
      return failure();
    zb = *z;
  }
  std::string acc = kernel.let("loom::u64", "0", "acc");
  std::string r = kernel.fresh("r");
  kernel.open("for (loom::i64 " + r + " = 0; " + r + " < " +
              std::to_string(shape.k) + "; ++" + r + ")");
  FailureOr<std::string> a = kernel.eval(lhs, shape.lhsIdx(index, r));
  if (failed(a))
    return failure();
  FailureOr<std::string> b = kernel.eval(rhs, shape.rhsIdx(index, r));
  if (failed(b))
    return failure();
  if (lhsZero)
    kernel.line(acc + " += (loom::u64)(loom::i64)((" + *a + " - " + za +
                ") * (" + *b + " - " + zb + "));");
  else
    kernel.line(acc + " += (loom::u64)(loom::i64)" + *a +
                " * (loom::u64)(loom::i64)" + *b + ";");
  kernel.close();
  std::string type = computeType(elemOf(result));
  return kernel.let(type, "(" + type + ")(" + storageType(elemOf(result)) +
                              ")" + acc);
}

/// Whether `value` is a constant (in the region) whose one value is `v`.
bool isConstantValue(Value value, int64_t v) {
  auto constant = value.getDefiningOp<graph::ConstantOp>();
  if (!constant)
    return false;
  auto attr = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (!attr || !attr.isSplat() || !isa<IntegerType>(attr.getElementType()))
    return false;
  APInt bits = attr.getSplatValue<APInt>();
  return attr.getElementType().isUnsignedInteger()
             ? static_cast<int64_t>(bits.getZExtValue()) == v
             : bits.getSExtValue() == v;
}

/// One operand of the int8 GEMM as cuBLASLt's IMMA layout wants it: s8,
/// rows of K contiguous (the lhs as M x K, the rhs as N x K), batches
/// after one another as the operand's own batch dims.
struct Int8Operand {
  Value value;
  /// Read as matrix[col, row] rather than [row, col].
  bool transposed = false;
  /// The operand's batch dims and the rows of its matrix (M or N).
  SmallVector<int64_t> batchShape;
  int64_t rows = 0;
  /// u8: read less 128 (the zero point too).
  bool unsignedInt = false;
  /// The buffer cuBLASLt reads, and of the row sums (-1: none).
  int buffer = -1, sums = -1;

  int64_t batches() const { return numel(batchShape); }
};

/// The kernel that writes `x` as s8 rows of `k` (when it is not already
/// a region operand in that form) and, with `wantSums`, each row's sum:
/// one thread per row.
LogicalResult emitInt8Operand(RegionEmitter &region, Int8Operand &x, int64_t k,
                              bool wantSums, StringRef what) {
  Type i8 = IntegerType::get(x.value.getContext(), 8);
  Type i32 = IntegerType::get(x.value.getContext(), 32);
  bool ready = isa<BlockArgument>(x.value) && !x.transposed && !x.unsignedInt;
  if (ready)
    x.buffer = region.bufferOfArg(cast<BlockArgument>(x.value));
  if (ready && !wantSums)
    return success();
  int64_t totalRows = x.batches() * x.rows;
  if (!ready)
    x.buffer = region.newScratch(i8, {totalRows, k}, (what + " s8").str());
  if (wantSums)
    x.sums = region.newScratch(i32, {totalRows}, (what + " row sums").str());
  KernelText kernel(region, region.kernelName());
  kernel.open("for (loom::i64 row = blockIdx.x * (loom::i64)blockDim.x + "
              "threadIdx.x; row < " +
              std::to_string(totalRows) +
              "; row += (loom::i64)gridDim.x * blockDim.x)");
  SmallVector<int64_t> rowShape(x.batchShape);
  rowShape.push_back(x.rows);
  Idx rowIdx = kernel.decompose("row", rowShape, "x");
  std::string sum;
  if (wantSums)
    sum = kernel.let("int", "0", "sum");
  kernel.open("for (loom::i64 c = 0; c < " + std::to_string(k) + "; ++c)");
  // The operand's index: its batch dims, then [row, c] or [c, row].
  ArrayRef<int64_t> shape = shapeOf(x.value);
  Idx index;
  if (shape.size() == 1) {
    index.push_back(shape[0] == 1 ? "0" : "c");
  } else {
    index.assign(rowIdx.begin(), rowIdx.end() - 1);
    index.push_back(x.transposed ? "c" : rowIdx.back());
    index.push_back(x.transposed ? rowIdx.back() : "c");
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] == 1)
        index[d] = "0";
  }
  FailureOr<std::string> element = kernel.eval(x.value, index);
  if (failed(element))
    return failure();
  std::string v =
      x.unsignedInt ? kernel.let("int", *element + " - 128", "s") : *element;
  if (!ready)
    kernel.line("loom::st(" + kernel.param(x.buffer, i8, true) + " + row * " +
                std::to_string(k) + " + c, (signed char)" + v + ");");
  if (wantSums)
    kernel.line(sum + " += " + v + ";");
  kernel.close();
  if (wantSums)
    kernel.line("loom::st(" + kernel.param(x.sums, i32, true) + " + row, " +
                sum + ");");
  kernel.close();
  region.addKernel(kernel, gridFor(totalRows, kBlock), kBlock,
                   (what + (ready ? " row sums" : " to s8 rows")).str());
  return success();
}

/// graph.matmul_integer's region: the int8 GEMM with its operand and
/// correction kernels where cuBLASLt's IMMA rules hold, else the exact
/// loop in the map kernel.
LogicalResult emitMatmulIntegerRegion(RegionEmitter &region,
                                      MatmulIntegerOp matmul) {
  Gemm gemm;
  gemm.elementType = "i8";
  MatmulShape shape(matmul.getLhs(), matmul.getRhs(), matmul.getResult(),
                    matmul.getTransposeLhs(), matmul.getTransposeRhs());
  // A rhs vector (N = 1), shapes off cuBLASLt's multiples of 4, and batch
  // dims broadcast on both sides take the exact loop.
  if (shape.rhs.size() < 2 || shape.k % kInt8GemmMultiple != 0)
    return emitRegionMap(region);
  // Batch dims broadcast on both sides: the loop.
  if (failed(setGemmShape(matmul, gemm, /*report=*/false)) ||
      gemm.n % kInt8GemmMultiple != 0)
    return emitRegionMap(region);

  Value lhsZero = matmul.getLhsZero(), rhsZero = matmul.getRhsZero();
  Int8Operand a, b;
  a.value = matmul.getLhs();
  a.transposed = shape.transLhs;
  a.unsignedInt = elemOf(a.value).isUnsignedInteger();
  if (shape.lhs.size() > 2)
    a.batchShape.assign(shape.lhs.begin(), shape.lhs.end() - 2);
  a.rows = shape.lhs.size() == 1 ? 1
           : shape.transLhs      ? shape.lhs.back()
                                 : shape.lhs[shape.lhs.size() - 2];
  b.value = matmul.getRhs();
  // cuBLASLt's IMMA path wants B stored N x K: a rhs stored K x N is
  // transposed while it is made s8.
  b.transposed = !shape.transRhs;
  b.unsignedInt = elemOf(b.value).isUnsignedInteger();
  b.batchShape.assign(shape.rhs.begin(), shape.rhs.end() - 2);
  b.rows = shape.transRhs ? shape.rhs[shape.rhs.size() - 2] : shape.rhs.back();
  // The shifted zero points: a correction is needed unless one is 0.
  bool lhsZeroIsZero = isConstantValue(lhsZero, a.unsignedInt ? 128 : 0);
  bool rhsZeroIsZero = isConstantValue(rhsZero, b.unsignedInt ? 128 : 0);
  // rowsum(a) goes with zb, colsum(b) (b's rows here) with za.
  if (failed(emitInt8Operand(region, a, gemm.k, !rhsZeroIsZero, "lhs")) ||
      failed(emitInt8Operand(region, b, gemm.k, !lhsZeroIsZero, "rhs")))
    return failure();
  gemm.a = a.buffer;
  gemm.b = b.buffer;
  gemm.transA = false;
  gemm.transB = true;
  // The operands as laid out: A' [lhs batches, M, K], B' [rhs batches, N,
  // K]; setGemmShape's strides count the same elements.
  gemm.bias = -1;
  gemm.activation = "none";
  gemm.description = region.description();
  gemm.name = region.fusion.getName().str() + "_gemm";

  auto yield =
      cast<kernel::YieldOp>(region.fusion.getBody().front().getTerminator());
  Value product = matmul.getResult();
  bool corrected = !lhsZeroIsZero || !rhsZeroIsZero;
  bool onlyProduct = yield.getNumOperands() == 1 &&
                     yield.getOperand(0) == product && !corrected;
  gemm.d = onlyProduct ? region.resultBuffers[0]
                       : region.newScratch(elemOf(product), shapeOf(product),
                                           "int8 matmul");
  Program &program = region.program;
  program.source += llvm::formatv(
      "\n// {0}\n// {1}: cuBLASLt int8 matmul m={2} n={3} k={4} batch={5} "
      "(s8 x s8 -> s32, CUBLAS_COMPUTE_32I; A M x K, B N x K){6}\n",
      gemm.description, gemm.name, gemm.m, gemm.n, gemm.k, gemm.batch,
      corrected ? ", zero points corrected in the map kernel" : "");
  program.steps.push_back({Step::Gemm, static_cast<int>(program.gemms.size())});
  program.gemms.push_back(gemm);
  if (onlyProduct)
    return success();

  SmallVector<Value> values(yield.getOperands());
  if (!corrected) {
    DenseMap<Value, int> readBack;
    readBack[product] = gemm.d;
    return region.emitMap(values, region.resultBuffers, readBack);
  }
  // The product at an index: D less the zero points' terms, in 64 bits
  // (exact), stored as i32.
  Gemm g = gemm;
  Type i32 = elemOf(product);
  ArrayRef<int64_t> productShape = shapeOf(product);
  auto correctedProduct = [=](KernelText &kernel,
                              const Idx &index) -> FailureOr<std::string> {
    std::string off =
        kernel.let("loom::i64", linearize(index, productShape), "off");
    std::string d = kernel.let(
        "loom::i64",
        "loom::ld(" + kernel.param(g.d, i32, false) + "[" + off + "])", "d");
    // D's element (batch, i, j); the batch only where a sum has batches.
    std::string row = "(" + off + " / " + std::to_string(g.n) + ")";
    std::string batch = "(" + row + " / " + std::to_string(g.m) + ")";
    std::string i = "(" + row + " % " + std::to_string(g.m) + ")";
    std::string j = "(" + off + " % " + std::to_string(g.n) + ")";
    std::string expr = d;
    std::string za, zb;
    if (!lhsZeroIsZero) {
      FailureOr<std::string> z = kernel.eval(lhsZero, {});
      if (failed(z))
        return failure();
      za = kernel.let("loom::i64",
                      "(loom::i64)" + *z + (a.unsignedInt ? " - 128" : ""),
                      "za");
      std::string colsum =
          "loom::ld(" + kernel.param(b.sums, i32, false) + "[" +
          (g.strideB ? batch + " * " + std::to_string(g.n) + " + " : "") + j +
          "])";
      expr += " - " + za + " * " + colsum;
    }
    if (!rhsZeroIsZero) {
      FailureOr<std::string> z = kernel.eval(rhsZero, {});
      if (failed(z))
        return failure();
      zb = kernel.let("loom::i64",
                      "(loom::i64)" + *z + (b.unsignedInt ? " - 128" : ""),
                      "zb");
      std::string rowsum =
          "loom::ld(" + kernel.param(a.sums, i32, false) + "[" +
          (g.strideA ? batch + " * " + std::to_string(g.m) + " + " : "") + i +
          "])";
      expr += " - " + zb + " * " + rowsum;
    }
    if (!lhsZeroIsZero && !rhsZeroIsZero)
      expr += " + " + std::to_string(g.k) + " * " + za + " * " + zb;
    return kernel.let("int", "(int)(" + expr + ")", "p");
  };
  DenseMap<Value, RegionEmitter::ComputedValue> computed;
  computed[product] = correctedProduct;
  return region.emitMap(values, region.resultBuffers, {}, computed);
}

/// The cuBLASLt call of the region's matmul, then a map kernel of the
/// region's other results when its epilogue is not cuBLASLt's.
LogicalResult emitMatmulRegion(RegionEmitter &region, MatmulOp matmul) {
  Type type = elemOf(matmul.getResult());
  // Integers: exact, in the map kernel (emitIntegerDot).
  if (isa<IntegerType>(type))
    return emitRegionMap(region);
  std::string elementType = gemmElementType(type);
  if (elementType.empty())
    return matmul.emitError("CUDA codegen: graph.matmul of ")
           << type
           << " is not supported yet (cuBLASLt takes f32, f16, bf16, f64) ["
           << locationString(matmul.getLoc()) << "]";
  Gemm gemm;
  gemm.elementType = elementType;
  if (failed(setGemmShape(matmul, gemm)))
    return failure();
  FailureOr<int> lhs = operandBuffer(region, matmul.getLhs());
  if (failed(lhs))
    return failure();
  FailureOr<int> rhs = operandBuffer(region, matmul.getRhs());
  if (failed(rhs))
    return failure();
  gemm.a = *lhs;
  gemm.b = *rhs;

  // The epilogue: bias (+ relu or tanh-gelu) in cuBLASLt, or a map kernel.
  auto yield =
      cast<kernel::YieldOp>(region.fusion.getBody().front().getTerminator());
  Value product = matmul.getResult();
  SmallVector<Operation *> rest = epilogueOps(region, matmul);
  bool fused = fuseEpilogue(region, matmul, rest, gemm);
  gemm.name = region.fusion.getName().str() +
              (fused && !rest.empty() ? "_gemm_epilogue" : "_gemm");
  gemm.description = region.description();
  if (fused) {
    gemm.d = region.resultBuffers[0];
  } else {
    gemm.bias = -1;
    gemm.activation = "none";
    // The product's own buffer: its region result when yielded, else
    // scratch.
    gemm.d = region.bufferOrScratch(product, "matmul");
  }
  Program &program = region.program;
  program.source += llvm::formatv(
      "\n// {0}\n// {1}: cuBLASLt matmul m={2} n={3} k={4} batch={5} "
      "trans_a={6} trans_b={7} {8}, epilogue {9}{10}\n",
      gemm.description, gemm.name, gemm.m, gemm.n, gemm.k, gemm.batch,
      gemm.transA, gemm.transB, gemm.elementType, gemm.bias >= 0 ? "bias+" : "",
      gemm.activation);
  program.steps.push_back({Step::Gemm, static_cast<int>(program.gemms.size())});
  program.gemms.push_back(gemm);
  if (fused)
    return success();
  SmallVector<Value> epilogueValues;
  SmallVector<int> epilogueBuffers;
  for (auto [value, buffer] :
       llvm::zip(yield.getOperands(), region.resultBuffers))
    if (value != product) {
      epilogueValues.push_back(value);
      epilogueBuffers.push_back(buffer);
    }
  if (epilogueValues.empty())
    return success();
  DenseMap<Value, int> readBack;
  readBack[product] = gemm.d;
  return region.emitMap(epilogueValues, epilogueBuffers, readBack);
}

} // namespace

FailureOr<int> operandBuffer(RegionEmitter &region, Value operand) {
  if (auto arg = dyn_cast<BlockArgument>(operand))
    return region.bufferOfArg(arg);
  int scratch = region.newScratch(elemOf(operand), shapeOf(operand), "operand");
  if (failed(region.emitMap({operand}, {scratch})))
    return failure();
  return scratch;
}

void registerGemmEmitters(OpEmitterTable &table) {
  table.addWholeRegion(emitMatmulRegion);
  // A second matmul reached from a region's map kernel.
  table.add<MatmulOp>([](KernelText &kernel, MatmulOp op, Value,
                         const Idx &index) -> FailureOr<std::string> {
    if (isa<IntegerType>(elemOf(op.getResult())))
      return emitIntegerDot(kernel, op, op.getLhs(), op.getRhs(), Value(),
                            Value(), op.getTransposeLhs(), op.getTransposeRhs(),
                            index);
    return emitUnsupported(op, "a matmul is a cuBLASLt call and fuses into no "
                               "other kernel");
  });
  table.addWholeRegion(emitMatmulIntegerRegion);
  // The exact loop (shapes cuBLASLt's int8 GEMM does not take).
  table.add<MatmulIntegerOp>([](KernelText &kernel, MatmulIntegerOp op, Value,
                                const Idx &index) {
    return emitIntegerDot(kernel, op, op.getLhs(), op.getRhs(), op.getLhsZero(),
                          op.getRhsZero(), op.getTransposeLhs(),
                          op.getTransposeRhs(), index);
  });
  table.addValue<ConvIntegerOp>(
      [](KernelText &, Operation *op, Value, const Idx &) {
        return emitUnsupported(op, "the 8-bit integer convolution is not "
                                   "emitted yet; the CPU target runs it");
      });
  table.addValue<ConvOp>([](KernelText &, Operation *op, Value, const Idx &) {
    return emitUnsupported(
        op, "convolution (im2col + cuBLASLt) is not emitted yet");
  });
}

} // namespace loom::codegen::cuda::detail
