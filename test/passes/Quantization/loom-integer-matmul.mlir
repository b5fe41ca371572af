// RUN: loom-opt --loom-integer-matmul --split-input-file %s | FileCheck %s

// ONNX Runtime's static QDQ form: an activation quantized and dequantized
// per tensor, an s8 weight dequantized per output column with zero zero
// points (a splat: scalar). The matmul becomes the integer product, widened
// and scaled once by sa * sb[n]; the dequantized copies go.
// CHECK-LABEL: func.func @per_column
// CHECK-SAME: (%[[X:.*]]: tensor<2x5x64xui8>, %[[W:.*]]: tensor<64x24xi8>, %[[SX:.*]]: tensor<f32>, %[[ZX:.*]]: tensor<ui8>, %[[SW:.*]]: tensor<24xf32>)
// CHECK-DAG: %[[ZW:.*]] = graph.constant dense<0> : tensor<i8>
// CHECK: %[[P:.*]] = graph.matmul_integer %[[X]], %[[W]], %[[ZX]], %[[ZW]] : (tensor<2x5x64xui8>, tensor<64x24xi8>, tensor<ui8>, tensor<i8>) -> tensor<2x5x24xi32>
// CHECK: %[[F:.*]] = graph.cast %[[P]] to f32
// CHECK: %[[S:.*]] = graph.mul %[[SX]], %[[SW]]
// CHECK: %[[Y:.*]] = graph.mul %[[F]], %[[S]]
// CHECK-NOT: graph.dequantize
// CHECK-NOT: graph.matmul %
// CHECK: return %[[Y]]
func.func @per_column(%x: tensor<2x5x64xui8>, %w: tensor<64x24xi8>, %sx: tensor<f32>, %zx: tensor<ui8>, %sw: tensor<24xf32>) -> tensor<2x5x24xf32> {
  %zw = graph.constant dense<0> : tensor<24xi8>
  %xd = graph.dequantize %x, %sx, %zx : (tensor<2x5x64xui8>, tensor<f32>, tensor<ui8>) -> tensor<2x5x64xf32>
  %wd = graph.dequantize %w, %sw, %zw : (tensor<64x24xi8>, tensor<24xf32>, tensor<24xi8>) -> tensor<64x24xf32>
  %y = graph.matmul %xd, %wd : (tensor<2x5x64xf32>, tensor<64x24xf32>) -> tensor<2x5x24xf32>
  return %y : tensor<2x5x24xf32>
}

// -----

// A transposed rhs ([n, k]) scaled along its dim 0, which is n: per column.
// A dequantized operand read elsewhere too stays for that reader.
// CHECK-LABEL: func.func @transposed
// CHECK: %[[D:.*]] = graph.dequantize %arg0
// CHECK: %[[ZW:.*]] = graph.constant dense<3> : tensor<i8>
// CHECK: graph.reshape %arg3 {{.*}} -> tensor<24xf32>
// CHECK: graph.matmul_integer %arg0, %arg1, %arg2, %[[ZW]] {transpose_rhs}
// CHECK: return {{.*}}, %[[D]]
func.func @transposed(%x: tensor<10x64xi8>, %w: tensor<24x64xi8>, %z: tensor<i8>, %sw: tensor<24x1xf32>) -> (tensor<10x24xf32>, tensor<10x64xf32>) {
  %s = graph.constant dense<0.5> : tensor<f32>
  %zw = graph.constant dense<3> : tensor<24x1xi8>
  %xd = graph.dequantize %x, %s, %z : (tensor<10x64xi8>, tensor<f32>, tensor<i8>) -> tensor<10x64xf32>
  %wd = graph.dequantize %w, %sw, %zw : (tensor<24x64xi8>, tensor<24x1xf32>, tensor<24x1xi8>) -> tensor<24x64xf32>
  %y = graph.matmul %xd, %wd {transpose_rhs} : (tensor<10x64xf32>, tensor<24x64xf32>) -> tensor<10x24xf32>
  return %y, %xd : tensor<10x24xf32>, tensor<10x64xf32>
}

// -----

