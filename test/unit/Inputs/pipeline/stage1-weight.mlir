// Stage 1's weight gradient: acc:b + w * 2/6 * sum over rows of
// (in * b - y) * in.
func.func @w1(%in: tensor<2x3xf32> {graph.input = "in:0"},
              %y: tensor<2x3xf32> {graph.input = "batch:y"},
              %b: tensor<3xf32> {graph.input = "param:b"},
              %w: tensor<f32> {graph.input = "loss_weight"},
              %acc: tensor<3xf32> {graph.input = "acc:b"})
    -> (tensor<3xf32> {graph.output = "acc:b"}) {
  %k = graph.constant dense<0.333333343> : tensor<f32>
  %0 = graph.mul %in, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = graph.sub %0, %y : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = graph.mul %1, %in : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = graph.reduce_sum %2 axes = [0] : (tensor<2x3xf32>) -> tensor<3xf32>
  %4 = graph.mul %w, %k : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %5 = graph.mul %3, %4 : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %6 = graph.add %acc, %5 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %6 : tensor<3xf32>
}
