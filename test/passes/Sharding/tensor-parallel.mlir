// RUN: loom-opt %s --split-input-file --loom-tensor-parallel="ranks=2" | FileCheck %s
// RUN: loom-opt %s --split-input-file --loom-tensor-parallel="ranks=4 summary" 2>&1 >/dev/null | FileCheck %s --check-prefix=SUMMARY
// RUN: loom-opt %s --split-input-file --loom-tensor-parallel="ranks=2 data-ranks=2" | FileCheck %s --check-prefix=MESH
// RUN: loom-opt %s --split-input-file --loom-tensor-parallel="ranks=2" --loom-autodiff --canonicalize | FileCheck %s --check-prefix=GRAD
// RUN: loom-opt %s --split-input-file --loom-tensor-parallel="ranks=2 report=%t.json" > /dev/null
// RUN: FileCheck %s --check-prefix=JSON < %t.json

// A weight read by the column-parallel matmul and by another op (tied
// embeddings) stays whole.

// CHECK-LABEL: func.func @forward
// CHECK-NOT: graph.shard
// CHECK-NOT: mesh.all_reduce
// SUMMARY: stays replicated: graph.matmul @tied: parameter 'w' is also read whole by graph.gather

func.func @forward(%ids: tensor<4xi64> {graph.input = "ids"},
                   %w: tensor<8x4xf32> {graph.param = "w"},
                   %w2: tensor<4x8xf32> {graph.param = "w2"},
                   %labels: tensor<4xi64> {graph.input = "labels"})
    -> (tensor<f32> {graph.output = "loss"}) {
  %e = graph.gather %w, %ids axis = 0 : (tensor<8x4xf32>, tensor<4xi64>) -> tensor<4x4xf32>
  %h = graph.matmul %e, %w {transpose_rhs} : (tensor<4x4xf32>, tensor<8x4xf32>) -> tensor<4x8xf32> loc("tied")
  %r = graph.relu %h : tensor<4x8xf32>
  %o = graph.matmul %r, %w2 {transpose_rhs} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
  %loss = graph.cross_entropy %o, %labels reduction = mean : (tensor<4x4xf32>, tensor<4xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Attention with a fused q|k|v projection: the projection is split in 3
// groups (each rank holds its heads of q, of k and of v), the slices take
// the rank's part of each group, the heads dim carries the split through
// the reshapes, transposes, batched matmuls and the softmax, and the output
// projection is row-parallel.

// CHECK-LABEL: func.func @forward
// CHECK-SAME: %[[WQKV:[^:]*]]: tensor<12x8xf32> {graph.param = "qkv", graph.shard = {axis = "tensor", dim = 0 : i64, groups = 3 : i64, shape = array<i64: 24, 8>}}
// CHECK-SAME: %[[WO:[^:]*]]: tensor<8x4xf32> {graph.param = "out", graph.shard = {axis = "tensor", dim = 1 : i64, groups = 1 : i64, shape = array<i64: 8, 8>}}
// CHECK: %[[T:.*]] = graph.transpose %[[WQKV]] [1, 0] : (tensor<12x8xf32>) -> tensor<8x12xf32>
// CHECK: graph.matmul %{{.*}}, %[[T]] : (tensor<2x4x8xf32>, tensor<8x12xf32>) -> tensor<2x4x12xf32>
// CHECK: graph.slice %{{.*}} starts = [0, 0, 0] ends = [2, 4, 4] {{.*}} -> tensor<2x4x4xf32>
// CHECK: graph.slice %{{.*}} starts = [0, 0, 4] ends = [2, 4, 8] {{.*}} -> tensor<2x4x4xf32>
// CHECK: graph.slice %{{.*}} starts = [0, 0, 8] ends = [2, 4, 12] {{.*}} -> tensor<2x4x4xf32>
// CHECK: graph.reshape %{{.*}} [2, 4, 1, 4] : (tensor<2x4x4xf32>) -> tensor<2x4x1x4xf32>
// CHECK: graph.softmax %{{.*}} {axis = 3 : i64} : (tensor<2x1x4x4xf32>) -> tensor<2x1x4x4xf32>
// CHECK: graph.reshape %{{.*}} [2, 4, 4] : (tensor<2x4x1x4xf32>) -> tensor<2x4x4xf32>
// CHECK: %[[PO:.*]] = graph.matmul %{{.*}}, %{{.*}} : (tensor<2x4x4xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
// CHECK: mesh.all_reduce %[[PO]] on @mesh mesh_axes = [0]

// At 4 ranks the 2 heads do not split: the projection stays whole.
// SUMMARY: loom-tensor-parallel: 4 ranks on axis 'tensor', 0 column-parallel and 0 row-parallel matmul(s), 0 parameter(s) split
// SUMMARY: stays replicated: graph.matmul @qkv: the reshaped split dim (2) does not divide over the ranks

func.func @forward(%x: tensor<2x4x8xf32> {graph.input = "x"},
                   %wqkv: tensor<24x8xf32> {graph.param = "qkv"},
                   %wo: tensor<8x8xf32> {graph.param = "out"},
                   %labels: tensor<2x4xi64> {graph.input = "labels"})
    -> (tensor<f32> {graph.output = "loss"}) {
  %t = graph.transpose %wqkv [1, 0] : (tensor<24x8xf32>) -> tensor<8x24xf32>
  %qkv = graph.matmul %x, %t : (tensor<2x4x8xf32>, tensor<8x24xf32>) -> tensor<2x4x24xf32> loc("qkv")
  %q = graph.slice %qkv starts = [0, 0, 0] ends = [2, 4, 8] steps = [1, 1, 1] : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  %k = graph.slice %qkv starts = [0, 0, 8] ends = [2, 4, 16] steps = [1, 1, 1] : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  %v = graph.slice %qkv starts = [0, 0, 16] ends = [2, 4, 24] steps = [1, 1, 1] : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  %q4 = graph.reshape %q [2, 4, 2, 4] : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %k4 = graph.reshape %k [2, 4, 2, 4] : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %v4 = graph.reshape %v [2, 4, 2, 4] : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %qh = graph.transpose %q4 [0, 2, 1, 3] : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %kh = graph.transpose %k4 [0, 2, 3, 1] : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %vh = graph.transpose %v4 [0, 2, 1, 3] : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %s = graph.matmul %qh, %kh : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = graph.softmax %s {axis = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %a = graph.matmul %p, %vh : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %at = graph.transpose %a [0, 2, 1, 3] : (tensor<2x2x4x4xf32>) -> tensor<2x4x2x4xf32>
  %m = graph.reshape %at [2, 4, 8] : (tensor<2x4x2x4xf32>) -> tensor<2x4x8xf32>
  %wot = graph.transpose %wo [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %o = graph.matmul %m, %wot : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("out")
  %loss = graph.cross_entropy %o, %labels reduction = mean : (tensor<2x4x8xf32>, tensor<2x4xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// An MLP: the first linear layer becomes column-parallel (its weight and
// bias split along the output features), the second row-parallel (its
// weight split along the input features, its partial products
// all-reduced), the head stays whole: its output reaches the loss, which
// has no rule for a split operand.

// CHECK: mesh.mesh @mesh(shape = 2) {loom.axes = ["tensor"]}
// CHECK-LABEL: func.func @forward
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x8xf32>
// CHECK-SAME: %[[W1:[^:]*]]: tensor<8x8xf32> {graph.initial_value = dense<1.000000e+00> : tensor<16x8xf32>, graph.param = "w1", graph.shard = {axis = "tensor", dim = 0 : i64, groups = 1 : i64, shape = array<i64: 16, 8>}}
// CHECK-SAME: %[[B1:[^:]*]]: tensor<8xf32> {graph.param = "b1", graph.shard = {axis = "tensor", dim = 0 : i64, groups = 1 : i64, shape = array<i64: 16>}}
// CHECK-SAME: %[[W2:[^:]*]]: tensor<8x8xf32> {graph.param = "w2", graph.shard = {axis = "tensor", dim = 1 : i64, groups = 1 : i64, shape = array<i64: 8, 16>}}
// CHECK-SAME: %[[W3:[^:]*]]: tensor<4x8xf32> {graph.param = "w3"}
// CHECK: %[[XS:.*]] = graph.mul %[[X]]
// CHECK: %[[F:.*]] = graph.grad_all_reduce %[[XS]] on @mesh axes = [0] : tensor<4x8xf32>
// CHECK: %[[H:.*]] = graph.matmul %[[F]], %[[W1]] {transpose_rhs} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[HB:.*]] = graph.add %[[H]], %[[B1]] : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK: %[[R:.*]] = graph.relu %[[HB]] : tensor<4x8xf32>
// CHECK: %[[P:.*]] = graph.matmul %[[R]], %[[W2]] {transpose_rhs} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[S:.*]] = mesh.all_reduce %[[P]] on @mesh mesh_axes = [0] : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: %[[R2:.*]] = graph.relu %[[S]] : tensor<4x8xf32>
// CHECK: graph.matmul %[[R2]], %[[W3]] {transpose_rhs} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>

// SUMMARY: loom-tensor-parallel: 4 ranks on axis 'tensor', 1 column-parallel and 1 row-parallel matmul(s), 3 parameter(s) split
// SUMMARY: w1: column: split along dim 0 over 'tensor' -> tensor<4x8xf32>
// SUMMARY: b1: bias: split along dim 0 over 'tensor' -> tensor<4xf32>
// SUMMARY: w2: row: split along dim 1 over 'tensor' -> tensor<8x4xf32>
// SUMMARY: all_reduce (forward) after graph.matmul @fc2
// SUMMARY: all_reduce (backward) of the gradient of the input of graph.matmul @fc1
// SUMMARY: stays replicated: graph.matmul @head: no tensor-parallel rule for graph.cross_entropy with an operand split on dim 1 (at graph.cross_entropy @loss)

// MESH: mesh.mesh @mesh(shape = 2x2) {loom.axes = ["data", "tensor"]}
// MESH: graph.grad_all_reduce %{{.*}} on @mesh axes = [1]
// MESH: mesh.all_reduce %{{.*}} on @mesh mesh_axes = [1]

// The backward: the row-parallel all-reduce passes the gradient through,
// the column-parallel input's gradient (which g's needs) is summed over
// the ranks, and the
// marker folds away.
// GRAD-LABEL: func.func @forward_grad
// GRAD-NOT: graph.grad_all_reduce
// GRAD: %[[DX:.*]] = graph.matmul %{{.*}}, %arg1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// GRAD: mesh.all_reduce %[[DX]] on @mesh mesh_axes = [0] : tensor<4x8xf32> -> tensor<4x8xf32>

// JSON: "axis": "tensor"
// JSON: "collectives": [
// JSON: "phase": "forward"
// JSON: "why": "the row-parallel matmul's products are partial sums
// JSON: "phase": "backward"
// JSON: "parameters": [
// JSON: "local_shape": [
// JSON: "name": "w1"
// JSON: "role": "column"
// JSON: "replicated": [
// JSON: "matmul": "graph.matmul @head"
// JSON-NEXT: "why": "no tensor-parallel rule for graph.cross_entropy with an operand split on dim 1 (at graph.cross_entropy @loss)"

func.func @forward(%x: tensor<4x8xf32> {graph.input = "x"},
                   %w1: tensor<16x8xf32> {graph.param = "w1", graph.initial_value = dense<1.0> : tensor<16x8xf32>},
                   %b1: tensor<16xf32> {graph.param = "b1"},
                   %w2: tensor<8x16xf32> {graph.param = "w2"},
                   %w3: tensor<4x8xf32> {graph.param = "w3"},
                   %g: tensor<8xf32> {graph.param = "g"},
                   %labels: tensor<4xi64> {graph.input = "labels"})
    -> (tensor<f32> {graph.output = "loss"}) {
  %xs = graph.mul %x, %g : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %h = graph.matmul %xs, %w1 {transpose_rhs} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32> loc("fc1")
  %hb = graph.add %h, %b1 : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %r = graph.relu %hb : tensor<4x16xf32>
  %o = graph.matmul %r, %w2 {transpose_rhs} : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32> loc("fc2")
  %r2 = graph.relu %o : tensor<4x8xf32>
  %logits = graph.matmul %r2, %w3 {transpose_rhs} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32> loc("head")
  %loss = graph.cross_entropy %logits, %labels reduction = mean : (tensor<4x4xf32>, tensor<4xi64>) -> tensor<f32> loc("loss")
  return %loss : tensor<f32>
}
