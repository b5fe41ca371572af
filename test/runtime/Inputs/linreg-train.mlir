// A hand-written training step in the IR contract of training artifacts:
// linear regression y = x @ w (x: [batch, 4], y: [batch, 2]) with a mean
// squared error loss, plain SGD, gradient accumulation over 2
// micro-batches and a learning rate that decays linearly to 0 over the
// schedule horizon: lr = 0.5 * (1 - optimizer_step / total_steps).
//
//   loss = mean((x @ w - y)^2)
//   g    = x^T (x @ w - y) * 2 / numel(y)
//   sum  = g_acc + g
//   at the last micro-batch of an optimizer step ((step + 1) % 2 == 0):
//     w' = w - lr * sum / 2, g_acc' = 0; otherwise w' = w, g_acc' = sum.
//   grad_norm = |sum / 2|
func.func @linreg(
    %x: tensor<?x4xf32> {graph.input = "x", graph.dim_names = ["batch", ""]},
    %y: tensor<?x2xf32> {graph.input = "y", graph.dim_names = ["batch", ""]},
    %step: tensor<i64> {graph.step},
    %total: tensor<i64> {graph.total_steps},
    %w: tensor<4x2xf32> {graph.state = "w", graph.state_kind = "param",
                         graph.initial_value = dense<[[0.5, 0.0], [0.0, 0.5], [0.0, 0.0], [0.0, 0.0]]> : tensor<4x2xf32>},
    %g_acc: tensor<4x2xf32> {graph.state = "w/grad_accum", graph.state_kind = "grad_accum"})
    -> (tensor<f32> {graph.output = "loss"}, tensor<f32> {graph.output = "grad_norm"},
        tensor<f32> {graph.output = "lr"}, tensor<4x2xf32> {graph.next_state = "w"},
        tensor<4x2xf32> {graph.next_state = "w/grad_accum"})
    attributes {loom.training = {accumulate = 2 : i64, description = "mse, sgd lr 0.5 linear decay, accumulate 2", labels = "y"}} {
  %pred = graph.matmul %x, %w : (tensor<?x4xf32>, tensor<4x2xf32>) -> tensor<?x2xf32>
  %r = graph.sub %pred, %y : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  %r2 = graph.mul %r, %r : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  %loss = graph.reduce_mean %r2 axes = [0, 1] : (tensor<?x2xf32>) -> tensor<f32>
  %ones = graph.fill_like %r, 1.0 : f32 : (tensor<?x2xf32>) -> tensor<?x2xf32>
  %n = graph.reduce_sum %ones axes = [0, 1] : (tensor<?x2xf32>) -> tensor<f32>
  %xtr = graph.matmul %x, %r {transpose_lhs} : (tensor<?x4xf32>, tensor<?x2xf32>) -> tensor<4x2xf32>
  %two = graph.constant dense<2.0> : tensor<f32>
  %scale = graph.div %two, %n : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %g = graph.mul %xtr, %scale : (tensor<4x2xf32>, tensor<f32>) -> tensor<4x2xf32>
  %sum = graph.add %g_acc, %g : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %avg = graph.mul %sum, %half : (tensor<4x2xf32>, tensor<f32>) -> tensor<4x2xf32>
  %sq = graph.mul %avg, %avg : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %sqsum = graph.reduce_sum %sq axes = [0, 1] : (tensor<4x2xf32>) -> tensor<f32>
  %norm = graph.sqrt %sqsum : tensor<f32>
  // The schedule: optimizer step = step / 2.
  %c1 = graph.constant dense<1> : tensor<i64>
  %c2 = graph.constant dense<2> : tensor<i64>
  %c0 = graph.constant dense<0> : tensor<i64>
  %opt = graph.div %step, %c2 : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %optf = graph.cast %opt to f32 : tensor<i64>
  %totalf = graph.cast %total to f32 : tensor<i64>
  %frac = graph.div %optf, %totalf : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %onef = graph.constant dense<1.0> : tensor<f32>
  %left = graph.sub %onef, %frac : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %lr0 = graph.constant dense<5.000000e-01> : tensor<f32>
  %lr = graph.mul %lr0, %left : (tensor<f32>, tensor<f32>) -> tensor<f32>
  // Apply at the last micro-batch of an optimizer step.
  %next = graph.add %step, %c1 : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %phase = graph.rem %next, %c2 : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %apply = graph.compare eq, %phase, %c0 : (tensor<i64>, tensor<i64>) -> tensor<i1>
  %upd = graph.mul %avg, %lr : (tensor<4x2xf32>, tensor<f32>) -> tensor<4x2xf32>
  %stepped = graph.sub %w, %upd : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %w_next = graph.where %apply, %stepped, %w : (tensor<i1>, tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %acc_next = graph.where %apply, %zero, %sum : (tensor<i1>, tensor<f32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  return %loss, %norm, %lr, %w_next, %acc_next : tensor<f32>, tensor<f32>, tensor<f32>, tensor<4x2xf32>, tensor<4x2xf32>
}
