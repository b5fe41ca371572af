// RUN: loom-opt %s --loom-loss=loss=mse --loom-pipeline-stages="stages=3 summary=1" --loom-pipeline-parts=ranks=3 -canonicalize 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=SUMMARY < %t.err
// RUN: loom-opt %s --loom-loss=loss=mse --loom-pipeline-stages="stages=2 boundaries=/l3/" | FileCheck %s --check-prefix=NAMED
// RUN: not loom-opt %s --loom-loss=loss=mse --loom-pipeline-stages="stages=8" 2>&1 | FileCheck %s --check-prefix=MANY
// RUN: not loom-opt %s --loom-loss=loss=mse --loom-pipeline-stages="stages=3 boundaries=/l2/,/nope/" 2>&1 | FileCheck %s --check-prefix=NOPE
// RUN: loom-opt %s --loom-loss=loss=mse --loom-pipeline-stages="stages=2 boundaries=/l2/ freeze=w2" --loom-pipeline-parts=ranks=2 | FileCheck %s --check-prefix=FROZEN
// RUN: not loom-opt %s --loom-loss=loss=mse --loom-pipeline-stages="stages=2 boundaries=/l2/ freeze=w1" --loom-pipeline-parts=ranks=2 2>&1 | FileCheck %s --check-prefix=NOTHING

// Three layers with a residual from layer 1 to layer 3: stage 1 forwards
// layer 1's output to stage 2 (out:0, and its gradient comes back added
// to the one of its own input). The backward of each stage is cut into
// the input gradients (I: din, handed to the previous stage) and the
// weight gradients (W: summed into acc:N); the first stage has no I.

// SUMMARY: loom-pipeline-stages: 'forward' in 3 stages
// SUMMARY: stage 0: 2 ops (/l1/matmul .. /l1/relu), 544 FLOPs, {{.*}} 1 parameters (256 bytes), sends 1 values (128 bytes)
// SUMMARY: stage 1: 2 ops (/l2/matmul .. /l2/relu), {{.*}} sends 2 values (256 bytes)
// SUMMARY: stage 2: 3 ops (/l3/matmul .. /l3/residual), {{.*}} sends 0 values

// CHECK: mesh.mesh @mesh(shape = 1x3) {loom.axes = ["data", "pipe"]}
// CHECK-LABEL: func.func @forward_stage0_F(
// CHECK-SAME: {graph.input = "batch:x"}
// CHECK-SAME: {graph.input = "param:w1"}
// CHECK-SAME: {graph.output = "out:0"}, tensor<4x8xf32> {graph.output = "saved:0"})
// CHECK-SAME: loom.pipeline.part = "F", loom.pipeline.saved_bytes = 128
// CHECK-NOT: func.func @forward_stage0_I
// CHECK-LABEL: func.func @forward_stage0_W(
// CHECK-SAME: "batch:x"
// CHECK-SAME: "dout:0"
// CHECK-SAME: "saved:0"
// CHECK-SAME: "acc:w1"
// CHECK-SAME: -> (tensor<8x8xf32> {graph.output = "acc:w1"})
// CHECK: %[[G:.*]] = graph.matmul %arg0, %{{.*}} {transpose_lhs}
// CHECK: graph.add %arg3, %[[G]]
// CHECK-LABEL: func.func @forward_stage1_F(%arg0: tensor<4x8xf32> {graph.input = "in:0"}
// CHECK-SAME: {graph.output = "out:0"}, {{.*}} {graph.output = "out:1"}
// CHECK: return %arg0,
// CHECK-LABEL: func.func @forward_stage1_I(
// CHECK-SAME: "dout:0"
// CHECK-SAME: "dout:1"
// CHECK-SAME: -> (tensor<4x8xf32> {graph.output = "din:0"}, tensor<4x8xf32> {graph.output = "inter:0"})
// CHECK: %[[DX:.*]] = graph.matmul %{{.*}}, %arg0 {transpose_rhs}
// CHECK: %[[SUM:.*]] = graph.add %arg1, %[[DX]]
// CHECK: return %[[SUM]],
// CHECK-LABEL: func.func @forward_stage1_W(
// CHECK-SAME: "in:0"
// CHECK-SAME: "inter:0"
// CHECK-LABEL: func.func @forward_stage2_F(
// CHECK-SAME: "in:0"
// CHECK-SAME: "in:1"
// CHECK-SAME: "param:w3"
// CHECK-SAME: "batch:labels"
// CHECK-SAME: {graph.output = "loss"}
// CHECK-LABEL: func.func @forward_stage2_I(
// CHECK-SAME: {graph.input = "loss_weight"}
// CHECK-SAME: "din:0"
// CHECK-SAME: "din:1"
// CHECK: graph.broadcast_to %arg2
// CHECK-LABEL: func.func @pipeline_update_0(
// CHECK-SAME: {graph.input = "acc:w1"}
// CHECK-SAME: {graph.input = "loss"}
// CHECK-SAME: graph.param = "w1"
// CHECK-SAME: {graph.grad_of = "w1", graph.output = "w1.grad"}
// CHECK-LABEL: func.func @pipeline_update_2(

// NAMED: func.func @forward_stage0(
// NAMED: graph.matmul
// NAMED: graph.relu
// NAMED: graph.matmul
// NAMED: graph.relu
// NAMED: return
// NAMED: func.func @forward_stage1(

// MANY: error: loom-pipeline-stages: cannot cut 7 ops that read the batch into 8 stages
// NOPE: error: loom-pipeline-stages: boundary 2 ('/nope/'): no op after the previous boundary has a name containing it

// A frozen parameter is a constant of its initial value in its stage,
// which still passes the gradient back; a first stage with nothing to
// train is refused.
// FROZEN-LABEL: func.func @forward_stage1_F(
// FROZEN-NOT: param:w2
// FROZEN: graph.constant dense<2.000000e-01> : tensor<8x8xf32>
// FROZEN-LABEL: func.func @forward_stage1_I(
// FROZEN-LABEL: func.func @forward_stage1_W(
// FROZEN-NOT: w2
// FROZEN-SAME: "acc:w3"
// FROZEN-LABEL: func.func @pipeline_update_1(
// FROZEN-NOT: w2
// FROZEN-SAME: graph.param = "w3"
// NOTHING: error: loom-pipeline-parts: stage 0 trains nothing (no trained parameter, no received activation)

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
