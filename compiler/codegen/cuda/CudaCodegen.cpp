//===- CudaCodegen.cpp - graph IR to a CUDA program -----------------------===//

#include "compiler/codegen/cuda/CudaCodegen.h"

#include "compiler/codegen/cuda/CudaEmitter.h"
#include "passes/Fusion/Passes.h"
#include "passes/Quantization/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace loom::codegen {

void buildCudaRegionPipeline(OpPassManager &pm,
                             const CudaCodegenOptions &options) {
  // Matmuls of dequantized 8-bit tensors run as cuBLASLt's int8 GEMM
  // (CudaEmitGemm.cpp), as the CPU's run as its integer GEMM; before
  // attention fusion, which would keep them in floats.
  pm.addNestedPass<func::FuncOp>(createIntegerMatmulPass());
  // A training step's attention was fused before autodiff (its gradient
  // with it); an inference graph's is fused here.
  if (options.fuseAttentionMinScores >= 0) {
    FuseAttentionPassOptions attention;
    attention.summary = options.printFusion;
    attention.minScores = options.fuseAttentionMinScores;
    pm.addPass(createFuseAttentionPass(attention, nullptr));
  }
  FusionPassOptions fusion;
  fusion.report = options.fusionReport;
  fusion.summary = options.printFusion;
  pm.addPass(createFusionPass(fusion));
}

FailureOr<cuda::Program> compileForCuda(ModuleOp module, StringRef entry,
                                        unsigned numInputs,
                                        const CudaCodegenOptions &options) {
  auto func = module.lookupSymbol<func::FuncOp>(entry);
  if (!func)
    return module.emitError("no function '") << entry << "' to compile";
  PassManager pm(module.getContext());
  buildCudaRegionPipeline(pm, options);
  if (options.timing)
    pm.enableTiming();
  if (failed(pm.run(module)))
    return failure();
  return cuda::emitCudaProgram(func, numInputs);
}

} // namespace loom::codegen
