// Softmax, normalization, dropout, pooling, losses and arg-reductions
// compute the right numbers. Expected values: NumPy 1.24 (float64,
// printed to 6 digits), by the formulas of each op's description.
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

// Softmax and log-softmax on a dynamic batch; the second row would
// overflow exp without the max subtracted.
func.func @softmax(%x: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  %0 = graph.softmax %x {axis = 1 : i64} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %1 = graph.log_softmax %x {axis = 1 : i64} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0, %1 : tensor<?x4xf32>, tensor<?x4xf32>
}

// NumPy: (y - y.mean(1)) / sqrt(y.var(1) + 1e-5) * g + b.
func.func @layer_norm(%y: tensor<?x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<?x4xf32> {
  %0 = graph.layer_norm %y, %g, %b {axis = 1 : i64, epsilon = 1.0e-05 : f64}
      : (tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

func.func @channels(%z: tensor<1x2x2x2xf32>, %s: tensor<2xf32>, %b: tensor<2xf32>,
                    %m: tensor<2xf32>, %v: tensor<2xf32>)
    -> (tensor<1x2x2x2xf32>, tensor<1x2x1x1xf32>) {
  %0 = graph.batch_norm %z, %s, %b, %m, %v {epsilon = 0.0 : f64}
      : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %1 = graph.global_avg_pool %z : (tensor<1x2x2x2xf32>) -> tensor<1x2x1x1xf32>
  return %0, %1 : tensor<1x2x2x2xf32>, tensor<1x2x1x1xf32>
}

// Element i is kept when the top 24 bits of SplitMix64(seed 7)'s draw
// i + 1 are >= 0.5 * 2^24 (the reference computes the draws in Python).
func.func @dropout(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %0 = graph.dropout %x {ratio = 0.5 : f64, seed = 7 : i64, training} : tensor<2x8xf32>
  %1 = graph.dropout %x {ratio = 0.5 : f64} : tensor<2x8xf32>
  return %0, %1 : tensor<2x8xf32>, tensor<2x8xf32>
}

func.func @losses(%p: tensor<2x2xf32>, %t: tensor<?x2xf32>, %l: tensor<3x3xf32>, %lab: tensor<3xi64>)
    -> (tensor<f32>, tensor<f32>, tensor<3xf32>, tensor<f32>) {
  %0 = graph.mse_loss %p, %t reduction = mean : (tensor<2x2xf32>, tensor<?x2xf32>) -> tensor<f32>
  %1 = graph.mse_loss %p, %t reduction = sum : (tensor<2x2xf32>, tensor<?x2xf32>) -> tensor<f32>
  %2 = graph.cross_entropy %l, %lab reduction = none {ignore_index = -100 : i64}
      : (tensor<3x3xf32>, tensor<3xi64>) -> tensor<3xf32>
  %3 = graph.cross_entropy %l, %lab reduction = mean {ignore_index = -100 : i64}
      : (tensor<3x3xf32>, tensor<3xi64>) -> tensor<f32>
  return %0, %1, %2, %3 : tensor<f32>, tensor<f32>, tensor<3xf32>, tensor<f32>
}

func.func @arg(%a: tensor<2x?xi32>, %f: tensor<4xf32>)
    -> (tensor<2xi64>, tensor<2x1xi64>, tensor<2xi64>, tensor<2xi64>, tensor<i64>) {
  %0 = graph.arg_max %a axis = 1 : (tensor<2x?xi32>) -> tensor<2xi64>
  %1 = graph.arg_max %a axis = 1 keepdims select_last_index : (tensor<2x?xi32>) -> tensor<2x1xi64>
  %2 = graph.arg_min %a axis = 1 : (tensor<2x?xi32>) -> tensor<2xi64>
  %3 = graph.arg_min %a axis = 1 select_last_index : (tensor<2x?xi32>) -> tensor<2xi64>
  // NaN wins, as in NumPy.
  %4 = graph.arg_max %f axis = 0 : (tensor<4xf32>) -> tensor<i64>
  return %0, %1, %2, %3, %4 : tensor<2xi64>, tensor<2x1xi64>, tensor<2xi64>, tensor<2xi64>, tensor<i64>
}

func.func private @printMemrefF32(tensor<*xf32>)
func.func private @printMemrefI64(tensor<*xi64>)

func.func @main() {
  %x = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [1000.0, 1000.0, 1000.0, 1001.0]]> : tensor<2x4xf32>
  %xd = tensor.cast %x : tensor<2x4xf32> to tensor<?x4xf32>
  %sm, %lsm = call @softmax(%xd) : (tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>)
  %smu = tensor.cast %sm : tensor<?x4xf32> to tensor<*xf32>
  call @printMemrefF32(%smu) : (tensor<*xf32>) -> ()
  %lsmu = tensor.cast %lsm : tensor<?x4xf32> to tensor<*xf32>
  call @printMemrefF32(%lsmu) : (tensor<*xf32>) -> ()

  %y = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [-1.0, 0.0, 0.0, 5.0]]> : tensor<2x4xf32>
  %yd = tensor.cast %y : tensor<2x4xf32> to tensor<?x4xf32>
  %g = arith.constant dense<[1.0, 2.0, 0.5, -1.0]> : tensor<4xf32>
  %b = arith.constant dense<[0.0, 1.0, 0.0, -1.0]> : tensor<4xf32>
  %ln = call @layer_norm(%yd, %g, %b) : (tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %lnu = tensor.cast %ln : tensor<?x4xf32> to tensor<*xf32>
  call @printMemrefF32(%lnu) : (tensor<*xf32>) -> ()

  %z = arith.constant dense<[[[[0.0, 1.0], [2.0, 3.0]], [[4.0, 5.0], [6.0, 7.0]]]]> : tensor<1x2x2x2xf32>
  %s = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %bb = arith.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %m = arith.constant dense<[1.0, 4.0]> : tensor<2xf32>
  %v = arith.constant dense<[4.0, 0.25]> : tensor<2xf32>
  %bn, %gap = call @channels(%z, %s, %bb, %m, %v)
      : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x1x1xf32>)
  %bnu = tensor.cast %bn : tensor<1x2x2x2xf32> to tensor<*xf32>
  call @printMemrefF32(%bnu) : (tensor<*xf32>) -> ()
  %gapu = tensor.cast %gap : tensor<1x2x1x1xf32> to tensor<*xf32>
  call @printMemrefF32(%gapu) : (tensor<*xf32>) -> ()

  %d = arith.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
                             [9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0]]> : tensor<2x8xf32>
  %dt, %di = call @dropout(%d) : (tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>)
  %dtu = tensor.cast %dt : tensor<2x8xf32> to tensor<*xf32>
  call @printMemrefF32(%dtu) : (tensor<*xf32>) -> ()
  %diu = tensor.cast %di : tensor<2x8xf32> to tensor<*xf32>
  call @printMemrefF32(%diu) : (tensor<*xf32>) -> ()

  %p = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %t = arith.constant dense<[[0.0, 2.0], [5.0, 1.0]]> : tensor<2x2xf32>
  %td = tensor.cast %t : tensor<2x2xf32> to tensor<?x2xf32>
  %l = arith.constant dense<[[2.0, 1.0, 0.1], [0.5, 2.5, 0.3], [1.0, 1.0, 1.0]]> : tensor<3x3xf32>
  %lab = arith.constant dense<[0, 2, -100]> : tensor<3xi64>
  %mse, %sse, %ce, %cem = call @losses(%p, %td, %l, %lab)
      : (tensor<2x2xf32>, tensor<?x2xf32>, tensor<3x3xf32>, tensor<3xi64>) -> (tensor<f32>, tensor<f32>, tensor<3xf32>, tensor<f32>)
  %mseu = tensor.cast %mse : tensor<f32> to tensor<*xf32>
  call @printMemrefF32(%mseu) : (tensor<*xf32>) -> ()
  %sseu = tensor.cast %sse : tensor<f32> to tensor<*xf32>
  call @printMemrefF32(%sseu) : (tensor<*xf32>) -> ()
  %ceu = tensor.cast %ce : tensor<3xf32> to tensor<*xf32>
  call @printMemrefF32(%ceu) : (tensor<*xf32>) -> ()
  %cemu = tensor.cast %cem : tensor<f32> to tensor<*xf32>
  call @printMemrefF32(%cemu) : (tensor<*xf32>) -> ()

  %a = arith.constant dense<[[1, 3, 3, 2], [5, -1, -1, 5]]> : tensor<2x4xi32>
  %ad = tensor.cast %a : tensor<2x4xi32> to tensor<2x?xi32>
  %nan = arith.constant 0x7FC00000 : f32
  %f0 = arith.constant dense<[1.0, 7.0, 0.0, 0.0]> : tensor<4xf32>
  %c2 = arith.constant 2 : index
  %f = tensor.insert %nan into %f0[%c2] : tensor<4xf32>
  %amax, %amaxl, %amin, %aminl, %anan = call @arg(%ad, %f)
      : (tensor<2x?xi32>, tensor<4xf32>) -> (tensor<2xi64>, tensor<2x1xi64>, tensor<2xi64>, tensor<2xi64>, tensor<i64>)
  %amaxu = tensor.cast %amax : tensor<2xi64> to tensor<*xi64>
  call @printMemrefI64(%amaxu) : (tensor<*xi64>) -> ()
  %amaxlu = tensor.cast %amaxl : tensor<2x1xi64> to tensor<*xi64>
  call @printMemrefI64(%amaxlu) : (tensor<*xi64>) -> ()
  %aminu = tensor.cast %amin : tensor<2xi64> to tensor<*xi64>
  call @printMemrefI64(%aminu) : (tensor<*xi64>) -> ()
  %aminlu = tensor.cast %aminl : tensor<2xi64> to tensor<*xi64>
  call @printMemrefI64(%aminlu) : (tensor<*xi64>) -> ()
  %ananu = tensor.cast %anan : tensor<i64> to tensor<*xi64>
  call @printMemrefI64(%ananu) : (tensor<*xi64>) -> ()
  return
}

