//===- InitAll.cpp - register Loom's dialects and passes ------------------===//
//
// Keep the heavy dialect includes in this file only: every file that
// includes them costs tens of seconds to compile on the CI machine.
//
//===----------------------------------------------------------------------===//

#include "compiler/InitAll.h"

#include "compiler/Pipelines.h"
#include "compiler/codegen/cpu/CpuCodegen.h"
#include "dialects/exec/ExecDialect.h"
#include "dialects/graph/GraphDialect.h"
#include "dialects/graph/GraphOps.h"
#include "dialects/kernel/KernelDialect.h"
#include "passes/Autodiff/Passes.h"
#include "passes/Conversion/Passes.h"
#include "passes/Fusion/Passes.h"
#include "passes/MixedPrecision/Passes.h"
#include "passes/Pipeline/Passes.h"
#include "passes/Quantization/Passes.h"
#include "passes/Recompute/Passes.h"
#include "passes/Sharding/Passes.h"
#include "passes/Training/Passes.h"
#include "passes/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Mesh/IR/MeshDialect.h"
#include "mlir/Dialect/Mesh/IR/MeshOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

void loom::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<loom::graph::GraphDialect, loom::kernel::KernelDialect,
                  mlir::arith::ArithDialect,
                  mlir::bufferization::BufferizationDialect,
                  mlir::cf::ControlFlowDialect, mlir::func::FuncDialect,
                  mlir::LLVM::LLVMDialect, mlir::linalg::LinalgDialect,
                  mlir::math::MathDialect, mlir::memref::MemRefDialect,
                  mlir::mesh::MeshDialect, mlir::scf::SCFDialect,
                  mlir::tensor::TensorDialect>();
  registry.insert<loom::exec::ExecDialect>();
  loom::graph::registerMeshVjpRules(registry);
  loom::codegen::registerCpuCodegenDialects(registry);
}

void loom::registerAllPasses() {
  // Upstream: canonicalize, cse, inline, symbol-dce, ...
  mlir::registerTransformsPasses();
  loom::registerTransformsPasses();
  loom::registerConversionPasses();
  loom::registerFusionPasses();
  loom::registerAutodiffPasses();
  loom::registerTrainingPasses();
  loom::registerMixedPrecisionPasses();
  loom::registerQuantizationPasses();
  loom::registerRecomputePasses();
  loom::registerShardingPasses();
  loom::registerPipelinePasses();
  loom::codegen::registerCpuCodegenPipelines();
  // --loom-training-pipeline, --loom-inference-pipeline, ...
  loom::registerLoomPipelines();
}
