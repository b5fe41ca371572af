func.func @forward(%ids: tensor<?x?xi64> {graph.input = "ids"}) -> (tensor<?xi64> {graph.output = "a"}, tensor<1x?xi64> {graph.output = "b"}, tensor<1x?xi64> {graph.output = "c"}) {
  %s = graph.slice %ids starts = [0, 0] ends = [1, 9223372036854775807] steps = [1, 1] : (tensor<?x?xi64>) -> tensor<?x?xi64>
  %f = graph.fill_like %s, 1 : i64 : (tensor<?x?xi64>) -> tensor<?x?xi64>
  %c = graph.cumsum %f axis = 1 exclusive : (tensor<?x?xi64>) -> tensor<?x?xi64>
  %4 = graph.squeeze %c axes = [0] : (tensor<?x?xi64>) -> tensor<?xi64>
  %5 = graph.unsqueeze %4 axes = [0] : (tensor<?xi64>) -> tensor<1x?xi64>
  %6 = graph.reshape %5 [-1, 0] : (tensor<1x?xi64>) -> tensor<1x?xi64>
  return %4, %5, %6 : tensor<?xi64>, tensor<1x?xi64>, tensor<1x?xi64>
}
