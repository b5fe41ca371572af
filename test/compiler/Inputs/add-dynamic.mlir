func.func @forward(%a: tensor<?x?x4xf32> {graph.input = "a"}, %b: tensor<?x?x4xf32> {graph.input = "b"}) -> (tensor<?x?x4xf32> {graph.output = "y"}) {
  %t = graph.exp %a : tensor<?x?x4xf32>
  %s = graph.add %t, %b : (tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  %y = graph.add %s, %a : (tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  return %y : tensor<?x?x4xf32>
}
