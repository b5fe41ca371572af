// RUN: loom-opt --loom-fake-quant --split-input-file --verify-diagnostics %s | FileCheck %s
// RUN: loom-opt --loom-fake-quant='learned-scales=true' --split-input-file --verify-diagnostics %s | FileCheck %s --check-prefix=LEARNED

// The marked products of an MLP: each weight fake-quantized per output
// column, symmetric s8 (max |w| / 127, 1 where the column is 0; a
// transposed rhs along dim 0), each activation u8 with ONNX Runtime's
// scale and zero point of its range ([-1, 3]: 4 / 255 and 64; [0, 5.1]:
// 0.02 and 0). The marks go.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32>, %[[W1:.*]]: tensor<4x6xf32> {graph.param = "w1"}, %[[W2:.*]]: tensor<3x6xf32> {graph.param = "w2"})
// CHECK: %[[A1:.*]] = graph.abs %[[W1]]
// CHECK: %[[M1:.*]] = graph.reduce_max %[[A1]] axes = [0] keepdims : (tensor<4x6xf32>) -> tensor<1x6xf32>
// CHECK: %[[D1:.*]] = graph.div %[[M1]], %{{.*}}
// CHECK: %[[S1:.*]] = graph.where %{{.*}}, %[[D1]], %{{.*}}
// CHECK: %[[Z1:.*]] = graph.fill_like %[[S1]], 0.0
// CHECK: %[[QW1:.*]] = graph.fake_quantize %[[W1]], %[[S1]], %[[Z1]] {qmax = 127 : i64, qmin = -127 : i64} : (tensor<4x6xf32>, tensor<1x6xf32>, tensor<1x6xf32>) -> tensor<4x6xf32>
// CHECK-DAG: %[[SX:.*]] = graph.constant dense<0.0156862754> : tensor<f32>
// CHECK-DAG: %[[ZX:.*]] = graph.constant dense<6.400000e+01> : tensor<f32>
// CHECK: %[[QX:.*]] = graph.fake_quantize %[[X]], %[[SX]], %[[ZX]] {qmax = 255 : i64, qmin = 0 : i64}
// CHECK: %[[H:.*]] = graph.matmul %[[QX]], %[[QW1]] :
// CHECK: %[[R:.*]] = graph.relu %[[H]]
// CHECK: graph.reduce_max %{{.*}} axes = [1] keepdims : (tensor<3x6xf32>) -> tensor<3x1xf32>
// CHECK: %[[QW2:.*]] = graph.fake_quantize %[[W2]], {{.*}} : (tensor<3x6xf32>, tensor<3x1xf32>, tensor<3x1xf32>) -> tensor<3x6xf32>
// CHECK-DAG: %[[SR:.*]] = graph.constant dense<2.000000e-02> : tensor<f32>
// CHECK-DAG: %[[ZR:.*]] = graph.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[QR:.*]] = graph.fake_quantize %[[R]], %[[SR]], %[[ZR]]
// CHECK: graph.matmul %[[QR]], %[[QW2]] {transpose_rhs}
// CHECK-NOT: loom.qat

