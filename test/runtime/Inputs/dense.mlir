func.func @dense(%x: tensor<?x8xf32> {graph.input = "x", graph.dim_names = ["batch", ""]},
                 %w: tensor<8x4xf32> {graph.input = "w"})
    -> (tensor<?x4xf32> {graph.output = "y"}) {
  %0 = graph.matmul %x, %w : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %1 = graph.relu %0 : tensor<?x4xf32>
  return %1 : tensor<?x4xf32>
}
