// Resize, top_k and scatter_elements compute the right numbers. Expected
// values: resize from ONNX's reference (interpolate_nd in
// onnx/backend/test/case/node/resize.py, ONNX 1.13 as Debian packages it,
// float64, printed to 6 digits); top_k and scatter_elements from NumPy
// 1.24 (a stable argsort of -x / x; the updates applied in row-major
// order, with np.add.at / np.maximum.at for the reductions).
// RUN: loom-opt --loom-graph-to-linalg %s \
// RUN: | mlir-opt --one-shot-bufferize="bufferize-function-boundaries" \
// RUN:     --buffer-deallocation-pipeline --convert-bufferization-to-memref \
// RUN:     --convert-linalg-to-loops --convert-scf-to-cf --expand-strided-metadata \
// RUN:     --lower-affine --convert-math-to-libm --convert-math-to-llvm \
// RUN:     --convert-arith-to-llvm --finalize-memref-to-llvm --convert-func-to-llvm \
// RUN:     --convert-cf-to-llvm --reconcile-unrealized-casts \
// RUN: | mlir-cpu-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | FileCheck %s

// Nearest: half_pixel / round_prefer_floor by 2 x 1.5 on dynamic dims (the
// output size floor(in * scale) at run time); asymmetric / ceil down by
// 0.5; align_corners / floor to 1 x 3 (a size of 1: the first element).
func.func @nearest(%x: tensor<?x?xf32>, %y: tensor<4x4xf32>)
    -> (tensor<?x?xf32>, tensor<2x2xf32>, tensor<1x3xf32>) {
  %0 = graph.resize %x scales = [2.0, 1.5] sizes = [-1, -1] mode = nearest
      coordinate_mode = half_pixel nearest_mode = round_prefer_floor
      : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %1 = graph.resize %y scales = [0.5, 0.5] sizes = [-1, -1] mode = nearest
      coordinate_mode = asymmetric nearest_mode = ceil
      : (tensor<4x4xf32>) -> tensor<2x2xf32>
  %2 = graph.resize %y scales = [0.25, 0.75] sizes = [1, 3] mode = nearest
      coordinate_mode = align_corners nearest_mode = floor
      : (tensor<4x4xf32>) -> tensor<1x3xf32>
  return %0, %1, %2 : tensor<?x?xf32>, tensor<2x2xf32>, tensor<1x3xf32>
}

// Linear: half_pixel up by 2 (edges clamped); align_corners down by 0.6
// (the reference's width scale * in = 2.4); pytorch_half_pixel to a size
// given for a dynamic dim (scale 0: out / in at run time).
func.func @linear(%y: tensor<4x4xf32>, %d: tensor<1x?xf32>)
    -> (tensor<1x8xf32>, tensor<2x2xf32>, tensor<1x3xf32>) {
  %s = tensor.extract_slice %y[0, 0] [1, 4] [1, 1] : tensor<4x4xf32> to tensor<1x4xf32>
  %0 = graph.resize %s scales = [1.0, 2.0] sizes = [-1, -1] mode = linear
      coordinate_mode = half_pixel nearest_mode = round_prefer_floor
      : (tensor<1x4xf32>) -> tensor<1x8xf32>
  %1 = graph.resize %y scales = [0.6, 0.6] sizes = [-1, -1] mode = linear
      coordinate_mode = align_corners nearest_mode = round_prefer_floor
      : (tensor<4x4xf32>) -> tensor<2x2xf32>
  %2 = graph.resize %d scales = [1.0, 0.0] sizes = [-1, 3] mode = linear
      coordinate_mode = pytorch_half_pixel nearest_mode = round_prefer_floor
      : (tensor<1x?xf32>) -> tensor<1x3xf32>
  return %0, %1, %2 : tensor<1x8xf32>, tensor<2x2xf32>, tensor<1x3xf32>
}

