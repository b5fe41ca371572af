// RUN: loom-opt %s --loom-mixed-precision | FileCheck %s

// A region op (graph.loop, graph.if: ONNX control flow) keeps its operand
// and result types and its body as it is; the matmul after it still runs
// in bf16, on a cast of the loop's result.

// CHECK-LABEL: func.func @loop_then_matmul
// CHECK: %[[W:.*]] = graph.cast %{{.*}} to bf16 : tensor<4x4xf32>
// CHECK: %[[L:.*]] = graph.loop trip_count %{{.*}} : tensor<i64> inits(%{{.*}} : tensor<3x4xf32>) -> tensor<3x4xf32> {
// CHECK: graph.exp %{{.*}} : tensor<3x4xf32>
// CHECK: graph.yield %{{.*}}, %{{.*}} : tensor<i1>, tensor<3x4xf32>
// CHECK: %[[LB:.*]] = graph.cast %[[L]] to bf16 : tensor<3x4xf32>
// CHECK: graph.matmul %[[LB]], %[[W]] : (tensor<3x4xbf16>, tensor<4x4xbf16>) -> tensor<3x4xbf16>
func.func @loop_then_matmul(%x: tensor<3x4xf32> {graph.input = "x"},
                            %w: tensor<4x4xf32> {graph.param = "w"},
                            %n: tensor<i64> {graph.input = "n"}) -> tensor<f32> {
  %y = graph.loop trip_count %n : tensor<i64> inits(%x : tensor<3x4xf32>)
      -> tensor<3x4xf32> {
  ^bb0(%i: tensor<i64>, %c: tensor<i1>, %a: tensor<3x4xf32>):
    %e = graph.exp %a : tensor<3x4xf32>
    graph.yield %c, %e : tensor<i1>, tensor<3x4xf32>
  }
  %m = graph.matmul %y, %w : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  %s = graph.reduce_sum %m axes = [0, 1] : (tensor<3x4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