// CHECK: sizes = [2, 4]
// CHECK-NEXT: [0.0320586,   0.0871443,   0.236883,   0.643914]
// CHECK-NEXT: [0.174878,   0.174878,   0.174878,   0.475367]
// CHECK: sizes = [2, 4]
// CHECK-NEXT: [-3.44019,   -2.44019,   -1.44019,   -0.44019]
// CHECK-NEXT: [-1.74367,   -1.74367,   -1.74367,   -0.743668]
// layer_norm
// CHECK: sizes = [2, 4]
// CHECK-NEXT: [-1.34164,   0.105576,   0.223606,   -2.34164]
// CHECK-NEXT: [-0.852802,   0.147198,   -0.213201,   -2.7056]
// batch_norm, then global_avg_pool
// CHECK: sizes = [1, 2, 2, 2]
// CHECK: [0,     0.5]
// CHECK-NEXT: [1,     1.5]
// CHECK: [-0.5,     3.5]
// CHECK-NEXT: [7.5,     11.5]
// CHECK: sizes = [1, 2, 1, 1]
// CHECK: [1.5]
// CHECK: [5.5]
// dropout in training, then at inference (the identity)
// CHECK: sizes = [2, 8]
// CHECK-NEXT: [0,   0,   6,   8,   0,   0,   0,   0]
// CHECK-NEXT: [0,   0,   0,   24,   26,   28,   30,   32]
// CHECK: sizes = [2, 8]
// CHECK-NEXT: [1,   2,   3,   4,   5,   6,   7,   8]
// mse mean and sum; cross-entropy per row (the ignored row 0) and mean
// CHECK: sizes = []
// CHECK-NEXT: [3.5]
// CHECK: sizes = []
// CHECK-NEXT: [14]
// CHECK: sizes = [3]
// CHECK-NEXT: [0.41703,  2.42005,  0]
// CHECK: sizes = []
// CHECK-NEXT: [1.41854]
// arg_max, arg_max last (keepdims), arg_min, arg_min last, arg_max with NaN
// CHECK: sizes = [2]
// CHECK-NEXT: [1,  0]
// CHECK: sizes = [2, 1]
// CHECK-NEXT: [2]
// CHECK-NEXT: [3]
// CHECK: sizes = [2]
// CHECK-NEXT: [0,  1]
// CHECK: sizes = [2]
// CHECK-NEXT: [0,  2]
// CHECK: sizes = []
// CHECK-NEXT: [2]
