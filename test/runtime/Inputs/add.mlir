func.func @add(%a: tensor<?x4xf32> {graph.input = "a", graph.dim_names = ["batch", ""]},
               %b: tensor<?x4xf32> {graph.input = "b", graph.dim_names = ["batch", ""]})
    -> (tensor<?x4xf32> {graph.output = "sum"}) {
  %0 = graph.add %a, %b : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
