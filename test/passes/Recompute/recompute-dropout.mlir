// RUN: loom-opt %s --loom-recompute=strategy=all | FileCheck %s

// Training dropout is recomputed: its mask is a pure function of its seed
// and the element index (GraphToLinalg), so the clone keeps the seed and
// draws the same mask as the forward.

// CHECK-LABEL: func.func @step
// CHECK: graph.dropout %{{.*}} {ratio = 5.000000e-01 : f64, seed = 7 : i64, training} :
// CHECK: graph.reduce_sum
// CHECK: %[[D:.*]] = graph.dropout %{{.*}} {loom.recompute, ratio = 5.000000e-01 : f64, seed = 7 : i64, training}
// CHECK-NEXT: graph.mul %[[D]], %[[D]]
func.func @step(%x: tensor<4x8xf32> {graph.input = "x"}, %w: tensor<8x8xf32>) -> (tensor<f32> {graph.output = "loss"}, tensor<4x8xf32>) {
  %h = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %d = graph.dropout %h {ratio = 0.5 : f64, seed = 7 : i64, training} : tensor<4x8xf32>
  %loss = graph.reduce_sum %d axes = [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  %g = graph.mul %d, %d : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %loss, %g : tensor<f32>, tensor<4x8xf32>
}
