// Convolution and pooling compute the right numbers. Expected values: a
// direct-loop NumPy 1.24 reference of each op's description (PyTorch's
// rules for ceil_mode and the average's divisor), run when the test was
// written.
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


func.func @conv(%x: tensor<?x4x?x?xf32>, %w: tensor<6x2x3x3xf32>, %b: tensor<6xf32>, %x1: tensor<2x4x4xf32>, %w1: tensor<3x4x2xf32>)
    -> (tensor<?x6x?x?xf32>, tensor<2x3x4xf32>) {
  %0 = graph.conv %x, %w, %b strides = [2, 1] padding = [1, 0, 1, 1] dilations = [1, 1] groups = 2
      : (tensor<?x4x?x?xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<?x6x?x?xf32>
  %1 = graph.conv %x1, %w1 strides = [1] padding = [1, 1] dilations = [2] groups = 1
      : (tensor<2x4x4xf32>, tensor<3x4x2xf32>) -> tensor<2x3x4xf32>
  return %0, %1 : tensor<?x6x?x?xf32>, tensor<2x3x4xf32>
}

func.func @pools(%q: tensor<1x1x?x?xf32>, %x3: tensor<1x1x2x3x3xf32>, %x6: tensor<1x1x6xf32>, %xi: tensor<1x1x5xi32>)
    -> (tensor<1x1x?x?xf32>, tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>, tensor<1x1x2x3x3xf32>,
        tensor<1x1x4xf32>, tensor<1x1x4xf32>, tensor<1x1x5xi32>) {
  %0 = graph.max_pool %q kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1] ceil_mode
      : (tensor<1x1x?x?xf32>) -> tensor<1x1x?x?xf32>
  %qs = tensor.cast %q : tensor<1x1x?x?xf32> to tensor<1x1x5x5xf32>
  %1 = graph.avg_pool %qs kernel = [3, 3] strides = [2, 2] padding = [1, 1, 1, 1]
      : (tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32>
  %2 = graph.avg_pool %qs kernel = [3, 3] strides = [2, 2] padding = [1, 1, 1, 1] count_include_pad
      : (tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32>
  %3 = graph.max_pool %x3 kernel = [1, 2, 2] strides = [1, 1, 1] padding = [0, 1, 0, 0, 0, 1] dilations = [1, 1, 1]
      : (tensor<1x1x2x3x3xf32>) -> tensor<1x1x2x3x3xf32>
  %4 = graph.avg_pool %x6 kernel = [3] strides = [2] padding = [1, 1] ceil_mode count_include_pad
      : (tensor<1x1x6xf32>) -> tensor<1x1x4xf32>
  %5 = graph.avg_pool %x6 kernel = [3] strides = [2] padding = [1, 1] ceil_mode
      : (tensor<1x1x6xf32>) -> tensor<1x1x4xf32>
  %6 = graph.max_pool %xi kernel = [2] strides = [1] padding = [1, 1] dilations = [2]
      : (tensor<1x1x5xi32>) -> tensor<1x1x5xi32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<1x1x?x?xf32>, tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>, tensor<1x1x2x3x3xf32>,
      tensor<1x1x4xf32>, tensor<1x1x4xf32>, tensor<1x1x5xi32>
}

func.func private @printMemrefF32(tensor<*xf32>)
func.func private @printMemrefI32(tensor<*xi32>)

func.func @main() {
  %x = arith.constant dense<[[[[-3.0, -2.0, -1.0, 0.0], [1.0, 2.0, 3.0, -3.0], [-2.0, -1.0, 0.0, 1.0], [2.0, 3.0, -3.0, -2.0]], [[-1.0, 0.0, 1.0, 2.0], [3.0, -3.0, -2.0, -1.0], [0.0, 1.0, 2.0, 3.0], [-3.0, -2.0, -1.0, 0.0]], [[1.0, 2.0, 3.0, -3.0], [-2.0, -1.0, 0.0, 1.0], [2.0, 3.0, -3.0, -2.0], [-1.0, 0.0, 1.0, 2.0]], [[3.0, -3.0, -2.0, -1.0], [0.0, 1.0, 2.0, 3.0], [-3.0, -2.0, -1.0, 0.0], [1.0, 2.0, 3.0, -3.0]]], [[[-2.0, -1.0, 0.0, 1.0], [2.0, 3.0, -3.0, -2.0], [-1.0, 0.0, 1.0, 2.0], [3.0, -3.0, -2.0, -1.0]], [[0.0, 1.0, 2.0, 3.0], [-3.0, -2.0, -1.0, 0.0], [1.0, 2.0, 3.0, -3.0], [-2.0, -1.0, 0.0, 1.0]], [[2.0, 3.0, -3.0, -2.0], [-1.0, 0.0, 1.0, 2.0], [3.0, -3.0, -2.0, -1.0], [0.0, 1.0, 2.0, 3.0]], [[-3.0, -2.0, -1.0, 0.0], [1.0, 2.0, 3.0, -3.0], [-2.0, -1.0, 0.0, 1.0], [2.0, 3.0, -3.0, -2.0]]]]> : tensor<2x4x4x4xf32>
  %xd = tensor.cast %x : tensor<2x4x4x4xf32> to tensor<?x4x?x?xf32>
  %w = arith.constant dense<[[[[-2.0, -1.0, 0.0], [1.0, 2.0, -2.0], [-1.0, 0.0, 1.0]], [[2.0, -2.0, -1.0], [0.0, 1.0, 2.0], [-2.0, -1.0, 0.0]]], [[[1.0, 2.0, -2.0], [-1.0, 0.0, 1.0], [2.0, -2.0, -1.0]], [[0.0, 1.0, 2.0], [-2.0, -1.0, 0.0], [1.0, 2.0, -2.0]]], [[[-1.0, 0.0, 1.0], [2.0, -2.0, -1.0], [0.0, 1.0, 2.0]], [[-2.0, -1.0, 0.0], [1.0, 2.0, -2.0], [-1.0, 0.0, 1.0]]], [[[2.0, -2.0, -1.0], [0.0, 1.0, 2.0], [-2.0, -1.0, 0.0]], [[1.0, 2.0, -2.0], [-1.0, 0.0, 1.0], [2.0, -2.0, -1.0]]], [[[0.0, 1.0, 2.0], [-2.0, -1.0, 0.0], [1.0, 2.0, -2.0]], [[-1.0, 0.0, 1.0], [2.0, -2.0, -1.0], [0.0, 1.0, 2.0]]], [[[-2.0, -1.0, 0.0], [1.0, 2.0, -2.0], [-1.0, 0.0, 1.0]], [[2.0, -2.0, -1.0], [0.0, 1.0, 2.0], [-2.0, -1.0, 0.0]]]]> : tensor<6x2x3x3xf32>
  %b = arith.constant dense<[1.0, -1.0, 0.5, 0.0, 2.0, -2.0]> : tensor<6xf32>
  %x1 = arith.constant dense<[[[-3.0, -2.0, -1.0, 0.0], [-1.0, 0.0, 1.0, 2.0], [1.0, 2.0, 3.0, -3.0], [3.0, -3.0, -2.0, -1.0]], [[-2.0, -1.0, 0.0, 1.0], [0.0, 1.0, 2.0, 3.0], [2.0, 3.0, -3.0, -2.0], [-3.0, -2.0, -1.0, 0.0]]]> : tensor<2x4x4xf32>
  %w1 = arith.constant dense<[[[-1.0, 0.0], [1.0, -1.0], [0.0, 1.0], [-1.0, 0.0]], [[1.0, -1.0], [0.0, 1.0], [-1.0, 0.0], [1.0, -1.0]], [[0.0, 1.0], [-1.0, 0.0], [1.0, -1.0], [0.0, 1.0]]]> : tensor<3x4x2xf32>
  %c:2 = call @conv(%xd, %w, %b, %x1, %w1) : (tensor<?x4x?x?xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>, tensor<2x4x4xf32>, tensor<3x4x2xf32>)
      -> (tensor<?x6x?x?xf32>, tensor<2x3x4xf32>)
  %c0 = tensor.cast %c#0 : tensor<?x6x?x?xf32> to tensor<*xf32>
  call @printMemrefF32(%c0) : (tensor<*xf32>) -> ()
  %c1 = tensor.cast %c#1 : tensor<2x3x4xf32> to tensor<*xf32>
  call @printMemrefF32(%c1) : (tensor<*xf32>) -> ()

  %q = arith.constant dense<[[[[0.0, 1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0, 9.0], [10.0, 11.0, 12.0, 13.0, 14.0], [15.0, 16.0, 17.0, 18.0, 19.0], [20.0, 21.0, 22.0, 23.0, 24.0]]]]> : tensor<1x1x5x5xf32>
  %qd = tensor.cast %q : tensor<1x1x5x5xf32> to tensor<1x1x?x?xf32>
  %x3 = arith.constant dense<[[[[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]], [[9.0, 10.0, 11.0], [12.0, 13.0, 14.0], [15.0, 16.0, 17.0]]]]]> : tensor<1x1x2x3x3xf32>
  %x6 = arith.constant dense<[[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]]]> : tensor<1x1x6xf32>
  %xi = arith.constant dense<[[[3, -1, 7, 2, -5]]]> : tensor<1x1x5xi32>
  %p:7 = call @pools(%qd, %x3, %x6, %xi) : (tensor<1x1x?x?xf32>, tensor<1x1x2x3x3xf32>, tensor<1x1x6xf32>, tensor<1x1x5xi32>)
      -> (tensor<1x1x?x?xf32>, tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>, tensor<1x1x2x3x3xf32>,
          tensor<1x1x4xf32>, tensor<1x1x4xf32>, tensor<1x1x5xi32>)
  %p0 = tensor.cast %p#0 : tensor<1x1x?x?xf32> to tensor<*xf32>
  call @printMemrefF32(%p0) : (tensor<*xf32>) -> ()
  %p1 = tensor.cast %p#1 : tensor<1x1x3x3xf32> to tensor<*xf32>
  call @printMemrefF32(%p1) : (tensor<*xf32>) -> ()
  %p2 = tensor.cast %p#2 : tensor<1x1x3x3xf32> to tensor<*xf32>
  call @printMemrefF32(%p2) : (tensor<*xf32>) -> ()
  %p3 = tensor.cast %p#3 : tensor<1x1x2x3x3xf32> to tensor<*xf32>
  call @printMemrefF32(%p3) : (tensor<*xf32>) -> ()
  %p4 = tensor.cast %p#4 : tensor<1x1x4xf32> to tensor<*xf32>
  call @printMemrefF32(%p4) : (tensor<*xf32>) -> ()
  %p5 = tensor.cast %p#5 : tensor<1x1x4xf32> to tensor<*xf32>
  call @printMemrefF32(%p5) : (tensor<*xf32>) -> ()
  %p6 = tensor.cast %p#6 : tensor<1x1x5xi32> to tensor<*xi32>
  call @printMemrefI32(%p6) : (tensor<*xi32>) -> ()
  return
}

