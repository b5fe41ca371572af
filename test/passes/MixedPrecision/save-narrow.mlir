// --loom-save-narrow: the backward re-widens the 16-bit activations it
// needs instead of keeping the forward's f32 copies (layer norm's input
// and the loss's logits here).
// RUN: loom-opt %s --loom-mixed-precision --loom-autodiff --cse --loom-save-narrow=func=mlp_grad | FileCheck %s
// RUN: loom-opt %s --loom-save-narrow=func=mlp | FileCheck %s --check-prefix=NOLOSS

// CHECK-LABEL: func.func @mlp_grad
// CHECK: %[[G:.*]] = graph.gelu %{{.*}} : tensor<4x32xbf16>
// CHECK-NEXT: %[[G32:.*]] = graph.cast %[[G]] to f32 : tensor<4x32xbf16>
// CHECK-NEXT: graph.layer_norm %[[G32]]
// CHECK: %[[L:.*]] = graph.add {{.*}} -> tensor<4x10xbf16>
// CHECK-NEXT: %[[L32:.*]] = graph.cast %[[L]] to f32 : tensor<4x10xbf16>
// CHECK-NEXT: %[[LOSS:.*]] = graph.cross_entropy %[[L32]]
// The backward's own casts, each right before its first use there.
// CHECK: %[[L32B:.*]] = graph.cast %[[L]] to f32 : tensor<4x10xbf16>
// CHECK-NEXT: graph.softmax %[[L32B]]
// CHECK: %[[G32B:.*]] = graph.cast %[[G]] to f32 : tensor<4x32xbf16>
// CHECK-NOT: %[[G32]]{{[^0-9]}}
// CHECK-NOT: %[[L32]]{{[^0-9]}}
// CHECK: return %[[LOSS]]

// A function without a loss output is left alone.
// NOLOSS: graph.matmul %arg0, %arg2
// NOLOSS-NOT: graph.cast

func.func @mlp(%x: tensor<4x16xf32> {graph.input = "x"}, %labels: tensor<4xi64> {graph.input = "labels"},
               %w1: tensor<32x16xf32> {graph.param = "w1"}, %b1: tensor<32xf32> {graph.param = "b1"},
               %g: tensor<32xf32> {graph.param = "g"},
               %w2: tensor<10x32xf32> {graph.param = "w2"}, %b2: tensor<10xf32> {graph.param = "b2"})
    -> (tensor<f32> {graph.output = "loss"}) {
  %0 = graph.matmul %x, %w1 {transpose_rhs} : (tensor<4x16xf32>, tensor<32x16xf32>) -> tensor<4x32xf32>
  %1 = graph.add %0, %b1 : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %2 = graph.gelu %1 : tensor<4x32xf32>
  %n = graph.layer_norm %2, %g, %b1 {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<4x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %r = graph.add %n, %2 : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %t = graph.transpose %w2 [1, 0] : (tensor<10x32xf32>) -> tensor<32x10xf32>
  %3 = graph.matmul %r, %t : (tensor<4x32xf32>, tensor<32x10xf32>) -> tensor<4x10xf32>
  %4 = graph.add %3, %b2 : (tensor<4x10xf32>, tensor<10xf32>) -> tensor<4x10xf32>
  %5 = graph.cross_entropy %4, %labels reduction = mean : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return %5 : tensor<f32>
}
