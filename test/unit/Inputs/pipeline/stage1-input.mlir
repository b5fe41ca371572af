// Stage 1's input gradient: din = w * 2/6 * (in * b - y) * b.
func.func @i1(%in: tensor<2x3xf32> {graph.input = "in:0"},
              %y: tensor<2x3xf32> {graph.input = "batch:y"},
              %b: tensor<3xf32> {graph.input = "param:b"},
              %w: tensor<f32> {graph.input = "loss_weight"})
    -> (tensor<2x3xf32> {graph.output = "din:0"}) {
  %k = graph.constant dense<0.333333343> : tensor<f32>
  %0 = graph.mul %in, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = graph.sub %0, %y : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = graph.mul %1, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %3 = graph.mul %w, %k : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %4 = graph.mul %2, %3 : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %4 : tensor<2x3xf32>
}
