func.func @f0(%x: tensor<2x3xf32> {graph.input = "batch:x"}, %a: tensor<3xf32> {graph.input = "param:a"})
    -> (tensor<2x3xf32> {graph.output = "out:0"}) {
  %0 = graph.mul %x, %a : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
