// RUN: loom-opt %s --split-input-file --loom-tensor-parallel="ranks=2 sequence-parallel" | FileCheck %s
// RUN: loom-opt %s --split-input-file --loom-tensor-parallel="ranks=2 sequence-parallel summary" 2>&1 >/dev/null | FileCheck %s --check-prefix=SUMMARY
// RUN: loom-opt %s --split-input-file --loom-tensor-parallel="ranks=2 sequence-parallel" --loom-autodiff --canonicalize | FileCheck %s --check-prefix=GRAD
// RUN: loom-opt %s --loom-tensor-parallel="ranks=2 sequence-parallel func=forward report=%t.json" > /dev/null
// RUN: FileCheck %s --check-prefix=JSON < %t.json

// --loom-tensor-parallel sequence-parallel (Megatron's sequence
// parallelism): between a row-parallel matmul and the next column-parallel
// one the activations are split along the sequence (dim 1 of [batch, seq,
// features]). The row-parallel all-reduce becomes a reduce-scatter, the
// column-parallel input an all-gather; the residual from before the region
// is sliced, the bias and the layer norm's scale and shift are marked so
// that their gradients' parts are summed, and the loss, outside the region,
// gets its input whole again. The runtime gathers and scatters dim 0, so
// the sequence goes to the front around each collective.

// CHECK-LABEL: func.func @forward
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x4x8xf32> {graph.input = "x"}
// CHECK-SAME: %[[B2:[^:]*]]: tensor<8xf32> {graph.param = "fc2.bias"}
// CHECK-SAME: %[[G:[^:]*]]: tensor<8xf32> {graph.param = "ln.weight"}
// CHECK-SAME: %[[BB:[^:]*]]: tensor<8xf32> {graph.param = "ln.bias"}
// CHECK-DAG: %[[MBB:.*]] = graph.grad_all_reduce %[[BB]] on @mesh axes = [0] : tensor<8xf32>
// CHECK-DAG: %[[MG:.*]] = graph.grad_all_reduce %[[G]] on @mesh axes = [0] : tensor<8xf32>
// CHECK: %[[XT:.*]] = graph.transpose %[[X]] [1, 0, 2] : (tensor<2x4x8xf32>) -> tensor<4x2x8xf32>
// CHECK: %[[XS:.*]] = mesh.all_slice %[[XT]] on @mesh mesh_axes = [0] slice_axis = 0 : tensor<4x2x8xf32> -> tensor<2x2x8xf32>
// CHECK: %[[XP:.*]] = graph.transpose %[[XS]] [1, 0, 2] : (tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
// CHECK: %[[MB2:.*]] = graph.grad_all_reduce %[[B2]] on @mesh axes = [0] : tensor<8xf32>
// The first block's input is whole: the column-parallel input keeps its marker.
// CHECK: %[[XM:.*]] = graph.grad_all_reduce %[[X]]
// CHECK: %[[H1:.*]] = graph.matmul %[[XM]]
// CHECK: %[[O1:.*]] = graph.matmul
// CHECK: %[[O1T:.*]] = graph.transpose %[[O1]] [1, 0, 2] : (tensor<2x4x8xf32>) -> tensor<4x2x8xf32>
// CHECK: %[[RS:.*]] = mesh.reduce_scatter %[[O1T]] on @mesh mesh_axes = [0] scatter_axis = 0 : tensor<4x2x8xf32> -> tensor<2x2x8xf32>
// CHECK: %[[P1:.*]] = graph.transpose %[[RS]] [1, 0, 2]
// CHECK: %[[C1:.*]] = graph.add %[[P1]], %[[MB2]] : (tensor<2x2x8xf32>, tensor<8xf32>) -> tensor<2x2x8xf32>
// CHECK: %[[R1:.*]] = graph.add %[[XP]], %[[C1]] : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
// CHECK: %[[N:.*]] = graph.layer_norm %[[R1]], %[[MG]], %[[MBB]] {{.*}} -> tensor<2x2x8xf32>
// CHECK: %[[NT:.*]] = graph.transpose %[[N]] [1, 0, 2]
// CHECK: %[[AG:.*]] = mesh.all_gather %[[NT]] on @mesh mesh_axes = [0] gather_axis = 0 : tensor<2x2x8xf32> -> tensor<4x2x8xf32>
// CHECK: %[[WHOLE:.*]] = graph.transpose %[[AG]] [1, 0, 2] : (tensor<4x2x8xf32>) -> tensor<2x4x8xf32>
// CHECK: graph.matmul %[[WHOLE]]
// CHECK: mesh.reduce_scatter
// CHECK: %[[R2:.*]] = graph.add %[[R1]], %{{.*}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
// The loss reads the residual whole: each rank's rows in place, summed.
// CHECK: %[[ROWS:.*]] = graph.gather %[[R2]], %{{.*}} axis = 1 : (tensor<2x2x8xf32>, tensor<4xi64>) -> tensor<2x4x8xf32>
// CHECK: %[[OWN:.*]] = graph.where %{{.*}}, %[[ROWS]], %{{.*}}
// CHECK: %[[BACK:.*]] = mesh.all_reduce %[[OWN]] on @mesh mesh_axes = [0] : tensor<2x4x8xf32>
// CHECK: graph.cross_entropy %[[BACK]]

