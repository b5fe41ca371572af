// RUN: loom-opt %s --loom-data-parallel="ranks=2 zero=3" | FileCheck %s
// RUN: loom-opt %s --loom-data-parallel="ranks=2 zero=3" --loom-optimizer="optimizer=adamw" --canonicalize --cse | FileCheck %s --check-prefix=STEP
// RUN: loom-opt %s --loom-data-parallel="ranks=2 zero=3 optimizer-slots=2 summary" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SUMMARY

// ZeRO-3 (FSDP): every trained parameter argument becomes this rank's flat
// chunk (padded to a multiple of the ranks). The forward reads an
// all-gather of the chunks, one group per layer (l1, l2), the next layer's
// gather started before the current layer's first use so that it
// overlaps; the code that reads a gather (where the CPU backend waits) is
// at the parameter's first use. The backward gathers again and clones the
// forward's parameter-only ops (the transpose) onto the new copy, so the
// forward's copy dies with the forward. Gradients are reduce-scattered.

// CHECK-LABEL: func.func @f_grad(
// CHECK-SAME: %arg1: tensor<3xf32> {graph.initial_value = dense<1.000000e+00> : tensor<2x3xf32>, graph.param = "l1.w", graph.shard = {axis = "data", shape = array<i64: 2, 3>}}
// CHECK-SAME: %arg2: tensor<2xf32> {{{.*}}graph.param = "l1.b", graph.shard = {axis = "data", shape = array<i64: 3>}}
// CHECK-SAME: %arg3: tensor<2xf32> {{{.*}}graph.param = "l2.w", graph.shard = {axis = "data", shape = array<i64: 2, 2>}}
// The l1 group, then l2's gather started before l1's first use.
// CHECK: %[[R1:.*]] = graph.reshape %arg1 [1, 3]
// CHECK: %[[G1:.*]] = mesh.all_gather %[[R1]] on @mesh mesh_axes = [0] gather_axis = 0 {loom.fsdp = "forward"} : tensor<1x3xf32> -> tensor<2x3xf32>
// CHECK: %[[GB:.*]] = mesh.all_gather %{{.*}} {loom.fsdp = "forward"} : tensor<1x2xf32> -> tensor<2x2xf32>
// CHECK: %[[G2:.*]] = mesh.all_gather %{{.*}} {loom.fsdp = "forward"} : tensor<1x2xf32> -> tensor<2x2xf32>
// CHECK: %[[F1:.*]] = graph.reshape %[[G1]] [6]
// CHECK: %[[W1:.*]] = graph.reshape %[[F1]] [2, 3]
// CHECK: %[[T1:.*]] = graph.transpose %[[W1]]
// CHECK: %[[H:.*]] = graph.matmul %arg0, %[[T1]]
// The bias: 3 elements padded to 4, the padding sliced off.
// CHECK: %[[FB:.*]] = graph.reshape %[[GB]] [4]
// CHECK: graph.slice %[[FB]] starts = [0] ends = [3]
// CHECK: %[[F2:.*]] = graph.reshape %[[G2]] [4]
// CHECK: %[[W2:.*]] = graph.reshape %[[F2]] [2, 2]
// CHECK: %[[T2:.*]] = graph.transpose %[[W2]]
// CHECK: graph.matmul %{{.*}}, %[[T2]]
// CHECK: mesh.all_reduce
// The backward: l2 gathered again, its transpose cloned onto the copy.
// CHECK: %[[B2:.*]] = mesh.all_gather %{{.*}} {loom.fsdp = "backward"} : tensor<1x2xf32> -> tensor<2x2xf32>
// CHECK: %[[BF2:.*]] = graph.reshape %[[B2]] [4]
// CHECK: %[[BW2:.*]] = graph.reshape %[[BF2]] [2, 2]
// CHECK: %[[BT2:.*]] = graph.transpose %[[BW2]]
// CHECK: graph.matmul %{{.*}}, %[[BT2]] {transpose_rhs}
// CHECK-NOT: %[[T2]]
// CHECK: mesh.reduce_scatter %{{.*}} on @mesh mesh_axes = [0] scatter_axis = 0 : tensor<2x7xf32> -> tensor<1x7xf32>
// CHECK: return

