// RUN: loom-opt %s --loom-optimizer="optimizer=sgd lr=0.1 momentum=0.9 nesterov=1 weight-decay=0.01" | FileCheck %s --check-prefix=SGD
// RUN: loom-opt %s --loom-optimizer="optimizer=adamw lr=0.01 accumulate=2 clip-norm=1 schedule=cosine warmup=2" | FileCheck %s --check-prefix=ADAMW
// RUN: not loom-opt %s --loom-optimizer="optimizer=lion" 2>&1 | FileCheck %s --check-prefix=BAD

// --loom-optimizer wraps a gradient function into train_step: batch
// inputs, step, total_steps, parameters and slots in; loss, grad_norm, lr
// and every next state out. A frozen parameter (no gradient) becomes a
// constant of its initial value.

// SGD-LABEL: func.func @train_step(
// SGD-SAME: %arg0: tensor<4x3xf32> {graph.input = "x"}
// SGD-SAME: %arg1: tensor<i64> {graph.step}, %arg2: tensor<i64> {graph.total_steps}
// SGD-SAME: %arg3: tensor<3x2xf32> {graph.initial_value = dense<1.000000e+00> : tensor<3x2xf32>, graph.state = "w", graph.state_kind = "param"}
// SGD-SAME: %arg4: tensor<3x2xf32> {graph.state = "w/momentum", graph.state_kind = "momentum"}
// SGD-SAME: -> (tensor<f32> {graph.output = "loss"}, tensor<f32> {graph.output = "grad_norm"}, tensor<f32> {graph.output = "lr"}, tensor<3x2xf32> {graph.next_state = "w"}, tensor<3x2xf32> {graph.next_state = "w/momentum"})
// SGD-SAME: loom.training = {accumulate = 1 : i64
// SGD: graph.constant dense<5.000000e-01> : tensor<2xf32>
// SGD-NOT: func.func @f_grad

// ADAMW-LABEL: func.func @train_step(
// ADAMW-SAME: graph.state = "w/grad_accum", graph.state_kind = "grad_accum"
// ADAMW-SAME: graph.state = "w/exp_avg", graph.state_kind = "exp_avg"
// ADAMW-SAME: graph.state = "w/exp_avg_sq", graph.state_kind = "exp_avg_sq"
// ADAMW: graph.mod
// ADAMW: graph.cos
// ADAMW: graph.sqrt
// ADAMW: graph.min
// ADAMW: graph.pow
// ADAMW: graph.where

// BAD: error: loom-optimizer: unknown optimizer 'lion' (sgd, adam, adamw)
func.func @f_grad(%x: tensor<4x3xf32> {graph.input = "x"},
                  %w: tensor<3x2xf32> {graph.param = "w", graph.initial_value = dense<1.0> : tensor<3x2xf32>},
                  %b: tensor<2xf32> {graph.param = "b", graph.initial_value = dense<0.5> : tensor<2xf32>})
    -> (tensor<f32> {graph.output = "loss"}, tensor<3x2xf32> {graph.grad_of = "w", graph.output = "w.grad"}) {
  %m = graph.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %a = graph.add %m, %b : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %s = graph.reduce_sum %a axes = [0, 1] : (tensor<4x2xf32>) -> tensor<f32>
  %g = graph.matmul %x, %a {transpose_lhs} : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  return %s, %g : tensor<f32>, tensor<3x2xf32>
}
