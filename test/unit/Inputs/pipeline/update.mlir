// A pipe rank's update (SGD, lr 0.1) of one 3-vector parameter p: the
// test names the inputs acc:<p>, loss, step, <p> and wraps the Training.
func.func @update(%acc: tensor<3xf32> {graph.input = "acc"},
                  %loss: tensor<f32> {graph.input = "loss"},
                  %step: tensor<i64> {graph.input = "step"},
                  %p: tensor<3xf32> {graph.input = "p"})
    -> (tensor<f32> {graph.output = "loss"}, tensor<f32> {graph.output = "grad_norm"},
        tensor<f32> {graph.output = "lr"}, tensor<3xf32> {graph.output = "p_next"}) {
  %lr = graph.constant dense<0.1> : tensor<f32>
  %0 = graph.mul %acc, %lr : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %1 = graph.sub %p, %0 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %2 = graph.mul %acc, %acc : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %3 = graph.reduce_sum %2 axes = [0] : (tensor<3xf32>) -> tensor<f32>
  %4 = graph.sqrt %3 : tensor<f32>
  return %loss, %4, %lr, %1 : tensor<f32>, tensor<f32>, tensor<f32>, tensor<3xf32>
}
