func.func @shared_outputs(%x: tensor<4x8xf32> {graph.input = "x"})
    -> (tensor<4x8xf32> {graph.output = "a"}, tensor<4x8xf32> {graph.output = "b"},
        tensor<4x8xf32> {graph.output = "c"}, tensor<2x8xf32> {graph.output = "d"}) {
  %0 = graph.relu %x : tensor<4x8xf32>
  %s = graph.slice %0 starts = [1, 0] ends = [3, 8] steps = [1, 1] : (tensor<4x8xf32>) -> tensor<2x8xf32>
  return %0, %0, %x, %s : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<2x8xf32>
}