// SUMMARY: 2 column-parallel and 2 row-parallel matmul(s), 4 parameter(s) split, sequence parallel
// SUMMARY: all_reduce (backward) of the gradient of the input of graph.matmul @fc1
// SUMMARY-NOT: all_reduce (forward) after
// SUMMARY: reduce_scatter (forward) along dim 1 after graph.matmul @fc2
// SUMMARY: reduce_scatter (forward) along dim 1 after graph.matmul @fc4
// SUMMARY: all_reduce (backward) of the gradient of fc2.bias (read by each rank's rows)
// SUMMARY: all_slice of x along dim 1 for graph.add @residual
// SUMMARY: all_reduce (backward) of the gradient of ln.weight (read by each rank's rows)
// SUMMARY: all_reduce (backward) of the gradient of ln.bias (read by each rank's rows)
// SUMMARY: all_gather (forward) along dim 1 before graph.matmul @fc3
// SUMMARY: all_reduce (forward) of graph.add @residual2 whole again for graph.cross_entropy @loss
// SUMMARY: sequence parallel: 4 op(s) run on each rank's rows

// The backward swaps the pairs: the reduce-scatters' gradients are
// gathered, the all-gather's gradient is reduce-scattered, and the
// parameters the rows read whole get their gradients' parts summed.
// GRAD-LABEL: func.func @forward_grad
// GRAD: mesh.reduce_scatter
// GRAD: mesh.all_gather
// GRAD: mesh.reduce_scatter
// GRAD: mesh.all_reduce
// GRAD: mesh.all_gather %{{.*}} gather_axis = 0 : tensor<2x2x8xf32> -> tensor<4x2x8xf32>
// GRAD: mesh.reduce_scatter %{{.*}} scatter_axis = 0 : tensor<4x2x8xf32> -> tensor<2x2x8xf32>
// GRAD: mesh.all_gather %{{.*}} gather_axis = 0 : tensor<2x2x8xf32> -> tensor<4x2x8xf32>
// GRAD-COUNT-3: mesh.all_reduce %{{.*}} : tensor<8xf32> -> tensor<8xf32>
// GRAD: return

