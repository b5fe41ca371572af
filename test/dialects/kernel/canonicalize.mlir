// RUN: loom-opt %s --canonicalize | FileCheck %s

// A region whose body folded away forwards its operands.
// CHECK-LABEL: func.func @empty_body
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<4xf32>)
// CHECK-NOT: kernel.fusion
// CHECK: return %[[Y]], %[[X]]
func.func @empty_body(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0:2 = kernel.fusion "f" elementwise (%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
    %c = graph.cast %a to f32 : tensor<4xf32>
    kernel.yield %b, %c : tensor<4xf32>, tensor<4xf32>
  }
  return %0#0, %0#1 : tensor<4xf32>, tensor<4xf32>
}

// A region that computes something stays.
// CHECK-LABEL: func.func @kept
// CHECK: kernel.fusion "f" elementwise
// CHECK: graph.exp
func.func @kept(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kernel.fusion "f" elementwise (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %1 = graph.exp %a : tensor<4xf32>
    kernel.yield %1 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}
