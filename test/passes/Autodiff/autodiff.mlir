// RUN: loom-opt %s --split-input-file --loom-autodiff | FileCheck %s
// RUN: loom-opt %s --split-input-file --loom-autodiff="freeze=^b$ summary=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FROZEN

// --loom-autodiff adds F_grad = (loss, d loss / d param...) and keeps F.
// A dense layer: the bias gradient is summed over the broadcast batch dim,
// the matmul gradients are transposed products, relu masks.

// CHECK-LABEL: func.func @dense(
// CHECK-LABEL: func.func @dense_grad(
// CHECK-SAME: -> (tensor<f32> {graph.output = "loss"}, tensor<3x2xf32> {graph.grad_of = "w", graph.output = "w.grad"}, tensor<2xf32> {graph.grad_of = "b", graph.output = "b.grad"})
// CHECK: %[[SEED:.*]] = graph.fill_like %{{.*}}, 1.000000e+00
// CHECK: graph.softmax
// CHECK: %[[MASK:.*]] = graph.compare gt
// CHECK: %[[DA:.*]] = graph.mul %{{.*}}, %{{.*}} : (tensor<4x2xf32>, tensor<4x2xf32>)
// CHECK: %[[SUM:.*]] = graph.reduce_sum %[[DA]] axes = [0] keepdims
// CHECK: %[[DB:.*]] = graph.reshape %[[SUM]] [2]
// CHECK: %[[DW:.*]] = graph.matmul %arg0, %[[DA]] {transpose_lhs}
// CHECK: return %{{.*}}, %[[DW]], %[[DB]]