// What does not fit stays: a zero point that varies (per column, not a
// splat), a scale along k, an lhs that is not dequantized.
// CHECK-LABEL: func.func @stays
// CHECK-NOT: graph.matmul_integer
// CHECK-COUNT-3: graph.matmul %
func.func @stays(%x: tensor<4x8xi8>, %w: tensor<8x3xi8>, %s: tensor<f32>, %z: tensor<i8>, %zw: tensor<3xi8>, %sk: tensor<8x1xf32>, %zk: tensor<8x1xi8>, %f: tensor<4x8xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>) {
  %xd = graph.dequantize %x, %s, %z : (tensor<4x8xi8>, tensor<f32>, tensor<i8>) -> tensor<4x8xf32>
  %sw = graph.constant dense<0.1> : tensor<3xf32>
  %wd1 = graph.dequantize %w, %sw, %zw : (tensor<8x3xi8>, tensor<3xf32>, tensor<3xi8>) -> tensor<8x3xf32>
  %y1 = graph.matmul %xd, %wd1 : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %wd2 = graph.dequantize %w, %sk, %zk : (tensor<8x3xi8>, tensor<8x1xf32>, tensor<8x1xi8>) -> tensor<8x3xf32>
  %y2 = graph.matmul %xd, %wd2 : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %wd3 = graph.dequantize %w, %s, %z : (tensor<8x3xi8>, tensor<f32>, tensor<i8>) -> tensor<8x3xf32>
  %y3 = graph.matmul %f, %wd3 : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  return %y1, %y2, %y3 : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// A reshape between a per-tensor dequantize and the matmul (a Linear layer
// on flattened tokens) moves onto the integers.
// CHECK-LABEL: func.func @reshaped
// CHECK: %[[R:.*]] = graph.reshape %arg0 [10, 64] : (tensor<2x5x64xui8>) -> tensor<10x64xui8>
// CHECK: graph.matmul_integer %[[R]], %arg1
// CHECK-NOT: graph.dequantize
func.func @reshaped(%x: tensor<2x5x64xui8>, %w: tensor<64x24xi8>, %s: tensor<f32>, %z: tensor<ui8>, %zw: tensor<i8>) -> tensor<10x24xf32> {
  %xd = graph.dequantize %x, %s, %z : (tensor<2x5x64xui8>, tensor<f32>, tensor<ui8>) -> tensor<2x5x64xf32>
  %x2 = graph.reshape %xd [10, 64] : (tensor<2x5x64xf32>) -> tensor<10x64xf32>
  %wd = graph.dequantize %w, %s, %zw : (tensor<64x24xi8>, tensor<f32>, tensor<i8>) -> tensor<64x24xf32>
  %y = graph.matmul %x2, %wd : (tensor<10x64xf32>, tensor<64x24xf32>) -> tensor<10x24xf32>
  return %y : tensor<10x24xf32>
}

// weights-nk (the CUDA target): a constant 8-bit K x N rhs becomes its
// N x K transpose read with transpose_rhs, one copy for all its products;
// a rhs already N x K, or one that is not a constant, stays.
// RUN: loom-opt --pass-pipeline='builtin.module(func.func(loom-integer-matmul{weights-nk=1}))' %s | FileCheck %s --check-prefix=NK
// NK-LABEL: func.func @weights_nk
// NK: %[[W:.*]] = graph.constant dense<{{\[}}[1, 4], [2, 5], [3, 6]]> : tensor<3x2xi8>
// NK-NOT: graph.constant dense<{{\[}}[1, 2, 3]
// NK: graph.matmul_integer %arg0, %[[W]], %{{.*}}, %{{.*}} {transpose_rhs}
// NK: graph.matmul_integer %arg1, %[[W]], %{{.*}}, %{{.*}} {transpose_rhs}
// NK: graph.matmul_integer %arg0, %arg2, %{{.*}}, %{{.*}} :
func.func @weights_nk(%a: tensor<4x2xi8>, %b: tensor<5x2xi8>, %c: tensor<2x3xi8>) -> (tensor<4x3xi32>, tensor<5x3xi32>, tensor<4x3xi32>) {
  %w = graph.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi8>
  %z = graph.constant dense<0> : tensor<i8>
  %0 = graph.matmul_integer %a, %w, %z, %z : (tensor<4x2xi8>, tensor<2x3xi8>, tensor<i8>, tensor<i8>) -> tensor<4x3xi32>
  %1 = graph.matmul_integer %b, %w, %z, %z : (tensor<5x2xi8>, tensor<2x3xi8>, tensor<i8>, tensor<i8>) -> tensor<5x3xi32>
  %2 = graph.matmul_integer %a, %c, %z, %z : (tensor<4x2xi8>, tensor<2x3xi8>, tensor<i8>, tensor<i8>) -> tensor<4x3xi32>
  return %0, %1, %2 : tensor<4x3xi32>, tensor<5x3xi32>, tensor<4x3xi32>
}
