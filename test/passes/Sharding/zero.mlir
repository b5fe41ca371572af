// RUN: loom-opt %S/data-parallel.mlir --loom-data-parallel="ranks=2 zero=2" --loom-optimizer="optimizer=adamw clip-norm=1" | FileCheck %s
// RUN: not loom-opt %s --loom-optimizer 2>&1 | FileCheck %s --check-prefix=NOMESH

// ZeRO: --loom-data-parallel leaves each rank the chunk of each gradient
// (marked graph.shard); --loom-optimizer keeps the slots as chunks, adds
// the chunks' sums of squares over the data axis for the global norm,
// updates the rank's chunk of each parameter (all_slice of the flattened,
// padded parameter) and all-gathers the next parameter.

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: tensor<3x2xf32> {{{.*}}graph.state = "w", graph.state_kind = "param"}
// CHECK-SAME: tensor<3xf32> {graph.shard = {axis = "data", shape = array<i64: 3, 2>}, graph.state = "w/exp_avg", graph.state_kind = "exp_avg"}
// CHECK-SAME: tensor<3xf32> {graph.shard = {axis = "data", shape = array<i64: 5>}, graph.state = "b/exp_avg", graph.state_kind = "exp_avg"}
// CHECK-SAME: -> (tensor<f32> {graph.output = "loss"}, tensor<f32> {graph.output = "grad_norm"}, tensor<f32> {graph.output = "lr"}, tensor<3x2xf32> {graph.next_state = "w"}, tensor<5xf32> {graph.next_state = "b"}, tensor<3xf32> {graph.next_state = "w/exp_avg"}
// CHECK: mesh.reduce_scatter {{.*}} : tensor<2x6xf32> -> tensor<1x6xf32>
// CHECK: %[[SQ:.*]] = mesh.all_reduce %{{.*}} on @mesh mesh_axes = [0] : tensor<f32> -> tensor<f32>
// CHECK: %[[SUM:.*]] = graph.add %{{.*}}, %[[SQ]]
// CHECK: %[[NORM:.*]] = graph.sqrt %[[SUM]]
// CHECK: %[[W:.*]] = graph.reshape %arg3 [6] : (tensor<3x2xf32>) -> tensor<6xf32>
// CHECK: %[[WROWS:.*]] = graph.reshape %[[W]] [2, 3]
// CHECK: %[[WMINE:.*]] = mesh.all_slice %[[WROWS]] on @mesh mesh_axes = [0] slice_axis = 0 : tensor<2x3xf32> -> tensor<1x3xf32>
// CHECK: %[[ROW:.*]] = graph.reshape %{{.*}} [1, 3] : (tensor<3xf32>) -> tensor<1x3xf32>
// CHECK: %[[ALL:.*]] = mesh.all_gather %[[ROW]] on @mesh mesh_axes = [0] gather_axis = 0 : tensor<1x3xf32> -> tensor<2x3xf32>
// CHECK: graph.reshape %[[ALL]] [6]
// CHECK: graph.pad %{{.*}} pads = [0, 1] mode = constant : (tensor<5xf32>) -> tensor<6xf32>
// CHECK: mesh.all_slice
// CHECK: %[[BALL:.*]] = mesh.all_gather
// CHECK: %[[BFLAT:.*]] = graph.reshape %[[BALL]] [6]
// CHECK: graph.slice %[[BFLAT]] starts = [0] ends = [5]
// CHECK: return %{{.*}}, %[[NORM]]

// NOMESH: loom-optimizer: sharded gradients (graph.shard) but no mesh with a 'data' axis (run --loom-data-parallel)

// A sharded gradient without a mesh.
func.func @f_grad(%x: tensor<4x3xf32> {graph.input = "x"},
                  %w: tensor<3x2xf32> {graph.param = "w", graph.initial_value = dense<1.0> : tensor<3x2xf32>})
    -> (tensor<f32> {graph.output = "loss"},
        tensor<3xf32> {graph.grad_of = "w", graph.output = "w.grad", graph.shard = {axis = "data", shape = array<i64: 3, 2>}}) {
  %m = graph.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %s = graph.reduce_sum %m axes = [0, 1] : (tensor<4x2xf32>) -> tensor<f32>
  %g = graph.constant dense<1.0> : tensor<3xf32>
  return %s, %g : tensor<f32>, tensor<3xf32>
}