// Cubic: half_pixel up by 2 on both dims (A = -0.75); asymmetric by 1.5
// with A = -0.5 and exclude_outside.
func.func @cubic(%y: tensor<4x4xf32>)
    -> (tensor<8x8xf32>, tensor<1x6xf32>) {
  %0 = graph.resize %y scales = [2.0, 2.0] sizes = [-1, -1] mode = cubic
      coordinate_mode = half_pixel nearest_mode = round_prefer_floor
      : (tensor<4x4xf32>) -> tensor<8x8xf32>
  %s = tensor.extract_slice %y[1, 0] [1, 4] [1, 1] : tensor<4x4xf32> to tensor<1x4xf32>
  %1 = graph.resize %s scales = [1.0, 1.5] sizes = [-1, -1] mode = cubic
      coordinate_mode = asymmetric nearest_mode = round_prefer_floor
      {cubic_coeff_a = -0.5 : f64, exclude_outside}
      : (tensor<1x4xf32>) -> tensor<1x6xf32>
  return %0, %1 : tensor<8x8xf32>, tensor<1x6xf32>
}

// Largest 3 along dim 1 (ties: the lower index first) and smallest 2
// along a dynamic dim 0 of integers.
func.func @top_k(%x: tensor<2x5xf32>, %i: tensor<?x3xi32>)
    -> (tensor<2x3xf32>, tensor<2x3xi64>, tensor<2x3xi32>, tensor<2x3xi64>) {
  %v, %j = graph.top_k %x k = 3 axis = 1
      : (tensor<2x5xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>)
  %w, %k = graph.top_k %i k = 2 axis = 0 smallest
      : (tensor<?x3xi32>) -> (tensor<2x3xi32>, tensor<2x3xi64>)
  return %v, %j, %w, %k : tensor<2x3xf32>, tensor<2x3xi64>, tensor<2x3xi32>, tensor<2x3xi64>
}

