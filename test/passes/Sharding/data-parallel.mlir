// RUN: loom-opt %s --loom-data-parallel="ranks=2" | FileCheck %s
// RUN: loom-opt %s --loom-data-parallel="ranks=2 bucket-bytes=16" | FileCheck %s --check-prefix=SMALL
// RUN: loom-opt %s --loom-data-parallel="ranks=2 zero=2" | FileCheck %s --check-prefix=ZERO2
// RUN: loom-opt %s --loom-data-parallel="ranks=2 zero=1" | FileCheck %s --check-prefix=ZERO1
// RUN: loom-opt %s --loom-data-parallel="ranks=4 report=%t.json summary" 2>&1 >/dev/null | FileCheck %s --check-prefix=SUMMARY
// RUN: FileCheck %s --check-prefix=JSON < %t.json
// RUN: not loom-opt %s --loom-data-parallel="ranks=0" 2>&1 | FileCheck %s --check-prefix=RANKS
// RUN: not loom-opt %s --loom-data-parallel="zero=4" 2>&1 | FileCheck %s --check-prefix=STAGE

// Every rank computes the gradients of its batch slice. The pass declares
// the mesh, averages the loss over the ranks and reduces the gradients in
// buckets, in the order the backward produces them (w's gradient, then
// b's), each bucket right after its last gradient; each reduced gradient
// is divided by the ranks (the mean).

// CHECK: mesh.mesh @mesh(shape = 2) {loom.axes = ["data"], loom.zero = 0 : i64}
// CHECK-LABEL: func.func @f_grad
// CHECK-SAME: loom.data_parallel = 2
// CHECK: %[[S:.*]] = graph.reduce_sum
// CHECK: %[[L:.*]] = mesh.all_reduce %[[S]] on @mesh mesh_axes = [0] : tensor<f32> -> tensor<f32>
// CHECK: %[[HALF:.*]] = graph.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[LOSS:.*]] = graph.mul %[[L]], %[[HALF]]
// CHECK: %[[GW:.*]] = graph.matmul %{{.*}}, %{{.*}} {transpose_lhs}
// CHECK: %[[GB:.*]] = graph.mul %arg2, %arg2
// CHECK: %[[FW:.*]] = graph.reshape %[[GW]] [6]
// CHECK: %[[FB:.*]] = graph.reshape %[[GB]] [5]
// CHECK: %[[CAT:.*]] = graph.concat %[[FW]], %[[FB]] axis = 0
// CHECK: %[[R:.*]] = mesh.all_reduce %[[CAT]] on @mesh mesh_axes = [0] : tensor<11xf32> -> tensor<11xf32>
// CHECK: %[[W0:.*]] = graph.slice %[[R]] starts = [0] ends = [6]
// CHECK: %[[W1:.*]] = graph.reshape %[[W0]] [3, 2]
// CHECK: %[[W:.*]] = graph.mul %[[W1]], %{{.*}} : (tensor<3x2xf32>, tensor<f32>)
// CHECK: %[[B0:.*]] = graph.slice %[[R]] starts = [6] ends = [11]
// CHECK: %[[B1:.*]] = graph.reshape %[[B0]] [5]
// CHECK: %[[B:.*]] = graph.mul %[[B1]], %{{.*}} : (tensor<5xf32>, tensor<f32>)
// CHECK: return %[[LOSS]], %[[W]], %[[B]]

// Buckets of 16 bytes: each gradient alone, the first reduced before the
// second is computed.
// SMALL: %[[GW:.*]] = graph.matmul %{{.*}}, %{{.*}} {transpose_lhs}
// SMALL: mesh.all_reduce %[[GW]] {{.*}} : tensor<3x2xf32> -> tensor<3x2xf32>
// SMALL: %[[GB:.*]] = graph.mul %arg2, %arg2
// SMALL: mesh.all_reduce %[[GB]] {{.*}} : tensor<5xf32> -> tensor<5xf32>

// ZeRO-2: each gradient padded to a multiple of the ranks and laid out as
// [ranks, chunk]; the bucket [2, 3 + 3] is reduce-scattered and each rank
// keeps its chunk of each gradient, marked with the full shape.
// ZERO2: mesh.mesh @mesh(shape = 2) {loom.axes = ["data"], loom.zero = 2 : i64}
// ZERO2: tensor<3xf32> {graph.grad_of = "w", graph.output = "w.grad", graph.shard = {axis = "data", shape = array<i64: 3, 2>}}
// ZERO2-SAME: tensor<3xf32> {graph.grad_of = "b", graph.output = "b.grad", graph.shard = {axis = "data", shape = array<i64: 5>}}
// ZERO2: graph.reshape %{{.*}} [2, 3] : (tensor<6xf32>) -> tensor<2x3xf32>
// ZERO2: graph.pad %{{.*}} pads = [0, 1] mode = constant : (tensor<5xf32>) -> tensor<6xf32>
// ZERO2: %[[CAT:.*]] = graph.concat %{{.*}}, %{{.*}} axis = 1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
// ZERO2: %[[RS:.*]] = mesh.reduce_scatter %[[CAT]] on @mesh mesh_axes = [0] scatter_axis = 0 : tensor<2x6xf32> -> tensor<1x6xf32>
// ZERO2: graph.slice %[[RS]] starts = [0, 0] ends = [1, 3]
// ZERO2: graph.slice %[[RS]] starts = [0, 3] ends = [1, 6]

// ZeRO-1: the bucket is all-reduced whole, each rank keeps its slice.
// ZERO1: %[[AR:.*]] = mesh.all_reduce %{{.*}} : tensor<2x6xf32> -> tensor<2x6xf32>
// ZERO1: mesh.all_slice %[[AR]] on @mesh mesh_axes = [0] slice_axis = 0 : tensor<2x6xf32> -> tensor<1x6xf32>

// SUMMARY: loom-data-parallel: 4 ranks on axis 'data' of @mesh, ZeRO-0, 1 gradient bucket(s) of up to 262144 bytes
// SUMMARY: bucket 0: all_reduce of 44 bytes (2 gradient(s)) after graph.mul

// JSON: "bucket_bytes": 262144
// JSON: "collective": "all_reduce"
// JSON: "gradients": [
// JSON-NEXT: "w",
// JSON-NEXT: "b"
// JSON: "why": "the gradients are partial sums
// JSON: "mesh": {
// JSON: "shape": [
// JSON-NEXT: 4
// JSON: "name": "w"
// JSON: "optimizer_state": "replicated"
// JSON: "param": "replicated over 'data'"

// RANKS: loom-data-parallel: ranks must be at least 1, not 0
// STAGE: loom-data-parallel: zero takes 0, 1, 2 or 3, not 4

func.func @f_grad(%x: tensor<4x3xf32> {graph.input = "x"},
                  %w: tensor<3x2xf32> {graph.param = "w", graph.initial_value = dense<1.0> : tensor<3x2xf32>},
                  %b: tensor<5xf32> {graph.param = "b", graph.initial_value = dense<0.5> : tensor<5xf32>})
    -> (tensor<f32> {graph.output = "loss"},
        tensor<3x2xf32> {graph.grad_of = "w", graph.output = "w.grad"},
        tensor<5xf32> {graph.grad_of = "b", graph.output = "b.grad"}) {
  %m = graph.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %s = graph.reduce_sum %m axes = [0, 1] : (tensor<4x2xf32>) -> tensor<f32>
  %g = graph.matmul %x, %m {transpose_lhs} : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %gb = graph.mul %b, %b : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  return %s, %g, %gb : tensor<f32>, tensor<3x2xf32>, tensor<5xf32>
}
