// --loom-inference-pipeline is loomc compile's code path before code
// emission: for the CPU target the CPU lowering to the LLVM dialect.
// RUN: loom-opt %s --loom-inference-pipeline > %t.a
// RUN: loom-opt %s --loom-cpu-lowering > %t.b
// RUN: diff %t.a %t.b
// RUN: loom-opt %s --loom-inference-pipeline='target=cuda' | FileCheck %s --check-prefix=CUDA
// RUN: not loom-opt %s --loom-inference-pipeline='target=tpu' 2>&1 | FileCheck %s --check-prefix=BAD

// CUDA: kernel.fusion
// BAD: error: target takes cpu or cuda, not 'tpu'
func.func @f(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = graph.relu %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}
