// RUN: not loom-opt %s --loom-recompute="strategy=optimal budget=100" 2>&1 | FileCheck %s --check-prefix=BUDGET
// RUN: not loom-opt %s --loom-recompute="strategy=optimal" 2>&1 | FileCheck %s --check-prefix=NOBUDGET
// RUN: not loom-opt %s --loom-recompute="strategy=sqrt budget=200" 2>&1 | FileCheck %s --check-prefix=SQRT
// RUN: not loom-opt %s --loom-recompute="strategy=half" 2>&1 | FileCheck %s --check-prefix=STRATEGY

// BUDGET: error: loom-recompute: the budget of 100 bytes cannot be met with strategy optimal: the smallest planned peak found is 384 bytes (without recomputation: 384)
// NOBUDGET: error: loom-recompute: strategy optimal needs a budget (budget=BYTES)
// SQRT: error: loom-recompute: the budget of 200 bytes cannot be met with strategy sqrt: the smallest planned peak found is 384 bytes
// STRATEGY: error: loom-recompute: strategy must be none, all, sqrt or optimal, not 'half'

func.func @step(%x: tensor<4x8xf32> {graph.input = "x"}, %w1: tensor<8x8xf32>, %w2: tensor<8x8xf32>) -> (tensor<f32> {graph.output = "loss"}, tensor<8x8xf32>) {
  %one = graph.constant dense<1.0> : tensor<4x8xf32>
  %h1 = graph.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %a1 = graph.tanh %h1 : tensor<4x8xf32>
  %h2 = graph.matmul %a1, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %a2 = graph.tanh %h2 : tensor<4x8xf32>
  %loss = graph.reduce_sum %a2 axes = [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  %s2 = graph.mul %a2, %a2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %d2 = graph.sub %one, %s2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %g2 = graph.matmul %a1, %d2 {transpose_lhs} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  return %loss, %g2 : tensor<f32>, tensor<8x8xf32>
}