// FROZEN: loom-autodiff: dense_grad = d loss / d (1 arguments)
// FROZEN-DAG: w: gradient
// FROZEN-DAG: b: frozen (matches '^b$')
func.func @dense(%x: tensor<4x3xf32> {graph.input = "x"},
                 %w: tensor<3x2xf32> {graph.param = "w"},
                 %b: tensor<2xf32> {graph.param = "b"},
                 %y: tensor<4xi64> {graph.input = "y"}) -> tensor<f32> {
  %m = graph.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %a = graph.add %m, %b : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %r = graph.relu %a : tensor<4x2xf32>
  %l = graph.cross_entropy %r, %y reduction = mean : (tensor<4x2xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A value used twice accumulates both gradients; an integer path (the
// ids) carries none; a parameter the loss ignores gets zeros.

// CHECK-LABEL: func.func @shared_grad(
// CHECK: %[[E:.*]] = graph.embedding %arg0, %arg1
// CHECK: %[[P:.*]] = graph.mul %[[E]], %[[E]]
// CHECK: %[[G1:.*]] = graph.mul %{{.*}}, %[[E]]
// CHECK: %[[G2:.*]] = graph.mul %{{.*}}, %[[E]]
// CHECK: %[[ACC:.*]] = graph.add %[[G1]], %[[G2]]
// CHECK: graph.scatter_elements %{{.*}}, %{{.*}}, %{{.*}} axis = 0 reduction = add
// CHECK: %[[Z:.*]] = graph.fill_like %arg2, 0.000000e+00
// CHECK: return %{{.*}}, %{{.*}}, %[[Z]]
func.func @shared(%t: tensor<5x2xf32> {graph.param = "table"},
                  %ids: tensor<3xi64> {graph.input = "ids"},
                  %unused: tensor<2xf32> {graph.param = "unused"}) -> tensor<f32> {
  %e = graph.embedding %t, %ids : (tensor<5x2xf32>, tensor<3xi64>) -> tensor<3x2xf32>
  %p = graph.mul %e, %e : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  %s = graph.reduce_sum %p axes = [0, 1] : (tensor<3x2xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A tied embedding: the table feeds a lookup and the output projection.
// The lookup's gradient, a scatter-add, takes the projection's gradient as
// its data instead of scattering into zeros and adding (one table-sized
// buffer fewer).

// CHECK-LABEL: func.func @tied_grad(
// CHECK: %[[DW:.*]] = graph.transpose %{{.*}} [1, 0] : (tensor<2x5xf32>) -> tensor<5x2xf32>
// CHECK-NOT: graph.add {{.*}}tensor<5x2xf32>
// CHECK: %[[DT:.*]] = graph.scatter_elements %[[DW]], %{{.*}}, %{{.*}} axis = 0 reduction = add
// CHECK-NOT: graph.add {{.*}}tensor<5x2xf32>
// CHECK: return %{{.*}}, %[[DT]]
func.func @tied(%t: tensor<5x2xf32> {graph.param = "table"},
                %ids: tensor<3xi64> {graph.input = "ids"}) -> tensor<f32> {
  %e = graph.embedding %t, %ids : (tensor<5x2xf32>, tensor<3xi64>) -> tensor<3x2xf32>
  %tt = graph.transpose %t [1, 0] : (tensor<5x2xf32>) -> tensor<2x5xf32>
  %l = graph.matmul %e, %tt : (tensor<3x2xf32>, tensor<2x5xf32>) -> tensor<3x5xf32>
  %s = graph.reduce_sum %l axes = [0, 1] : (tensor<3x5xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// x[B, T, K] · W[K, N]: W's gradient is one GEMM over the B·T rows (x and
// the output gradient seen as [rows, K] and [rows, N]), no per-sample
// [B, K, N] products and no batch sum. A transposed weight (x · W^T, the
// tied LM head) gets its [N, K] gradient the same way.

// CHECK-LABEL: func.func @linear_3d_grad(
// CHECK-NOT: graph.reduce_sum {{.*}}axes = [0]
// CHECK: %[[E:.*]] = graph.matmul %{{.*}}, %{{.*}} {transpose_lhs} : (tensor<6x5xf32>, tensor<6x4xf32>) -> tensor<5x4xf32>
// CHECK-DAG: %[[X:.*]] = graph.reshape %arg0 [6, 3] : (tensor<2x3x3xf32>) -> tensor<6x3xf32>
// CHECK-DAG: %[[D:.*]] = graph.reshape %{{.*}} [6, 4] : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
// CHECK: %[[W:.*]] = graph.matmul %[[X]], %[[D]] {transpose_lhs} : (tensor<6x3xf32>, tensor<6x4xf32>) -> tensor<3x4xf32>
// CHECK: return %{{.*}}, %[[W]], %[[E]]
func.func @linear_3d(%x: tensor<2x3x3xf32> {graph.input = "x"},
                     %w: tensor<3x4xf32> {graph.param = "w"},
                     %e: tensor<5x4xf32> {graph.param = "e"}) -> tensor<f32> {
  %h = graph.matmul %x, %w : (tensor<2x3x3xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
  %l = graph.matmul %h, %e {transpose_rhs} : (tensor<2x3x4xf32>, tensor<5x4xf32>) -> tensor<2x3x5xf32>
  %s = graph.reduce_sum %l axes = [0, 1, 2] : (tensor<2x3x5xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// fill_like takes only its operand's shape: no gradient flows through it
// (an RNN's zero initial state over a layer's output, as the ONNX importer
// makes it), so the loss differentiates through the rest.
// CHECK-LABEL: func.func @fill_like_grad(
// CHECK-SAME: tensor<2x3xf32> {graph.grad_of = "w", graph.output = "w.grad"}
// CHECK: %[[Z:.*]] = graph.fill_like %arg0, 2.0
// CHECK: %[[G:.*]] = graph.mul %{{.*}}, %[[Z]]
// CHECK-NOT: graph.add
// CHECK: return %{{.*}}, %[[G]]
func.func @fill_like(%w: tensor<2x3xf32> {graph.param = "w"}) -> tensor<f32> {
  %z = graph.fill_like %w, 2.000000e+00 : f32 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %p = graph.mul %z, %w : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %s = graph.reduce_sum %p axes = [0, 1] : (tensor<2x3xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
