//===- CudaEmitGemm.cpp - matmuls as cuBLASLt calls -----------------------===//
//
// A region holding a matmul becomes a cuBLASLt call (bias + ReLU or
// tanh-GELU as its epilogue when that is all the region adds), followed
// by a map kernel for any other epilogue, which reads the product back
// from its buffer. Operands that are not region operands are computed
// into scratch by map kernels first. Convolutions are not emitted yet.
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
LogicalResult setGemmShape(MatmulOp matmul, Gemm &gemm) {
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
  } else {
    return matmul.emitError(
               "CUDA codegen: graph.matmul with batch dims broadcast "
               "on both sides is not supported yet [")
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

/// The cuBLASLt call of the region's matmul, then a map kernel of the
/// region's other results when its epilogue is not cuBLASLt's.
LogicalResult emitMatmulRegion(RegionEmitter &region, MatmulOp matmul) {
  Type type = elemOf(matmul.getResult());
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
  table.addValue<MatmulOp>([](KernelText &, Operation *op, Value, const Idx &) {
    return emitUnsupported(op, "a matmul is a cuBLASLt call and fuses into no "
                               "other kernel");
  });
  table.addValue<MatmulIntegerOp>(
      [](KernelText &, Operation *op, Value, const Idx &) {
        return emitUnsupported(op, "the 8-bit integer GEMM (cuBLASLt's int8 "
                                   "path) is not emitted yet; the CPU target "
                                   "runs it");
      });
  table.addValue<ConvOp>([](KernelText &, Operation *op, Value, const Idx &) {
    return emitUnsupported(
        op, "convolution (im2col + cuBLASLt) is not emitted yet");
  });
}

} // namespace loom::codegen::cuda::detail
