// RUN: loom-opt %s --loom-fusion | FileCheck %s

// A region op (graph.loop, graph.if: ONNX control flow) is a fusion region
// of its own, kind `other`: no producer or user fuses into it, since its
// body runs once per iteration; the ops of its body stay as they are (the
// CPU backend fuses them within the body after lowering to linalg).

// CHECK-LABEL: func.func @loop_alone
// CHECK: %[[E:.*]] = kernel.fusion "fusion_0" elementwise(%{{.*}})
// CHECK-NEXT: ^bb0
// CHECK-NEXT: graph.exp
// CHECK-NEXT: kernel.yield
// CHECK: %[[L:.*]] = kernel.fusion "fusion_1" other(%{{.*}}, %[[E]], %{{.*}})
// CHECK-NEXT: ^bb0
// CHECK-NEXT: graph.loop
// CHECK: graph.add
// CHECK-NEXT: graph.neg
// CHECK-NEXT: graph.yield
// CHECK-NEXT: }
// CHECK-NEXT: kernel.yield
// CHECK: kernel.fusion "fusion_2" elementwise(%[[L]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT: graph.neg
func.func @loop_alone(%n: tensor<i64>, %y0: tensor<2xf32>,
                      %d: tensor<2xf32>) -> tensor<2xf32> {
  %e = graph.exp %y0 : tensor<2xf32>
  %y = graph.loop trip_count %n : tensor<i64> inits(%e : tensor<2xf32>)
      captures(%d : tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%i: tensor<i64>, %c: tensor<i1>, %yy: tensor<2xf32>, %dd: tensor<2xf32>):
    %a = graph.add %yy, %dd : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %b = graph.neg %a : tensor<2xf32>
    graph.yield %c, %b : tensor<i1>, tensor<2xf32>
  }
  %z = graph.neg %y : tensor<2xf32>
  return %z : tensor<2xf32>
}

// CHECK-LABEL: func.func @if_alone
// CHECK: kernel.fusion "fusion_0" other(%{{.*}}, %{{.*}})
// CHECK-NEXT: ^bb0
// CHECK-NEXT: graph.if
func.func @if_alone(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.if %c captures(%x : tensor<4xf32>) : tensor<i1> -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %n = graph.neg %a : tensor<4xf32>
    graph.yield %n : tensor<4xf32>
  } else {
  ^bb0(%a: tensor<4xf32>):
    graph.yield %a : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
