// Constants move to the top of the function in one order (by type, then
// value); the rest keeps its order.
// RUN: loom-opt --loom-sort-constants %s | FileCheck %s

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = graph.constant dense<2.0> : tensor<4xf32>
  %0 = graph.add %x, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = graph.constant dense<1.0> : tensor<4xf32>
  %1 = graph.mul %0, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %c = graph.constant dense<3> : tensor<i64>
  %2 = graph.cast %c to f32 : tensor<i64>
  %3 = graph.add %1, %2 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %3 : tensor<4xf32>
}

// CHECK-LABEL: func.func @f
// CHECK-NEXT: %[[ONE:.*]] = graph.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK-NEXT: %[[TWO:.*]] = graph.constant dense<2.000000e+00> : tensor<4xf32>
// CHECK-NEXT: %[[THREE:.*]] = graph.constant dense<3> : tensor<i64>
// CHECK-NEXT: %[[S:.*]] = graph.add %arg0, %[[TWO]]
// CHECK-NEXT: %[[P:.*]] = graph.mul %[[S]], %[[ONE]]
// CHECK-NEXT: graph.cast %[[THREE]] to f32