// grouped 2-D conv (groups 2, stride [2, 1], pads [1, 0, 1, 1], bias), dynamic N/H/W
// CHECK: sizes = [2, 6, 2, 3]
// CHECK-NEXT: {{\[}}-3, 5, 4]
// CHECK-NEXT: {{\[}}15, -2, 6]
// CHECK-NEXT: {{\[}}-1, -4, 4]
// CHECK-NEXT: {{\[}}-12, 17, -15]
// CHECK-NEXT: {{\[}}-0.5, -4.5, 2.5]
// CHECK-NEXT: {{\[}}-5.5, -5.5, 7.5]
// CHECK-NEXT: {{\[}}4, -4, -4]
// CHECK-NEXT: {{\[}}-8, -9, 13]
// CHECK-NEXT: {{\[}}13, -1, 2]
// CHECK-NEXT: {{\[}}0, -4, 9]
// CHECK-NEXT: {{\[}}-9, 6, -13]
// CHECK-NEXT: {{\[}}7, -10, -16]
// CHECK-NEXT: {{\[}}5, 6, 11]
// CHECK-NEXT: {{\[}}-2, -5, 10]
// CHECK-NEXT: {{\[}}-4, 7, -11]
// CHECK-NEXT: {{\[}}17, -10, -12]
// CHECK-NEXT: {{\[}}-4.5, -8.5, 5.5]
// CHECK-NEXT: {{\[}}-5.5, 8.5, -0.5]
// CHECK-NEXT: {{\[}}-4, -5, 7]
// CHECK-NEXT: {{\[}}-9, 18, -15]
// CHECK-NEXT: {{\[}}-1, -8, 10]
// CHECK-NEXT: {{\[}}-4, -1, 10]
// CHECK-NEXT: {{\[}}6, -7, -13]
// CHECK-NEXT: {{\[}}-10, -6, 9]
// 1-D conv, dilation 2, pads [1, 1]
// CHECK: sizes = [2, 3, 4]
// CHECK-NEXT: {{\[}}2, 1, 0, 4]
// CHECK-NEXT: {{\[}}5, 3, -4, -6]
// CHECK-NEXT: {{\[}}-7, -4, 4, 2]
// CHECK-NEXT: {{\[}}2, 0, -1, 3]
// CHECK-NEXT: {{\[}}4, -4, -4, 2]
// CHECK-NEXT: {{\[}}-6, 4, 5, -5]
// max_pool 2x2/2 ceil_mode on a dynamic 5x5
// CHECK: sizes = [1, 1, 3, 3]
// CHECK-NEXT: {{\[}}6, 8, 9]
// CHECK-NEXT: {{\[}}16, 18, 19]
// CHECK-NEXT: {{\[}}21, 23, 24]
// avg_pool 3x3/2 pad 1, real elements only
// CHECK: sizes = [1, 1, 3, 3]
// CHECK-NEXT: {{\[}}3, 4.5, 6]
// CHECK-NEXT: {{\[}}10.5, 12, 13.5]
// CHECK-NEXT: {{\[}}18, 19.5, 21]
// avg_pool 3x3/2 pad 1, count_include_pad
// CHECK: sizes = [1, 1, 3, 3]
// CHECK-NEXT: {{\[}}1.33333, 3, 2.66667]
// CHECK-NEXT: {{\[}}7, 12, 9]
// CHECK-NEXT: {{\[}}8, 13, 9.33333]
// 3-D max_pool
// CHECK: sizes = [1, 1, 2, 3, 3]
// CHECK-NEXT: {{\[}}1, 2, 2]
// CHECK-NEXT: {{\[}}4, 5, 5]
// CHECK-NEXT: {{\[}}7, 8, 8]
// CHECK-NEXT: {{\[}}10, 11, 11]
// CHECK-NEXT: {{\[}}13, 14, 14]
// CHECK-NEXT: {{\[}}16, 17, 17]
// 1-D avg_pool ceil_mode, count_include_pad (the overhang past the pad never counts)
// CHECK: sizes = [1, 1, 4]
// CHECK-NEXT: {{\[}}0.333333, 2, 4, 2.5]
// 1-D avg_pool ceil_mode
// CHECK: sizes = [1, 1, 4]
// CHECK-NEXT: {{\[}}0.5, 2, 4, 5]
// integer max_pool, dilation 2, pads [1, 1] (pads never win)
// CHECK: sizes = [1, 1, 5]
// CHECK-NEXT: {{\[}}-1, 7, 2, 7, 2]
