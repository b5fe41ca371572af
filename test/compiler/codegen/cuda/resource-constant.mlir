// A small constant held as a resource blob (ONNX external data, or a
// weight a pass rewrote) is read element by element like a dense one: a
// __device__ array of its values, a literal for a splat. (The emitter used
// to ask the blob for elements it does not give, and looped printing so.)
// RUN: loomc compile %s --target cuda --emit cuda -o %t.cu
// RUN: FileCheck %s < %t.cu
// CHECK: __device__ const signed char {{.*}}[6] = {1, 2, 3, -4, 5, 6};
// CHECK: __device__ const float {{.*}}[2] = {0.5f, -2.f};
func.func @f(%a: tensor<3x2xi8>, %x: tensor<2xf32>) -> (tensor<3x2xi8>, tensor<2xf32>) {
  %w = graph.constant dense_resource<small_i8> : tensor<3x2xi8>
  %0 = graph.add %a, %w : (tensor<3x2xi8>, tensor<3x2xi8>) -> tensor<3x2xi8>
  %s = graph.constant dense_resource<small_f32> : tensor<2xf32>
  %1 = graph.mul %x, %s : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0, %1 : tensor<3x2xi8>, tensor<2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      small_i8: "0x08000000010203FC0506",
      small_f32: "0x040000000000003F000000C0"
    }
  }
#-}