// Along dim 1 with a negative index; add with a duplicate index; max
// along dim 0.
func.func @scatter(%d: tensor<3x3xf32>, %i: tensor<2x2xi64>, %u: tensor<2x2xf32>)
    -> (tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>) {
  %0 = graph.scatter_elements %d, %i, %u axis = 1 reduction = none
      : (tensor<3x3xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<3x3xf32>
  %1 = graph.scatter_elements %d, %i, %u axis = 1 reduction = add
      : (tensor<3x3xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<3x3xf32>
  %2 = graph.scatter_elements %d, %i, %u axis = 0 reduction = max
      : (tensor<3x3xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<3x3xf32>
  return %0, %1, %2 : tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>
}

func.func private @printMemrefF32(tensor<*xf32>)
func.func private @printMemrefI32(tensor<*xi32>)
func.func private @printMemrefI64(tensor<*xi64>)
func.func @main() {
  %x = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %xd = tensor.cast %x : tensor<2x2xf32> to tensor<?x?xf32>
  %y = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0],
                             [9.0, 10.0, 11.0, 12.0], [13.0, 14.0, 15.0, 16.0]]> : tensor<4x4xf32>
  %n0, %n1, %n2 = call @nearest(%xd, %y)
      : (tensor<?x?xf32>, tensor<4x4xf32>) -> (tensor<?x?xf32>, tensor<2x2xf32>, tensor<1x3xf32>)
  %n0u = tensor.cast %n0 : tensor<?x?xf32> to tensor<*xf32>
  call @printMemrefF32(%n0u) : (tensor<*xf32>) -> ()
  %n1u = tensor.cast %n1 : tensor<2x2xf32> to tensor<*xf32>
  call @printMemrefF32(%n1u) : (tensor<*xf32>) -> ()
  %n2u = tensor.cast %n2 : tensor<1x3xf32> to tensor<*xf32>
  call @printMemrefF32(%n2u) : (tensor<*xf32>) -> ()
  %d = arith.constant dense<[[1.0, 4.0, 2.0, 8.0, 5.0]]> : tensor<1x5xf32>
  %dd = tensor.cast %d : tensor<1x5xf32> to tensor<1x?xf32>
  %l0, %l1, %l2 = call @linear(%y, %dd)
      : (tensor<4x4xf32>, tensor<1x?xf32>) -> (tensor<1x8xf32>, tensor<2x2xf32>, tensor<1x3xf32>)
  %l0u = tensor.cast %l0 : tensor<1x8xf32> to tensor<*xf32>
  call @printMemrefF32(%l0u) : (tensor<*xf32>) -> ()
  %l1u = tensor.cast %l1 : tensor<2x2xf32> to tensor<*xf32>
  call @printMemrefF32(%l1u) : (tensor<*xf32>) -> ()
  %l2u = tensor.cast %l2 : tensor<1x3xf32> to tensor<*xf32>
  call @printMemrefF32(%l2u) : (tensor<*xf32>) -> ()
  %c0, %c1 = call @cubic(%y) : (tensor<4x4xf32>) -> (tensor<8x8xf32>, tensor<1x6xf32>)
  %c0u = tensor.cast %c0 : tensor<8x8xf32> to tensor<*xf32>
  call @printMemrefF32(%c0u) : (tensor<*xf32>) -> ()
  %c1u = tensor.cast %c1 : tensor<1x6xf32> to tensor<*xf32>
  call @printMemrefF32(%c1u) : (tensor<*xf32>) -> ()
  %t = arith.constant dense<[[3.0, 1.0, 3.0, 5.0, 2.0], [0.0, -1.0, 7.0, 7.0, 7.0]]> : tensor<2x5xf32>
  %ti = arith.constant dense<[[4, -2, 0], [1, 5, 0], [1, -3, 2], [0, 0, 0]]> : tensor<4x3xi32>
  %tid = tensor.cast %ti : tensor<4x3xi32> to tensor<?x3xi32>
  %tv, %tj, %tw, %tk = call @top_k(%t, %tid)
      : (tensor<2x5xf32>, tensor<?x3xi32>) -> (tensor<2x3xf32>, tensor<2x3xi64>, tensor<2x3xi32>, tensor<2x3xi64>)
  %tvu = tensor.cast %tv : tensor<2x3xf32> to tensor<*xf32>
  call @printMemrefF32(%tvu) : (tensor<*xf32>) -> ()
  %tju = tensor.cast %tj : tensor<2x3xi64> to tensor<*xi64>
  call @printMemrefI64(%tju) : (tensor<*xi64>) -> ()
  %twu = tensor.cast %tw : tensor<2x3xi32> to tensor<*xi32>
  call @printMemrefI32(%twu) : (tensor<*xi32>) -> ()
  %tku = tensor.cast %tk : tensor<2x3xi64> to tensor<*xi64>
  call @printMemrefI64(%tku) : (tensor<*xi64>) -> ()
  %sd = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]> : tensor<3x3xf32>
  %si = arith.constant dense<[[0, -1], [2, 2]]> : tensor<2x2xi64>
  %su = arith.constant dense<[[10.0, 20.0], [30.0, 40.0]]> : tensor<2x2xf32>
  %s0, %s1, %s2 = call @scatter(%sd, %si, %su)
      : (tensor<3x3xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> (tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>)
  %s0u = tensor.cast %s0 : tensor<3x3xf32> to tensor<*xf32>
  call @printMemrefF32(%s0u) : (tensor<*xf32>) -> ()
  %s1u = tensor.cast %s1 : tensor<3x3xf32> to tensor<*xf32>
  call @printMemrefF32(%s1u) : (tensor<*xf32>) -> ()
  %s2u = tensor.cast %s2 : tensor<3x3xf32> to tensor<*xf32>
  call @printMemrefF32(%s2u) : (tensor<*xf32>) -> ()
  return
}
// nearest: half_pixel / round_prefer_floor on dynamic dims, asymmetric / ceil, align_corners / floor
// CHECK: sizes = [4, 3]
// CHECK-NEXT: [1,   1,   2]
// CHECK-NEXT: [1,   1,   2]
// CHECK-NEXT: [3,   3,   4]
// CHECK-NEXT: [3,   3,   4]
// CHECK: sizes = [2, 2]
// CHECK-NEXT: [1,   3]
// CHECK-NEXT: [9,   11]
// CHECK: sizes = [1, 3]
// CHECK-NEXT: [1,   2,   4]
// linear: half_pixel, align_corners (3.142857 = 1 + 3 / 1.4), pytorch_half_pixel
// CHECK: sizes = [1, 8]
// CHECK-NEXT: [1,   1.25,   1.75,   2.25,   2.75,   3.25,   3.75,   4]
// CHECK: sizes = [2, 2]
// CHECK-NEXT: [1,   3.14286]
// CHECK-NEXT: [9.57143,   11.7143]
// CHECK: sizes = [1, 3]
// CHECK-NEXT: [2,   2,   6]
// cubic: half_pixel by 2 x 2, asymmetric with A = -0.5 and exclude_outside
// CHECK: sizes = [8, 8]
// CHECK-NEXT: [0.472656,   0.769531,   1.24609,   1.875,   2.28125,   2.91016,   3.38672,   3.68359]
// CHECK-NEXT: [1.66016,   1.95703,   2.43359,   3.0625,   3.46875,   4.09766,   4.57422,   4.87109]
// CHECK-NEXT: [3.56641,   3.86328,   4.33984,   4.96875,   5.375,   6.00391,   6.48047,   6.77734]
// CHECK-NEXT: [6.08203,   6.37891,   6.85547,   7.48438,   7.89062,   8.51953,   8.99609,   9.29297]
// CHECK-NEXT: [7.70703,   8.00391,   8.48047,   9.10938,   9.51562,   10.1445,   10.6211,   10.918]
// CHECK-NEXT: [10.2227,   10.5195,   10.9961,   11.625,   12.0312,   12.6602,   13.1367,   13.4336]
// CHECK-NEXT: [12.1289,   12.4258,   12.9023,   13.5312,   13.9375,   14.5664,   15.043,   15.3398]
// CHECK-NEXT: [13.3164,   13.6133,   14.0898,   14.7188,   15.125,   15.7539,   16.2305,   16.5273]
// CHECK: sizes = [1, 6]
// CHECK-NEXT: [5,   5.60714,   6.33333,   7,   7.75862,   8.10526]
// top_k: values and indices, largest along dim 1, then smallest along dim 0
// CHECK: sizes = [2, 3]
// CHECK-NEXT: [5,   3,   3]
// CHECK-NEXT: [7,   7,   7]
// CHECK: sizes = [2, 3]
// CHECK-NEXT: [3,   0,   2]
// CHECK-NEXT: [2,   3,   4]
// CHECK: sizes = [2, 3]
// CHECK-NEXT: [0,   -3,   0]
// CHECK-NEXT: [1,   -2,   0]
// CHECK: sizes = [2, 3]
// CHECK-NEXT: [3,   2,   0]
// CHECK-NEXT: [1,   0,   1]
// scatter_elements: none, add, max
// CHECK: sizes = [3, 3]
// CHECK-NEXT: [10,   2,   20]
// CHECK-NEXT: [4,   5,   40]
// CHECK-NEXT: [7,   8,   9]
// CHECK: sizes = [3, 3]
// CHECK-NEXT: [11,   2,   23]
// CHECK-NEXT: [4,   5,   76]
// CHECK-NEXT: [7,   8,   9]
// CHECK: sizes = [3, 3]
// CHECK-NEXT: [10,   2,   3]
// CHECK-NEXT: [4,   5,   6]
// CHECK-NEXT: [30,   40,   9]