// With learned scales each activation's scale and zero point are new
// parameters, initialized from its range, and its fake_quantize is
// `learned`; the weights' stay observed.
// LEARNED-LABEL: func.func @mlp
// LEARNED-SAME: %[[SX:[^:]*]]: tensor<1xf32> {graph.initial_value = dense<0.0156862754> : tensor<1xf32>, graph.param = "x/qat_scale"}
// LEARNED-SAME: %[[ZX:[^:]*]]: tensor<1xf32> {graph.initial_value = dense<6.400000e+01> : tensor<1xf32>, graph.param = "x/qat_zero_point"}
// LEARNED-SAME: graph.param = "r/qat_scale"
// LEARNED-SAME: graph.param = "r/qat_zero_point"
// LEARNED: graph.fake_quantize %{{.*}} {qmax = 127 : i64, qmin = -127 : i64}
// LEARNED: graph.fake_quantize %arg0, %[[SX]], %[[ZX]] {learned, qmax = 255 : i64, qmin = 0 : i64} : (tensor<8x4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<8x4xf32>
func.func @mlp(%x: tensor<8x4xf32>, %w1: tensor<4x6xf32> {graph.param = "w1"}, %w2: tensor<3x6xf32> {graph.param = "w2"}) -> tensor<8x3xf32> {
  %h = graph.matmul %x, %w1 {loom.qat = {activation = "x", min = -1.0 : f64, max = 3.0 : f64}} : (tensor<8x4xf32>, tensor<4x6xf32>) -> tensor<8x6xf32>
  %r = graph.relu %h : tensor<8x6xf32>
  %y = graph.matmul %r, %w2 {transpose_rhs, loom.qat = {activation = "r", min = 0.0 : f64, max = 5.1 : f64}} : (tensor<8x6xf32>, tensor<3x6xf32>) -> tensor<8x3xf32>
  return %y : tensor<8x3xf32>
}

// -----

// One activation read by two products is fake-quantized once; an
// unmarked product is left alone.
// CHECK-LABEL: func.func @shared
// CHECK-COUNT-1: graph.fake_quantize %arg0
// CHECK-NOT: graph.fake_quantize %arg0
// CHECK: graph.matmul %arg0, %arg3
func.func @shared(%x: tensor<2x4xf32>, %a: tensor<4x3xf32>, %b: tensor<4x5xf32>, %c: tensor<4x2xf32>) -> (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x2xf32>) {
  %p = graph.matmul %x, %a {loom.qat = {activation = "x", min = -2.0 : f64, max = 2.0 : f64}} : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %q = graph.matmul %x, %b {loom.qat = {activation = "x", min = -2.0 : f64, max = 2.0 : f64}} : (tensor<2x4xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  %r = graph.matmul %x, %c : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
  return %p, %q, %r : tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x2xf32>
}

// -----

// A convolution's filter per output channel (dim 0).
// CHECK-LABEL: func.func @conv
// CHECK: graph.reduce_max %{{.*}} axes = [1, 2, 3] keepdims : (tensor<6x2x3x3xf32>) -> tensor<6x1x1x1xf32>
// CHECK: graph.fake_quantize %arg1, {{.*}} {qmax = 127 : i64, qmin = -127 : i64}
// CHECK: graph.fake_quantize %arg0, {{.*}} {qmax = 255 : i64, qmin = 0 : i64}
// CHECK: graph.conv
func.func @conv(%x: tensor<1x2x5x5xf32>, %w: tensor<6x2x3x3xf32>) -> tensor<1x6x3x3xf32> {
  %y = graph.conv %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 {loom.qat = {activation = "x", min = 0.0 : f64, max = 1.0 : f64}} : (tensor<1x2x5x5xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x3x3xf32>
  return %y : tensor<1x6x3x3xf32>
}

// -----

func.func @bad_range(%x: tensor<2x4xf32>, %a: tensor<4x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{loom-fake-quant: the range of activation 'x' is not a finite [min, max]: [2.000000e+00, 1.000000e+00]}}
  %p = graph.matmul %x, %a {loom.qat = {activation = "x", min = 2.0 : f64, max = 1.0 : f64}} : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  return %p : tensor<2x3xf32>
}

// -----

func.func @bad_mark(%x: tensor<2x4xf32>, %a: tensor<4x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{loom-fake-quant: loom.qat must hold activation (a string), min and max (floats)}}
  %p = graph.matmul %x, %a {loom.qat = {activation = "x"}} : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  return %p : tensor<2x3xf32>
}

// -----

func.func @bad_op(%x: tensor<2x4xf32>, %a: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{loom-fake-quant: only matmul and conv can be quantized, not graph.add}}
  %p = graph.add %x, %a {loom.qat = {activation = "x", min = 0.0 : f64, max = 1.0 : f64}} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %p : tensor<2x4xf32>
}
