// RUN: loom-opt %s --split-input-file --loom-tensor-parallel="ranks=2 vocab-parallel" | FileCheck %s
// RUN: loom-opt %s --split-input-file --loom-tensor-parallel="ranks=2 vocab-parallel summary" 2>&1 >/dev/null | FileCheck %s --check-prefix=SUMMARY
// RUN: loom-opt %s --split-input-file --loom-tensor-parallel="ranks=2 vocab-parallel" --loom-autodiff --canonicalize | FileCheck %s --check-prefix=GRAD
// RUN: loom-opt %s --split-input-file --loom-tensor-parallel="ranks=2 summary" 2>&1 >/dev/null | FileCheck %s --check-prefix=WHOLE
// RUN: loom-opt %s --split-input-file --loom-tensor-parallel="ranks=2 vocab-parallel report=%t.json" > /dev/null
// RUN: FileCheck %s --check-prefix=JSON < %t.json

// --loom-tensor-parallel vocab-parallel (Megatron's vocab-parallel
// embedding and cross-entropy): a tied embedding's table is split over the
// vocab; the lookup reads the rank's rows (ids outside its range give
// zero rows) and an all-reduce sums them; the LM head is column-parallel
// over the vocab; the cross-entropy of the split logits takes three
// all-reduces: the maxima (max), the sums of exponentials and the target
// logits (sums). The whole [tokens, vocab] logits never exist on a rank.

// CHECK-LABEL: func.func @forward
// CHECK-SAME: %[[IDS:[^:]*]]: tensor<2x4xi64> {graph.input = "ids"}
// CHECK-SAME: %[[WTE:[^:]*]]: tensor<4x4xf32> {graph.param = "wte", graph.shard = {axis = "tensor", dim = 0 : i64, groups = 1 : i64, shape = array<i64: 8, 4>}}
// The rank's vocab range [r * 4, r * 4 + 4): its first id is the offset.
// CHECK: %[[RANGE:.*]] = mesh.all_slice %{{.*}} on @mesh mesh_axes = [0] slice_axis = 0 : tensor<8xi64> -> tensor<4xi64>
// CHECK: %[[START:.*]] = graph.slice %[[RANGE]] starts = [0] ends = [1]
// CHECK: %[[LOCAL:.*]] = graph.sub %[[IDS]], %[[START]]
// CHECK: %[[MAX:.*]] = graph.max %[[LOCAL]]
// CHECK: %[[ROW:.*]] = graph.min %[[MAX]]
// CHECK: %[[MINE:.*]] = graph.compare eq, %[[ROW]], %[[LOCAL]]
// CHECK: %[[ROWS:.*]] = graph.gather %[[WTE]], %[[ROW]] axis = 0 : (tensor<4x4xf32>, tensor<2x4xi64>) -> tensor<2x4x4xf32>
// CHECK: %[[MASK:.*]] = graph.unsqueeze %[[MINE]] axes = [2]
// CHECK: %[[OWN:.*]] = graph.where %[[MASK]], %[[ROWS]], %{{.*}}
// CHECK: %[[EMB:.*]] = mesh.all_reduce %[[OWN]] on @mesh mesh_axes = [0] : tensor<2x4x4xf32>
// The LM head: column-parallel over the vocab, its input's gradient summed.
// CHECK: %[[IN:.*]] = graph.grad_all_reduce %[[EMB]]
// CHECK: %[[T:.*]] = graph.transpose %[[WTE]] [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK: %[[Z:.*]] = graph.matmul %[[IN]], %[[T]] : (tensor<2x4x4xf32>, tensor<4x4xf32>) -> tensor<2x4x4xf32>
// The loss: log-sum-exp from the maxima and the sums of exponentials...
// CHECK: %[[LMAX:.*]] = graph.reduce_max %[[Z]] axes = [2] keepdims
// CHECK: %[[GMAX:.*]] = mesh.all_reduce %[[LMAX]] on @mesh mesh_axes = [0] reduction = <max> : tensor<2x4x1xf32>
// CHECK: %[[SHIFT:.*]] = graph.floor %[[GMAX]]
// CHECK: %[[D:.*]] = graph.sub %[[Z]], %[[SHIFT]]
// CHECK: %[[E:.*]] = graph.exp %[[D]]
// CHECK: %[[LSUM:.*]] = graph.reduce_sum %[[E]] axes = [2] keepdims
// CHECK: %[[GSUM:.*]] = mesh.all_reduce %[[LSUM]] on @mesh mesh_axes = [0] : tensor<2x4x1xf32>
// CHECK: %[[LOG:.*]] = graph.log %[[GSUM]]
// CHECK: %[[LSE:.*]] = graph.add %[[SHIFT]], %[[LOG]]
// ...and the target logit, from the rank whose range holds the label.
// CHECK: %[[VOCAB:.*]] = mesh.all_slice %{{.*}} slice_axis = 0 : tensor<8xi64> -> tensor<4xi64>
// CHECK: %[[HIT:.*]] = graph.compare eq, %{{.*}}, %[[VOCAB]] : (tensor<2x4x1xi64>, tensor<4xi64>) -> tensor<2x4x4xi1>
// CHECK: %[[PICK:.*]] = graph.where %[[HIT]], %[[Z]], %{{.*}}
// CHECK: %[[LT:.*]] = graph.reduce_sum %[[PICK]] axes = [2] keepdims
// CHECK: %[[TGT:.*]] = mesh.all_reduce %[[LT]] on @mesh mesh_axes = [0] : tensor<2x4x1xf32>
// CHECK: graph.sub %[[LSE]], %[[TGT]]
// The mean over the labels that are not ignored.
// CHECK: graph.compare ne, %{{.*}}, %{{.*}} : (tensor<2x4xi64>, tensor<i64>)
// CHECK: graph.div
// CHECK-NOT: graph.cross_entropy
// CHECK-NOT: mesh.

