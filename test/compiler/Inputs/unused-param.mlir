// A model with a parameter its output does not depend on: `loomc train`
// warns (compile-cache.test: the warning comes again on a cache hit).
func.func @forward(
    %x: tensor<8x4xf32> {graph.input = "x"},
    %w: tensor<4x4xf32> {graph.param = "w", graph.initial_value = dense<0.5> : tensor<4x4xf32>},
    %unused: tensor<4xf32> {graph.param = "unused", graph.initial_value = dense<0.0> : tensor<4xf32>})
    -> (tensor<8x4xf32> {graph.output = "y"}) {
  %0 = graph.matmul %x, %w : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
