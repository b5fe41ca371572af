// A gather along dim 1: not a collective of the CUDA target
// (test/launch/cuda-sim-collectives.test).
mesh.mesh @mesh(shape = 2) {loom.axes = ["data"]}
func.func @main(%x: tensor<4x3xf32>) -> tensor<4x6xf32> {
  %g = mesh.all_gather %x on @mesh mesh_axes = [0] gather_axis = 1 : tensor<4x3xf32> -> tensor<4x6xf32>
  return %g : tensor<4x6xf32>
}
