// RUN: not loom-opt %s --loom-data-parallel="ranks=2 zero=3" 2>&1 | FileCheck %s

// A parameter split by tensor parallelism is not sharded again.
// CHECK: loom-data-parallel: parameter 'w' is split already (graph.shard): zero=3 shards whole parameters
func.func @f_grad(%x: tensor<4x3xf32> {graph.input = "x"},
                  %w: tensor<3x1xf32> {graph.param = "w", graph.shard = {axis = "tensor", dim = 1 : i64, groups = 1 : i64, shape = array<i64: 3, 2>}})
    -> (tensor<f32> {graph.output = "loss"},
        tensor<3x1xf32> {graph.grad_of = "w", graph.output = "w.grad"}) {
  %m = graph.matmul %x, %w : (tensor<4x3xf32>, tensor<3x1xf32>) -> tensor<4x1xf32>
  %s = graph.reduce_sum %m axes = [0, 1] : (tensor<4x1xf32>) -> tensor<f32>
  %g = graph.matmul %x, %m {transpose_lhs} : (tensor<4x3xf32>, tensor<4x1xf32>) -> tensor<3x1xf32>
  return %s, %g : tensor<f32>, tensor<3x1xf32>
}
