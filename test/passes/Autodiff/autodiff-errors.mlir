// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-autodiff

// An op without a VJP rule on the path to the loss is named.
func.func @no_rule(%x: tensor<2x3xf32> {graph.input = "x"},
                   %w: tensor<3xf32> {graph.param = "w"}) -> tensor<f32> {
  %m = graph.mul %x, %w : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // expected-error @+1 {{'graph.reduce_prod' has no VJP rule: the loss cannot be differentiated through it}}
  %p = graph.reduce_prod %m axes = [0, 1] : (tensor<2x3xf32>) -> tensor<f32>
  return %p : tensor<f32>
}

// -----

// expected-error @+1 {{autodiff needs static shapes: argument 'x' has type 'tensor<?x3xf32>'}}
func.func @dynamic(%x: tensor<?x3xf32> {graph.input = "x"},
                   %w: tensor<3xf32> {graph.param = "w"}) -> tensor<?x3xf32> {
  %m = graph.mul %x, %w : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  return %m : tensor<?x3xf32>
}

// -----

// expected-error @+1 {{loom-autodiff: the loss (result 0) must be a float scalar, not 'tensor<3xf32>'}}
func.func @not_scalar(%w: tensor<3xf32> {graph.param = "w"}) -> tensor<3xf32> {
  return %w : tensor<3xf32>
}

// -----

// expected-error @+1 {{loom-autodiff: nothing to differentiate: no graph.param argument that is not frozen}}
func.func @no_params(%x: tensor<3xf32> {graph.input = "x"}) -> tensor<f32> {
  %s = graph.reduce_sum %x axes = [0] : (tensor<3xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// ONNX control flow (graph.loop, graph.if) is not differentiated yet.
func.func @control_flow(%x: tensor<3xf32> {graph.input = "x"},
                        %w: tensor<3xf32> {graph.param = "w"}) -> tensor<f32> {
  %n = graph.constant dense<2> : tensor<i64>
  // expected-error @+1 {{'graph.loop' has no VJP rule: the loss cannot be differentiated through it}}
  %y = graph.loop trip_count %n : tensor<i64> inits(%x : tensor<3xf32>)
      captures(%w : tensor<3xf32>) -> tensor<3xf32> {
  ^bb0(%i: tensor<i64>, %c: tensor<i1>, %a: tensor<3xf32>, %ww: tensor<3xf32>):
    %m = graph.mul %a, %ww : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    graph.yield %c, %m : tensor<i1>, tensor<3xf32>
  }
  %s = graph.reduce_sum %y axes = [0] : (tensor<3xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
