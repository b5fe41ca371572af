// RUN: loom-opt %s --loom-training-entry | FileCheck %s
// RUN: loom-opt %s --loom-training-entry='func=forward_grad bake-params=true' | FileCheck %s --check-prefix=BAKE

// Only the function the artifact runs stays.
// CHECK-NOT: @forward
// CHECK-LABEL: func.func @train_step
// CHECK-NOT: @forward

// BAKE-NOT: @train_step
// BAKE-LABEL: func.func @forward_grad(%{{.*}}: tensor<2xf32> {graph.input = "x"}) -> tensor<2xf32>
// BAKE: %[[W:.*]] = graph.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// BAKE: graph.mul %{{.*}}, %[[W]]
func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
func.func @forward_grad(%w: tensor<2xf32> {graph.param = "w", graph.initial_value = dense<[1.0, 2.0]> : tensor<2xf32>}, %x: tensor<2xf32> {graph.input = "x"}) -> tensor<2xf32> {
  %0 = graph.mul %x, %w : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
func.func @train_step(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
