// Every kind of mesh collective as a step of the CUDA program (the test is
// test/launch/cuda-sim-collectives.test).
mesh.mesh @mesh(shape = 2) {loom.axes = ["data"]}
func.func @main(%g: tensor<8xf32>, %a: tensor<4x3xf32>, %i: tensor<2xi64>) -> (tensor<8xf32>, tensor<2x3xf32>, tensor<4xi64>, tensor<2x3xf32>, tensor<8xf32>) {
  %t = graph.tanh %g : tensor<8xf32>
  %r = mesh.all_reduce %t on @mesh mesh_axes = [0] : tensor<8xf32> -> tensor<8xf32>
  %m = graph.mul %a, %a : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %s = graph.add %r, %g : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %rs = mesh.reduce_scatter %m on @mesh mesh_axes = [0] reduction = <max> scatter_axis = 0 : tensor<4x3xf32> -> tensor<2x3xf32>
  %ag = mesh.all_gather %i on @mesh mesh_axes = [0] gather_axis = 0 : tensor<2xi64> -> tensor<4xi64>
  %sl = mesh.all_slice %a on @mesh mesh_axes = [0] slice_axis = 0 : tensor<4x3xf32> -> tensor<2x3xf32>
  %bc = mesh.broadcast %g on @mesh mesh_axes = [0] root = [1] : (tensor<8xf32>) -> tensor<8xf32>
  return %s, %rs, %ag, %sl, %bc : tensor<8xf32>, tensor<2x3xf32>, tensor<4xi64>, tensor<2x3xf32>, tensor<8xf32>
}