// The step keeps each parameter a chunk: the update is the chunk's, and no
// all-gather follows the reduce-scatter (the next step gathers).
// STEP-LABEL: func.func @train_step(
// STEP-SAME: tensor<3xf32> {{{.*}}graph.shard = {axis = "data", shape = array<i64: 2, 3>}, graph.state = "l1.w", graph.state_kind = "param"}
// STEP-SAME: tensor<3xf32> {graph.shard = {axis = "data", shape = array<i64: 2, 3>}, graph.state = "l1.w/exp_avg", graph.state_kind = "exp_avg"}
// STEP-SAME: -> (tensor<f32> {graph.output = "loss"}, tensor<f32> {graph.output = "grad_norm"}, tensor<f32> {graph.output = "lr"}, tensor<3xf32> {graph.next_state = "l1.w"}, tensor<2xf32> {graph.next_state = "l1.b"}, tensor<2xf32> {graph.next_state = "l2.w"}
// STEP-COUNT-3: mesh.all_gather {{.*}} {loom.fsdp = "forward"}
// STEP: mesh.all_gather {{.*}} {loom.fsdp = "backward"}
// STEP: mesh.reduce_scatter
// STEP-NOT: mesh.all_gather
// STEP-NOT: mesh.all_slice
// STEP: return

// SUMMARY: loom-data-parallel: 2 ranks on axis 'data' of @mesh, ZeRO-3, 1 gradient bucket(s)
// SUMMARY: fsdp: 3 parameter(s) sharded, 2 forward and 1 backward gather group(s); per rank: (parameters + gradients + 2 optimizer slot(s)) / 2 = 112 bytes + the largest gathered layer 36 bytes = 148 bytes (164 with the next layer's gather in flight)
// SUMMARY: gather group 0 'l1': 36 bytes, 2 parameter(s), started before graph.transpose
// SUMMARY: gather group 1 'l2': 16 bytes, 1 parameter(s), started before graph.transpose

func.func @f_grad(%x: tensor<4x3xf32> {graph.input = "x"},
                  %w: tensor<2x3xf32> {graph.param = "l1.w", graph.initial_value = dense<1.0> : tensor<2x3xf32>},
                  %b: tensor<3xf32> {graph.param = "l1.b", graph.initial_value = dense<0.5> : tensor<3xf32>},
                  %v: tensor<2x2xf32> {graph.param = "l2.w", graph.initial_value = dense<1.0> : tensor<2x2xf32>})
    -> (tensor<f32> {graph.output = "loss"},
        tensor<2x3xf32> {graph.grad_of = "l1.w", graph.output = "l1.w.grad"},
        tensor<3xf32> {graph.grad_of = "l1.b", graph.output = "l1.b.grad"},
        tensor<2x2xf32> {graph.grad_of = "l2.w", graph.output = "l2.w.grad"}) {
  %wt = graph.transpose %w [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %h = graph.matmul %x, %wt : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %bs = graph.reduce_sum %b axes = [0] : (tensor<3xf32>) -> tensor<f32>
  %hb = graph.add %h, %bs : (tensor<4x2xf32>, tensor<f32>) -> tensor<4x2xf32>
  %vt = graph.transpose %v [1, 0] : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %m = graph.matmul %hb, %vt : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
  %s = graph.reduce_sum %m axes = [0, 1] : (tensor<4x2xf32>) -> tensor<f32>
  %one = graph.constant dense<1.0> : tensor<4x2xf32>
  %dh = graph.matmul %one, %vt {transpose_rhs} : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
  %gvt = graph.matmul %hb, %one {transpose_lhs} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
  %gv = graph.transpose %gvt [1, 0] : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %gb = graph.constant dense<8.0> : tensor<3xf32>
  %gwt = graph.matmul %x, %dh {transpose_lhs} : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %gw = graph.transpose %gwt [1, 0] : (tensor<3x2xf32>) -> tensor<2x3xf32>
  return %s, %gw, %gb, %gv : tensor<f32>, tensor<2x3xf32>, tensor<3xf32>, tensor<2x2xf32>
}
