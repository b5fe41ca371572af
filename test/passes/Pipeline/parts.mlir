// RUN: loom-opt %s --loom-loss=loss=mse --loom-pipeline-stages="stages=2 boundaries=/l2/" --loom-pipeline-parts="ranks=2 recompute=all loss-scale=1" -canonicalize | FileCheck %s
// RUN: not loom-opt %s --loom-loss=loss=mse --loom-pipeline-stages="stages=2" --loom-pipeline-parts="ranks=2 recompute=optimal" 2>&1 | FileCheck %s --check-prefix=OPTIMAL

// --loom-pipeline-parts recompute=all: --loom-recompute runs on each
// stage's forward + backward, so the forwards save nothing (stage 1 keeps
// only what it received, in:0) and the backward parts compute the
// forward's values again from the stage's inputs.
// CHECK-LABEL: func.func @forward_stage0_F(
// CHECK-SAME: -> (tensor<4x8xf32> {graph.output = "out:0"})
// CHECK-SAME: loom.pipeline.saved_bytes = 0
// CHECK-LABEL: func.func @forward_stage0_W(
// CHECK-SAME: "batch:x"
// CHECK-SAME: "param:w1"
// CHECK-SAME: "dout:0"
// CHECK: graph.matmul %arg0, %arg1 {loom.recompute}
// CHECK-LABEL: func.func @forward_stage1_F(
// CHECK-SAME: -> (tensor<f32> {graph.output = "loss"})
// CHECK-SAME: loom.pipeline.saved_bytes = 128

// loss-scale=1 (f16): the last stage's backward is seeded with
// loss_weight * loss_scale, the last rank's update state.
// CHECK-LABEL: func.func @forward_stage1_I(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<f32> {graph.input = "loss_weight"}
// CHECK-SAME: %[[S:[a-z0-9]+]]: tensor<f32> {graph.input = "param:loss_scale"}
// CHECK: graph.mul %[[W]], %[[S]]
// CHECK: graph.matmul %arg0, %arg1 {loom.recompute}

// The first rank unscales by the scale summed over "pipe" (it adds 0);
// the last rank keeps it (graph.loss_scale: --loom-optimizer's state) and
// multiplies by scale / sum, exactly 1, keeping its share of the
// collective.
// CHECK-LABEL: func.func @pipeline_update_0(
// CHECK-DAG: %[[ONE:.*]] = graph.constant dense<1.000000e+00>
// CHECK-DAG: %[[ZERO:.*]] = graph.constant dense<0.000000e+00>
// CHECK: %[[SUM:.*]] = mesh.all_reduce %[[ZERO]] on @mesh mesh_axes = [1] {loom.pipeline.loss_scale_sum}
// CHECK: %[[INV:.*]] = graph.div %[[ONE]], %[[SUM]]
// CHECK: graph.mul %arg0, %[[INV]]
// CHECK-LABEL: func.func @pipeline_update_1(
// CHECK-SAME: %[[SCALE:[a-z0-9]+]]: tensor<f32> {graph.loss_scale})
// CHECK: %[[SUM1:.*]] = mesh.all_reduce %[[SCALE]] on @mesh mesh_axes = [1] {loom.pipeline.loss_scale_sum}
// CHECK: graph.div %[[SCALE]], %[[SUM1]]

// OPTIMAL: error: loom-pipeline-parts: recompute takes none, all or sqrt inside stages, not 'optimal'

func.func @forward(%x: tensor<4x8xf32> {graph.input = "x"},
                   %w1: tensor<8x8xf32> {graph.param = "w1", graph.initial_value = dense<0.1> : tensor<8x8xf32>},
                   %w2: tensor<8x8xf32> {graph.param = "w2", graph.initial_value = dense<0.2> : tensor<8x8xf32>},
                   %w3: tensor<8x8xf32> {graph.param = "w3", graph.initial_value = dense<0.3> : tensor<8x8xf32>})
    -> (tensor<4x8xf32> {graph.output = "logits"}) {
  %0 = graph.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("/l1/matmul")
  %1 = graph.relu %0 : tensor<4x8xf32> loc("/l1/relu")
  %2 = graph.matmul %1, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("/l2/matmul")
  %3 = graph.relu %2 : tensor<4x8xf32> loc("/l2/relu")
  %4 = graph.matmul %3, %w3 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("/l3/matmul")
  %5 = graph.add %4, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("/l3/residual")
  return %5 : tensor<4x8xf32>
}
