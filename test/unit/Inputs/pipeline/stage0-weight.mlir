// Stage 0's weight gradient: acc:a + sum over rows of dout * x.
func.func @w0(%x: tensor<2x3xf32> {graph.input = "batch:x"},
              %dout: tensor<2x3xf32> {graph.input = "dout:0"},
              %acc: tensor<3xf32> {graph.input = "acc:a"})
    -> (tensor<3xf32> {graph.output = "acc:a"}) {
  %0 = graph.mul %dout, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = graph.reduce_sum %0 axes = [0] : (tensor<2x3xf32>) -> tensor<3xf32>
  %2 = graph.add %acc, %1 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %2 : tensor<3xf32>
}
