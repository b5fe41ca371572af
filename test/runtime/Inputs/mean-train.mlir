// A second hand-written training step, of another model: it learns the
// mean of y ([batch, 2]) as b with SGD with momentum 0.9 at lr 0.5, one
// micro-batch per step and no schedule horizon; an extra output
// ("max_error") that the trainer ignores.
//
//   loss = mean((b - y)^2), g = mean(b - y, axis 0) (its gradient)
//   m' = 0.9 m + g, b' = b - 0.5 m'
func.func @mean(
    %y: tensor<?x2xf32> {graph.input = "y", graph.dim_names = ["batch", ""]},
    %step: tensor<i64> {graph.step},
    %b: tensor<2xf32> {graph.state = "b", graph.state_kind = "param"},
    %m: tensor<2xf32> {graph.state = "b/momentum", graph.state_kind = "momentum"})
    -> (tensor<f32> {graph.output = "loss"}, tensor<2xf32> {graph.next_state = "b"},
        tensor<f32> {graph.output = "max_error"}, tensor<f32> {graph.output = "grad_norm"},
        tensor<2xf32> {graph.next_state = "b/momentum"}, tensor<f32> {graph.output = "lr"})
    attributes {loom.training = {accumulate = 1 : i64, labels = "y"}} {
  %r = graph.sub %b, %y : (tensor<2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  %r2 = graph.mul %r, %r : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  %loss = graph.reduce_mean %r2 axes = [0, 1] : (tensor<?x2xf32>) -> tensor<f32>
  %abs = graph.abs %r : tensor<?x2xf32>
  %max = graph.reduce_max %abs axes = [0, 1] : (tensor<?x2xf32>) -> tensor<f32>
  %g = graph.reduce_mean %r axes = [0] : (tensor<?x2xf32>) -> tensor<2xf32>
  %g2 = graph.mul %g, %g : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %g2sum = graph.reduce_sum %g2 axes = [0] : (tensor<2xf32>) -> tensor<f32>
  %norm = graph.sqrt %g2sum : tensor<f32>
  %beta = graph.constant dense<0.9> : tensor<f32>
  %decayed = graph.mul %m, %beta : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %m_next = graph.add %decayed, %g : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %lr = graph.constant dense<0.5> : tensor<f32>
  %upd = graph.mul %m_next, %lr : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %b_next = graph.sub %b, %upd : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %loss, %b_next, %max, %norm, %m_next, %lr : tensor<f32>, tensor<2xf32>, tensor<f32>, tensor<f32>, tensor<2xf32>, tensor<f32>
}
