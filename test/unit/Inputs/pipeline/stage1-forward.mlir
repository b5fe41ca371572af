// Stage 1's forward: loss = mean((in * b - y)^2) over the micro-batch.
func.func @f1(%in: tensor<2x3xf32> {graph.input = "in:0"},
              %y: tensor<2x3xf32> {graph.input = "batch:y"},
              %b: tensor<3xf32> {graph.input = "param:b"})
    -> (tensor<f32> {graph.output = "loss"}) {
  %0 = graph.mul %in, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = graph.sub %0, %y : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = graph.mul %1, %1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = graph.reduce_mean %2 axes = [0, 1] : (tensor<2x3xf32>) -> tensor<f32>
  return %3 : tensor<f32>
}