// JSON: "sequence": {
// JSON: "all_gathers": [
// JSON: "before": "graph.matmul @fc3"
// JSON: "exits": [
// JSON: "of": "graph.add @residual2"
// JSON: "partial_gradients": [
// JSON: "value": "fc2.bias"
// JSON: "reduce_scatters": [
// JSON: "after": "graph.matmul @fc2"
// JSON: "slices": [
// JSON: "of": "x"
// JSON: "split_ops": 4
func.func @forward(%x: tensor<2x4x8xf32> {graph.input = "x"},
                   %w1: tensor<16x8xf32> {graph.param = "fc1"},
                   %w2: tensor<8x16xf32> {graph.param = "fc2"},
                   %b2: tensor<8xf32> {graph.param = "fc2.bias"},
                   %g: tensor<8xf32> {graph.param = "ln.weight"},
                   %bb: tensor<8xf32> {graph.param = "ln.bias"},
                   %w3: tensor<16x8xf32> {graph.param = "fc3"},
                   %w4: tensor<8x16xf32> {graph.param = "fc4"},
                   %labels: tensor<2x4xi64> {graph.input = "labels"})
    -> (tensor<f32> {graph.output = "loss"}) {
  %h1 = graph.matmul %x, %w1 {transpose_rhs} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32> loc("fc1")
  %a1 = graph.relu %h1 : tensor<2x4x16xf32>
  %o1 = graph.matmul %a1, %w2 {transpose_rhs} : (tensor<2x4x16xf32>, tensor<8x16xf32>) -> tensor<2x4x8xf32> loc("fc2")
  %c1 = graph.add %o1, %b2 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32> loc("bias")
  %r1 = graph.add %x, %c1 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("residual")
  %n = graph.layer_norm %r1, %g, %bb {axis = 2 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32> loc("ln")
  %h2 = graph.matmul %n, %w3 {transpose_rhs} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32> loc("fc3")
  %a2 = graph.relu %h2 : tensor<2x4x16xf32>
  %o2 = graph.matmul %a2, %w4 {transpose_rhs} : (tensor<2x4x16xf32>, tensor<8x16xf32>) -> tensor<2x4x8xf32> loc("fc4")
  %r2 = graph.add %r1, %o2 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("residual2")
  %loss = graph.cross_entropy %r2, %labels reduction = mean {ignore_index = -100 : i64} : (tensor<2x4x8xf32>, tensor<2x4xi64>) -> tensor<f32> loc("loss")
  return %loss : tensor<f32>
}

// -----

// A sequence that does not split over the ranks keeps the all-reduce.

// CHECK-LABEL: func.func @odd
// CHECK: mesh.all_reduce
// CHECK-NOT: mesh.reduce_scatter
// SUMMARY: sequence parallel: keeps the all_reduce after graph.matmul @odd_rows: its 3 rows do not split over 2 ranks
func.func @odd(%x: tensor<3x8xf32> {graph.input = "x"},
                   %w1: tensor<16x8xf32> {graph.param = "fc1"},
                   %w2: tensor<8x16xf32> {graph.param = "fc2"},
                   %labels: tensor<3xi64> {graph.input = "labels"})
    -> (tensor<f32> {graph.output = "loss"}) {
  %h1 = graph.matmul %x, %w1 {transpose_rhs} : (tensor<3x8xf32>, tensor<16x8xf32>) -> tensor<3x16xf32>
  %o1 = graph.matmul %h1, %w2 {transpose_rhs} : (tensor<3x16xf32>, tensor<8x16xf32>) -> tensor<3x8xf32> loc("odd_rows")
  %loss = graph.cross_entropy %o1, %labels reduction = mean : (tensor<3x8xf32>, tensor<3xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A column-parallel input computed per row from whole values (the first
// block's layer norm) joins the region: the layer norm runs on the rank's
// rows of its input, and the column-parallel matmul gathers them.

// CHECK-LABEL: func.func @first_block
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x8xf32> {graph.input = "x"}
// CHECK: %[[XS:.*]] = mesh.all_slice %[[X]] on @mesh mesh_axes = [0] slice_axis = 0 : tensor<4x8xf32> -> tensor<2x8xf32>
// CHECK: %[[N:.*]] = graph.layer_norm %[[XS]], %{{.*}}, %{{.*}} {{.*}} -> tensor<2x8xf32>
// CHECK: %[[AG:.*]] = mesh.all_gather %[[N]] on @mesh mesh_axes = [0] gather_axis = 0 : tensor<2x8xf32> -> tensor<4x8xf32>
// CHECK: graph.matmul %[[AG]]
// CHECK: mesh.reduce_scatter
// CHECK-NOT: graph.grad_all_reduce %[[X]]
// SUMMARY: all_slice of x along dim 0 for graph.layer_norm @ln0
// SUMMARY: all_gather (forward) along dim 0 before graph.matmul @fc0
func.func @first_block(%x: tensor<4x8xf32> {graph.input = "x"},
                       %g: tensor<8xf32> {graph.param = "ln.weight"},
                       %bb: tensor<8xf32> {graph.param = "ln.bias"},
                       %w1: tensor<16x8xf32> {graph.param = "fc1"},
                       %w2: tensor<8x16xf32> {graph.param = "fc2"},
                       %labels: tensor<4xi64> {graph.input = "labels"})
    -> (tensor<f32> {graph.output = "loss"}) {
  %n = graph.layer_norm %x, %g, %bb {axis = 1 : i64, epsilon = 1.0e-5 : f64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32> loc("ln0")
  %h1 = graph.matmul %n, %w1 {transpose_rhs} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32> loc("fc0")
  %o1 = graph.matmul %h1, %w2 {transpose_rhs} : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %r = graph.add %x, %o1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %loss = graph.cross_entropy %r, %labels reduction = mean : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