// SUMMARY: 1 column-parallel and 0 row-parallel matmul(s), 1 parameter(s) split, 1 vocab-parallel embedding(s) and 1 vocab-parallel reduction(s)
// SUMMARY: wte: vocab: split along dim 0 over 'tensor' -> tensor<4x4xf32>
// SUMMARY: all_reduce (backward) of the gradient of the input of graph.matmul @head
// SUMMARY: all_reduce sum (forward) of the rows of each rank's vocab range for graph.gather @embed
// SUMMARY: all_reduce max (forward) of the local maxima of the logits for graph.cross_entropy @loss
// SUMMARY: all_reduce sum (forward) of the local sums of exponentials for graph.cross_entropy @loss
// SUMMARY: all_reduce sum (forward) of the target logits for graph.cross_entropy @loss

// The backward: the max needs no rule (floor's gradient is zero), the
// forward sums pass the gradient through, the LM head's input gradient is
// summed, and the table's gradient is the rank's rows only.
// GRAD-LABEL: func.func @forward_grad
// GRAD-SAME: -> (tensor<f32> {graph.output = "loss"}, tensor<4x4xf32> {graph.grad_of = "wte"
// GRAD-COUNT-4: mesh.all_reduce
// GRAD: mesh.all_reduce %{{.*}} on @mesh mesh_axes = [0] : tensor<2x4x4xf32>
// GRAD-NOT: mesh.all_reduce
// GRAD: return

// Without vocab-parallel the tied head stays whole.
// WHOLE: stays replicated: graph.matmul @head

// JSON: "for": "graph.gather @embed"
// JSON-NEXT: "of": "the rows of each rank's vocab range"
// JSON: "for": "graph.cross_entropy @loss"
// JSON: "reduction": "max"
// JSON: "name": "wte"
// JSON-NEXT: "role": "vocab"
// JSON: "sequence_parallel": false
// JSON-NEXT: "vocab_parallel": true
func.func @forward(%ids: tensor<2x4xi64> {graph.input = "ids"},
                   %wte: tensor<8x4xf32> {graph.param = "wte"},
                   %labels: tensor<2x4xi64> {graph.input = "labels"})
    -> (tensor<f32> {graph.output = "loss"}) {
  %e = graph.gather %wte, %ids axis = 0 : (tensor<8x4xf32>, tensor<2x4xi64>) -> tensor<2x4x4xf32> loc("embed")
  %t = graph.transpose %wte [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %z = graph.matmul %e, %t : (tensor<2x4x4xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32> loc("head")
  %loss = graph.cross_entropy %z, %labels reduction = mean {ignore_index = -100 : i64} : (tensor<2x4x8xf32>, tensor<2x4xi64>) -> tensor<f32> loc("loss")
  return %loss : tensor<f32>
}
