// The lowering computes the right numbers: graph -> linalg, then upstream
// bufferization and lowering to LLVM, run by mlir-cpu-runner.
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

// A dense layer on a dynamic batch: relu(x @ w + b), its row means and a
// reshape of the dynamic batch.
func.func @layer(%x: tensor<?x3xf32>, %w: tensor<3x2xf32>, %b: tensor<2xf32>)
    -> (tensor<?x2xf32>, tensor<?x1xf32>, tensor<?xf32>) {
  %0 = graph.matmul %x, %w : (tensor<?x3xf32>, tensor<3x2xf32>) -> tensor<?x2xf32>
  %1 = graph.add %0, %b : (tensor<?x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  %2 = graph.relu %1 : tensor<?x2xf32>
  %3 = graph.reduce_mean %2 axes = [1] keepdims : (tensor<?x2xf32>) -> tensor<?x1xf32>
  %4 = graph.reshape %2 [-1] : (tensor<?x2xf32>) -> tensor<?xf32>
  return %2, %3, %4 : tensor<?x2xf32>, tensor<?x1xf32>, tensor<?xf32>
}

// Elementwise ops with broadcasting, integers and comparisons.
func.func @elementwise(%a: tensor<2x3xf32>, %i: tensor<4xi32>, %j: tensor<i32>)
    -> (tensor<2x3xf32>, tensor<4xi32>, tensor<4xi32>, tensor<2x3xf32>) {
  %s = graph.sigmoid %a : tensor<2x3xf32>
  %t = graph.transpose %a [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %m = graph.mod %i, %j : (tensor<4xi32>, tensor<i32>) -> tensor<4xi32>
  %r = graph.rem %i, %j : (tensor<4xi32>, tensor<i32>) -> tensor<4xi32>
  %c = graph.compare gt, %a, %s : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  %z = graph.fill_like %a, 0.0 : f32 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %w = graph.where %c, %a, %z : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %s, %m, %r, %w : tensor<2x3xf32>, tensor<4xi32>, tensor<4xi32>, tensor<2x3xf32>
}

func.func private @printMemrefF32(tensor<*xf32>)
func.func private @printMemrefI32(tensor<*xi32>)

func.func @main() {
  %x = arith.constant dense<[[1.0, 2.0, 3.0], [-1.0, -2.0, -3.0]]> : tensor<2x3xf32>
  %xd = tensor.cast %x : tensor<2x3xf32> to tensor<?x3xf32>
  %w = arith.constant dense<[[1.0, -1.0], [0.5, 0.0], [0.0, 2.0]]> : tensor<3x2xf32>
  %b = arith.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %y, %mean, %flat = call @layer(%xd, %w, %b)
      : (tensor<?x3xf32>, tensor<3x2xf32>, tensor<2xf32>) -> (tensor<?x2xf32>, tensor<?x1xf32>, tensor<?xf32>)
  %yu = tensor.cast %y : tensor<?x2xf32> to tensor<*xf32>
  call @printMemrefF32(%yu) : (tensor<*xf32>) -> ()
  %mu = tensor.cast %mean : tensor<?x1xf32> to tensor<*xf32>
  call @printMemrefF32(%mu) : (tensor<*xf32>) -> ()
  %fu = tensor.cast %flat : tensor<?xf32> to tensor<*xf32>
  call @printMemrefF32(%fu) : (tensor<*xf32>) -> ()

  %i = arith.constant dense<[7, -7, 6, -1]> : tensor<4xi32>
  %j = arith.constant dense<-3> : tensor<i32>
  %s, %m, %r, %wh = call @elementwise(%x, %i, %j)
      : (tensor<2x3xf32>, tensor<4xi32>, tensor<i32>) -> (tensor<2x3xf32>, tensor<4xi32>, tensor<4xi32>, tensor<2x3xf32>)
  %su = tensor.cast %s : tensor<2x3xf32> to tensor<*xf32>
  call @printMemrefF32(%su) : (tensor<*xf32>) -> ()
  %mmu = tensor.cast %m : tensor<4xi32> to tensor<*xi32>
  call @printMemrefI32(%mmu) : (tensor<*xi32>) -> ()
  %ru = tensor.cast %r : tensor<4xi32> to tensor<*xi32>
  call @printMemrefI32(%ru) : (tensor<*xi32>) -> ()
  %wu = tensor.cast %wh : tensor<2x3xf32> to tensor<*xf32>
  call @printMemrefF32(%wu) : (tensor<*xf32>) -> ()
  return
}

// x @ w + b = [[2.5, 4], [-2.5, -6]]; relu; row means; flattened.
// CHECK: sizes = [2, 2]
// CHECK-NEXT: [2.5, 4]
// CHECK-NEXT: [0, 0]
// CHECK: sizes = [2, 1]
// CHECK-NEXT: [3.25]
// CHECK-NEXT: [0]
// CHECK: sizes = [4]
// CHECK-NEXT: [2.5,  4,  0,  0]
// sigmoid(1) = 0.731059, sigmoid(-3) = 0.0474259
// CHECK: sizes = [2, 3]
// CHECK-NEXT: [0.731059, 0.880797, 0.952574]
// CHECK-NEXT: [0.268941, 0.119203, 0.0474259]
// Python's % (floored): 7 % -3 = -2, -7 % -3 = -1, 6 % -3 = 0, -1 % -3 = -1
// CHECK: [-2,  -1,  0,  -1]
// C's fmod (truncated): 7, -7, 6, -1 rem -3 = 1, -1, 0, -1
// CHECK: [1,  -1,  0,  -1]
// where(a > sigmoid(a), a, 0)
// CHECK: sizes = [2, 3]
// CHECK-NEXT: [1, 2, 3]
// CHECK-NEXT: [0, 0, 0]
