// RUN: loom-opt %s | loom-opt | FileCheck %s
// RUN: loom-opt %s --mlir-print-op-generic | loom-opt | FileCheck %s

// Round-trip of every graph op in its custom assembly format. The second RUN
// line goes through the generic form first, so the checks also cover what the
// custom printer makes of attributes the generic form spells out (default
// values, unit attributes).

//===----------------------------------------------------------------------===//
// Constants and generators
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @constant
func.func @constant() -> (tensor<2xf32>, tensor<2x2xi64>, tensor<i1>, tensor<3xf16>) {
  // CHECK: graph.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
  %0 = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  // CHECK: graph.constant dense<{{\[}}[1, 2], [3, 4]]> : tensor<2x2xi64>
  %1 = graph.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>
  // CHECK: graph.constant dense<true> : tensor<i1>
  %2 = graph.constant dense<true> : tensor<i1>
  // CHECK: graph.constant dense<0.000000e+00> : tensor<3xf16>
  %3 = graph.constant dense<0.0> : tensor<3xf16>
  return %0, %1, %2, %3 : tensor<2xf32>, tensor<2x2xi64>, tensor<i1>, tensor<3xf16>
}

// CHECK-LABEL: func.func @iota
func.func @iota() -> (tensor<1x16xi64>, tensor<8xf32>, tensor<2x3x4xi32>) {
  // CHECK: graph.iota [1, 16] axis = 1 : i64
  %0 = graph.iota [1, 16] axis = 1 : i64
  // CHECK: graph.iota [8] axis = 0 : f32
  %1 = graph.iota [8] axis = 0 : f32
  // CHECK: graph.iota [2, 3, 4] axis = 2 : i32
  %2 = graph.iota [2, 3, 4] axis = 2 : i32
  return %0, %1, %2 : tensor<1x16xi64>, tensor<8xf32>, tensor<2x3x4xi32>
}

//===----------------------------------------------------------------------===//
// Elementwise unary ops
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @unary_numeric
// CHECK-SAME: (%[[X:.*]]: tensor<4x?xf32>, %[[I:.*]]: tensor<?xi32>)
func.func @unary_numeric(%x: tensor<4x?xf32>, %i: tensor<?xi32>)
    -> (tensor<4x?xf32>, tensor<?xi32>, tensor<4x?xf32>, tensor<?xi32>, tensor<4x?xf32>, tensor<?xi32>) {
  // CHECK: graph.neg %[[X]] : tensor<4x?xf32>
  %0 = graph.neg %x : tensor<4x?xf32>
  // CHECK: graph.neg %[[I]] : tensor<?xi32>
  %1 = graph.neg %i : tensor<?xi32>
  // CHECK: graph.abs %[[X]] : tensor<4x?xf32>
  %2 = graph.abs %x : tensor<4x?xf32>
  // CHECK: graph.abs %[[I]] : tensor<?xi32>
  %3 = graph.abs %i : tensor<?xi32>
  // CHECK: graph.relu %[[X]] : tensor<4x?xf32>
  %4 = graph.relu %x : tensor<4x?xf32>
  // CHECK: graph.relu %[[I]] : tensor<?xi32>
  %5 = graph.relu %i : tensor<?xi32>
  return %0, %1, %2, %3, %4, %5 : tensor<4x?xf32>, tensor<?xi32>, tensor<4x?xf32>, tensor<?xi32>, tensor<4x?xf32>, tensor<?xi32>
}

// CHECK-LABEL: func.func @unary_float
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[H:.*]]: tensor<?xbf16>, %[[D:.*]]: tensor<f64>, %[[F:.*]]: tensor<8xf16>)
func.func @unary_float(%x: tensor<2x3xf32>, %h: tensor<?xbf16>, %d: tensor<f64>, %f: tensor<8xf16>)
    -> (tensor<2x3xf32>, tensor<?xbf16>, tensor<f64>, tensor<8xf16>, tensor<2x3xf32>, tensor<?xbf16>, tensor<f64>, tensor<8xf16>) {
  // CHECK: graph.exp %[[X]] : tensor<2x3xf32>
  %0 = graph.exp %x : tensor<2x3xf32>
  // CHECK: graph.log %[[H]] : tensor<?xbf16>
  %1 = graph.log %h : tensor<?xbf16>
  // CHECK: graph.sqrt %[[D]] : tensor<f64>
  %2 = graph.sqrt %d : tensor<f64>
  // CHECK: graph.rsqrt %[[F]] : tensor<8xf16>
  %3 = graph.rsqrt %f : tensor<8xf16>
  // CHECK: graph.tanh %[[X]] : tensor<2x3xf32>
  %4 = graph.tanh %x : tensor<2x3xf32>
  // CHECK: graph.sigmoid %[[H]] : tensor<?xbf16>
  %5 = graph.sigmoid %h : tensor<?xbf16>
  // CHECK: graph.erf %[[D]] : tensor<f64>
  %6 = graph.erf %d : tensor<f64>
  // CHECK: graph.exp %[[F]] : tensor<8xf16>
  %7 = graph.exp %f : tensor<8xf16>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<2x3xf32>, tensor<?xbf16>, tensor<f64>, tensor<8xf16>, tensor<2x3xf32>, tensor<?xbf16>, tensor<f64>, tensor<8xf16>
}

// The default approximation (none) is not printed; tanh is.
// CHECK-LABEL: func.func @gelu
// CHECK-SAME: (%[[X:.*]]: tensor<2x?xf32>)
func.func @gelu(%x: tensor<2x?xf32>) -> (tensor<2x?xf32>, tensor<2x?xf32>, tensor<2x?xf32>) {
  // CHECK: graph.gelu %[[X]] : tensor<2x?xf32>
  %0 = graph.gelu %x : tensor<2x?xf32>
  // CHECK: graph.gelu %[[X]] : tensor<2x?xf32>
  %1 = graph.gelu %x approximate = none : tensor<2x?xf32>
  // CHECK: graph.gelu %[[X]] approximate = tanh : tensor<2x?xf32>
  %2 = graph.gelu %x approximate = tanh : tensor<2x?xf32>
  return %0, %1, %2 : tensor<2x?xf32>, tensor<2x?xf32>, tensor<2x?xf32>
}

// Either bound alone, or both.
// CHECK-LABEL: func.func @clamp
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[I:.*]]: tensor<?xi8>)
func.func @clamp(%x: tensor<4xf32>, %i: tensor<?xi8>) -> (tensor<4xf32>, tensor<4xf32>, tensor<?xi8>) {
  // CHECK: graph.clamp %[[X]] {max = 6.000000e+00 : f64, min = 0.000000e+00 : f64} : tensor<4xf32>
  %0 = graph.clamp %x {min = 0.0 : f64, max = 6.0 : f64} : tensor<4xf32>
  // CHECK: graph.clamp %[[X]] {min = -1.000000e+00 : f64} : tensor<4xf32>
  %1 = graph.clamp %x {min = -1.0 : f64} : tensor<4xf32>
  // CHECK: graph.clamp %[[I]] {max = 1.270000e+02 : f64} : tensor<?xi8>
  %2 = graph.clamp %i {max = 127.0 : f64} : tensor<?xi8>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<?xi8>
}

// The default seed (0) is not printed; `training` is a unit attribute.
// CHECK-LABEL: func.func @dropout
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
func.func @dropout(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK: graph.dropout %[[X]] {ratio = 1.000000e-01 : f64, seed = 7 : i64, training} : tensor<4x8xf32>
  %0 = graph.dropout %x {ratio = 0.1 : f64, seed = 7 : i64, training} : tensor<4x8xf32>
  // CHECK: graph.dropout %[[X]] {ratio = 5.000000e-01 : f64, training} : tensor<4x8xf32>
  %1 = graph.dropout %x {ratio = 0.5 : f64, seed = 0 : i64, training} : tensor<4x8xf32>
  // CHECK: graph.dropout %[[X]] {ratio = 1.000000e-01 : f64} : tensor<4x8xf32>
  %2 = graph.dropout %x {ratio = 0.1 : f64} : tensor<4x8xf32>
  return %0, %1, %2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// Tensor parallelism's marker: the identity, its gradient summed over the
// mesh axes.
// CHECK-LABEL: func.func @grad_all_reduce
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
mesh.mesh @mesh(shape = 2)
func.func @grad_all_reduce(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: graph.grad_all_reduce %[[X]] on @mesh axes = [0] : tensor<4x8xf32>
  %0 = graph.grad_all_reduce %x on @mesh axes = [0] : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// The result type is inferred: the operand's shape with the `to` element type.
// CHECK-LABEL: func.func @cast
// CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32>, %[[B:.*]]: tensor<3xi1>)
func.func @cast(%x: tensor<?x4xf32>, %b: tensor<3xi1>) -> (tensor<?x4xf16>, tensor<?x4xi64>, tensor<3xf32>, tensor<?x4xi1>) {
  // CHECK: %[[R0:.*]] = graph.cast %[[X]] to f16 : tensor<?x4xf32>
  %0 = graph.cast %x to f16 : tensor<?x4xf32>
  // CHECK: %[[R1:.*]] = graph.cast %[[X]] to i64 : tensor<?x4xf32>
  %1 = graph.cast %x to i64 : tensor<?x4xf32>
  // CHECK: %[[R2:.*]] = graph.cast %[[B]] to f32 : tensor<3xi1>
  %2 = graph.cast %b to f32 : tensor<3xi1>
  // CHECK: %[[R3:.*]] = graph.cast %[[X]] to i1 : tensor<?x4xf32>
  %3 = graph.cast %x to i1 : tensor<?x4xf32>
  // CHECK: return %[[R0]], %[[R1]], %[[R2]], %[[R3]] : tensor<?x4xf16>, tensor<?x4xi64>, tensor<3xf32>, tensor<?x4xi1>
  return %0, %1, %2, %3 : tensor<?x4xf16>, tensor<?x4xi64>, tensor<3xf32>, tensor<?x4xi1>
}

// Quantization: the result takes the zero point's integer type (quantize)
// or the scale's float type (dequantize); a per-channel scale varies along
// one dim.
// CHECK-LABEL: func.func @quantize_roundtrip
func.func @quantize_roundtrip(%x: tensor<2x3xf32>, %s: tensor<1x3xf32>, %z: tensor<1x3xui8>) -> tensor<2x3xf32> {
  // CHECK: graph.quantize %{{.*}} : (tensor<2x3xf32>, tensor<1x3xf32>, tensor<1x3xui8>) -> tensor<2x3xui8>
  %q = graph.quantize %x, %s, %z : (tensor<2x3xf32>, tensor<1x3xf32>, tensor<1x3xui8>) -> tensor<2x3xui8>
  // CHECK: graph.dequantize %{{.*}} : (tensor<2x3xui8>, tensor<1x3xf32>, tensor<1x3xui8>) -> tensor<2x3xf32>
  %d = graph.dequantize %q, %s, %z : (tensor<2x3xui8>, tensor<1x3xf32>, tensor<1x3xui8>) -> tensor<2x3xf32>
  return %d : tensor<2x3xf32>
}

// An integer matmul: 8-bit operands of either signedness, scalar zero
// points of their types, an i32 result with matmul's shapes.
// CHECK-LABEL: func.func @matmul_integer_roundtrip
func.func @matmul_integer_roundtrip(%a: tensor<2x4x8xui8>, %b: tensor<16x8xi8>, %za: tensor<ui8>, %zb: tensor<i8>) -> tensor<2x4x16xi32> {
  // CHECK: graph.matmul_integer %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<2x4x8xui8>, tensor<16x8xi8>, tensor<ui8>, tensor<i8>) -> tensor<2x4x16xi32>
  %y = graph.matmul_integer %a, %b, %za, %zb {transpose_rhs} : (tensor<2x4x8xui8>, tensor<16x8xi8>, tensor<ui8>, tensor<i8>) -> tensor<2x4x16xi32>
  return %y : tensor<2x4x16xi32>
}

// An integer convolution: 8-bit operands, scalar zero points, an i32
// result with conv's shapes (grouped here).
// CHECK-LABEL: func.func @conv_integer_roundtrip
func.func @conv_integer_roundtrip(%x: tensor<1x4x8x8xui8>, %w: tensor<6x2x3x3xi8>, %zx: tensor<ui8>, %zw: tensor<i8>) -> tensor<1x6x4x8xi32> {
  // CHECK: graph.conv_integer %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} strides = [2, 1] padding = [1, 1, 0, 1] dilations = [1, 1] groups = 2 : (tensor<1x4x8x8xui8>, tensor<6x2x3x3xi8>, tensor<ui8>, tensor<i8>) -> tensor<1x6x4x8xi32>
  %y = graph.conv_integer %x, %w, %zx, %zw strides = [2, 1] padding = [1, 1, 0, 1] dilations = [1, 1] groups = 2 : (tensor<1x4x8x8xui8>, tensor<6x2x3x3xi8>, tensor<ui8>, tensor<i8>) -> tensor<1x6x4x8xi32>
  return %y : tensor<1x6x4x8xi32>
}

//===----------------------------------------------------------------------===//
// Elementwise binary and ternary ops
//===----------------------------------------------------------------------===//

// Same shapes, and broadcasting of a lower-rank operand or a size-1 dim.
// CHECK-LABEL: func.func @binary
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<3xf32>, %[[C:.*]]: tensor<2x1xf32>, %[[S:.*]]: tensor<f32>)
func.func @binary(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<2x1xf32>, %s: tensor<f32>)
    -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  // CHECK: graph.add %[[A]], %[[B]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %0 = graph.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: graph.sub %[[A]], %[[C]] : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  %1 = graph.sub %a, %c : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  // CHECK: graph.mul %[[A]], %[[S]] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %2 = graph.mul %a, %s : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  // CHECK: graph.div %[[S]], %[[A]] : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = graph.div %s, %a : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: graph.pow %[[A]], %[[A]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = graph.pow %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: graph.max %[[C]], %[[B]] : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %5 = graph.max %c, %b : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: graph.min %[[B]], %[[C]] : (tensor<3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  %6 = graph.min %b, %c : (tensor<3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// Dynamic dims: `?` against 1 stays dynamic, `?` against a static size takes
// that size, `?` against `?` stays dynamic.
// CHECK-LABEL: func.func @binary_dynamic
// CHECK-SAME: (%[[A:.*]]: tensor<?x1xi32>, %[[B:.*]]: tensor<1x5xi32>, %[[C:.*]]: tensor<?x?xi64>, %[[D:.*]]: tensor<3x?xi64>, %[[E:.*]]: tensor<?x?xi64>)
func.func @binary_dynamic(%a: tensor<?x1xi32>, %b: tensor<1x5xi32>, %c: tensor<?x?xi64>, %d: tensor<3x?xi64>, %e: tensor<?x?xi64>)
    -> (tensor<?x5xi32>, tensor<3x?xi64>, tensor<?x?xi64>, tensor<?x5xi32>) {
  // CHECK: graph.add %[[A]], %[[B]] : (tensor<?x1xi32>, tensor<1x5xi32>) -> tensor<?x5xi32>
  %0 = graph.add %a, %b : (tensor<?x1xi32>, tensor<1x5xi32>) -> tensor<?x5xi32>
  // CHECK: graph.mul %[[C]], %[[D]] : (tensor<?x?xi64>, tensor<3x?xi64>) -> tensor<3x?xi64>
  %1 = graph.mul %c, %d : (tensor<?x?xi64>, tensor<3x?xi64>) -> tensor<3x?xi64>
  // CHECK: graph.sub %[[C]], %[[E]] : (tensor<?x?xi64>, tensor<?x?xi64>) -> tensor<?x?xi64>
  %2 = graph.sub %c, %e : (tensor<?x?xi64>, tensor<?x?xi64>) -> tensor<?x?xi64>
  // CHECK: graph.div %[[B]], %[[A]] : (tensor<1x5xi32>, tensor<?x1xi32>) -> tensor<?x5xi32>
  %3 = graph.div %b, %a : (tensor<1x5xi32>, tensor<?x1xi32>) -> tensor<?x5xi32>
  return %0, %1, %2, %3 : tensor<?x5xi32>, tensor<3x?xi64>, tensor<?x?xi64>, tensor<?x5xi32>
}

// The result is i1 whatever the operand element type.
// CHECK-LABEL: func.func @compare
// CHECK-SAME: (%[[A:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<f32>, %[[I:.*]]: tensor<?x4xi64>, %[[J:.*]]: tensor<4xi64>, %[[P:.*]]: tensor<2xi1>)
func.func @compare(%a: tensor<4xf32>, %b: tensor<f32>, %i: tensor<?x4xi64>, %j: tensor<4xi64>, %p: tensor<2xi1>)
    -> (tensor<4xi1>, tensor<4xi1>, tensor<?x4xi1>, tensor<?x4xi1>, tensor<?x4xi1>, tensor<?x4xi1>, tensor<2xi1>) {
  // CHECK: graph.compare eq, %[[A]], %[[B]] : (tensor<4xf32>, tensor<f32>) -> tensor<4xi1>
  %0 = graph.compare eq, %a, %b : (tensor<4xf32>, tensor<f32>) -> tensor<4xi1>
  // CHECK: graph.compare ne, %[[B]], %[[A]] : (tensor<f32>, tensor<4xf32>) -> tensor<4xi1>
  %1 = graph.compare ne, %b, %a : (tensor<f32>, tensor<4xf32>) -> tensor<4xi1>
  // CHECK: graph.compare lt, %[[I]], %[[J]] : (tensor<?x4xi64>, tensor<4xi64>) -> tensor<?x4xi1>
  %2 = graph.compare lt, %i, %j : (tensor<?x4xi64>, tensor<4xi64>) -> tensor<?x4xi1>
  // CHECK: graph.compare le, %[[I]], %[[J]] : (tensor<?x4xi64>, tensor<4xi64>) -> tensor<?x4xi1>
  %3 = graph.compare le, %i, %j : (tensor<?x4xi64>, tensor<4xi64>) -> tensor<?x4xi1>
  // CHECK: graph.compare gt, %[[I]], %[[J]] : (tensor<?x4xi64>, tensor<4xi64>) -> tensor<?x4xi1>
  %4 = graph.compare gt, %i, %j : (tensor<?x4xi64>, tensor<4xi64>) -> tensor<?x4xi1>
  // CHECK: graph.compare ge, %[[J]], %[[I]] : (tensor<4xi64>, tensor<?x4xi64>) -> tensor<?x4xi1>
  %5 = graph.compare ge, %j, %i : (tensor<4xi64>, tensor<?x4xi64>) -> tensor<?x4xi1>
  // CHECK: graph.compare eq, %[[P]], %[[P]] : (tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
  %6 = graph.compare eq, %p, %p : (tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<4xi1>, tensor<4xi1>, tensor<?x4xi1>, tensor<?x4xi1>, tensor<?x4xi1>, tensor<?x4xi1>, tensor<2xi1>
}

// All three operands broadcast together; the element type is the branches'.
// CHECK-LABEL: func.func @where
// CHECK-SAME: (%[[M:.*]]: tensor<4x4xi1>, %[[A:.*]]: tensor<4x4xf32>, %[[B:.*]]: tensor<f32>, %[[N:.*]]: tensor<?x1xi1>, %[[X:.*]]: tensor<1x8xi64>, %[[Y:.*]]: tensor<8xi64>)
func.func @where(%m: tensor<4x4xi1>, %a: tensor<4x4xf32>, %b: tensor<f32>, %n: tensor<?x1xi1>, %x: tensor<1x8xi64>, %y: tensor<8xi64>)
    -> (tensor<4x4xf32>, tensor<?x8xi64>) {
  // CHECK: graph.where %[[M]], %[[A]], %[[B]] : (tensor<4x4xi1>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  %0 = graph.where %m, %a, %b : (tensor<4x4xi1>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  // CHECK: graph.where %[[N]], %[[X]], %[[Y]] : (tensor<?x1xi1>, tensor<1x8xi64>, tensor<8xi64>) -> tensor<?x8xi64>
  %1 = graph.where %n, %x, %y : (tensor<?x1xi1>, tensor<1x8xi64>, tensor<8xi64>) -> tensor<?x8xi64>
  return %0, %1 : tensor<4x4xf32>, tensor<?x8xi64>
}

//===----------------------------------------------------------------------===//
// Linear algebra, convolution, pooling
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[A:.*]]: tensor<8x16x64xf32>, %[[B:.*]]: tensor<32x64xf32>, %[[C:.*]]: tensor<64x32xf32>, %[[D:.*]]: tensor<64x16xf32>)
func.func @matmul(%a: tensor<8x16x64xf32>, %b: tensor<32x64xf32>, %c: tensor<64x32xf32>, %d: tensor<64x16xf32>)
    -> (tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x64x64xf32>, tensor<16x32xf32>) {
  // CHECK: graph.matmul %[[A]], %[[C]] : (tensor<8x16x64xf32>, tensor<64x32xf32>) -> tensor<8x16x32xf32>
  %0 = graph.matmul %a, %c : (tensor<8x16x64xf32>, tensor<64x32xf32>) -> tensor<8x16x32xf32>
  // CHECK: graph.matmul %[[A]], %[[B]] {transpose_rhs} : (tensor<8x16x64xf32>, tensor<32x64xf32>) -> tensor<8x16x32xf32>
  %1 = graph.matmul %a, %b {transpose_rhs} : (tensor<8x16x64xf32>, tensor<32x64xf32>) -> tensor<8x16x32xf32>
  // CHECK: graph.matmul %[[A]], %[[A]] {transpose_lhs} : (tensor<8x16x64xf32>, tensor<8x16x64xf32>) -> tensor<8x64x64xf32>
  %2 = graph.matmul %a, %a {transpose_lhs} : (tensor<8x16x64xf32>, tensor<8x16x64xf32>) -> tensor<8x64x64xf32>
  // CHECK: graph.matmul %[[D]], %[[B]] {transpose_lhs, transpose_rhs} : (tensor<64x16xf32>, tensor<32x64xf32>) -> tensor<16x32xf32>
  %3 = graph.matmul %d, %b {transpose_lhs, transpose_rhs} : (tensor<64x16xf32>, tensor<32x64xf32>) -> tensor<16x32xf32>
  return %0, %1, %2, %3 : tensor<8x16x32xf32>, tensor<8x16x32xf32>, tensor<8x64x64xf32>, tensor<16x32xf32>
}

// Vector operands lose their added dim; batch dims broadcast; dynamic dims.
// CHECK-LABEL: func.func @matmul_shapes
// CHECK-SAME: (%[[V:.*]]: tensor<4xf32>, %[[M:.*]]: tensor<4x3xf32>, %[[N:.*]]: tensor<3x4xf32>, %[[P:.*]]: tensor<?x1x5x4xi32>, %[[Q:.*]]: tensor<7x4x?xi32>)
func.func @matmul_shapes(%v: tensor<4xf32>, %m: tensor<4x3xf32>, %n: tensor<3x4xf32>, %p: tensor<?x1x5x4xi32>, %q: tensor<7x4x?xi32>)
    -> (tensor<f32>, tensor<3xf32>, tensor<3xf32>, tensor<?x7x5x?xi32>) {
  // CHECK: graph.matmul %[[V]], %[[V]] : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  %0 = graph.matmul %v, %v : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  // CHECK: graph.matmul %[[V]], %[[M]] : (tensor<4xf32>, tensor<4x3xf32>) -> tensor<3xf32>
  %1 = graph.matmul %v, %m : (tensor<4xf32>, tensor<4x3xf32>) -> tensor<3xf32>
  // CHECK: graph.matmul %[[N]], %[[V]] : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
  %2 = graph.matmul %n, %v : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
  // CHECK: graph.matmul %[[P]], %[[Q]] : (tensor<?x1x5x4xi32>, tensor<7x4x?xi32>) -> tensor<?x7x5x?xi32>
  %3 = graph.matmul %p, %q : (tensor<?x1x5x4xi32>, tensor<7x4x?xi32>) -> tensor<?x7x5x?xi32>
  return %0, %1, %2, %3 : tensor<f32>, tensor<3xf32>, tensor<3xf32>, tensor<?x7x5x?xi32>
}

// With and without the optional bias; 2-D, 1-D, grouped, strided, dilated.
// CHECK-LABEL: func.func @conv
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x32x32xf32>, %[[W:.*]]: tensor<16x3x3x3xf32>, %[[B:.*]]: tensor<16xf32>, %[[X1:.*]]: tensor<?x8x10xf32>, %[[W1:.*]]: tensor<4x2x3xf32>, %[[XD:.*]]: tensor<2x4x?x9xf32>)
func.func @conv(%x: tensor<1x3x32x32xf32>, %w: tensor<16x3x3x3xf32>, %b: tensor<16xf32>,
                %x1: tensor<?x8x10xf32>, %w1: tensor<4x2x3xf32>, %xd: tensor<2x4x?x9xf32>)
    -> (tensor<1x16x32x32xf32>, tensor<1x16x15x15xf32>, tensor<?x4x8xf32>, tensor<?x4x4xf32>, tensor<2x16x?x5xf32>) {
  // CHECK: graph.conv %[[X]], %[[W]], %[[B]] strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1 : (tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<1x16x32x32xf32>
  %0 = graph.conv %x, %w, %b strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1
      : (tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<1x16x32x32xf32>
  // CHECK: graph.conv %[[X]], %[[W]] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x15x15xf32>
  %1 = graph.conv %x, %w strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x15x15xf32>
  // CHECK: graph.conv %[[X1]], %[[W1]] strides = [1] padding = [0, 0] dilations = [1] groups = 4 : (tensor<?x8x10xf32>, tensor<4x2x3xf32>) -> tensor<?x4x8xf32>
  %2 = graph.conv %x1, %w1 strides = [1] padding = [0, 0] dilations = [1] groups = 4
      : (tensor<?x8x10xf32>, tensor<4x2x3xf32>) -> tensor<?x4x8xf32>
  // CHECK: graph.conv %[[X1]], %[[W1]] strides = [2] padding = [1, 0] dilations = [2] groups = 4 : (tensor<?x8x10xf32>, tensor<4x2x3xf32>) -> tensor<?x4x4xf32>
  %3 = graph.conv %x1, %w1 strides = [2] padding = [1, 0] dilations = [2] groups = 4
      : (tensor<?x8x10xf32>, tensor<4x2x3xf32>) -> tensor<?x4x4xf32>
  %w2 = graph.constant dense<1.0> : tensor<16x4x3x5xf32>
  // CHECK: graph.conv %[[XD]], %{{.*}} strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<2x4x?x9xf32>, tensor<16x4x3x5xf32>) -> tensor<2x16x?x5xf32>
  %4 = graph.conv %xd, %w2 strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<2x4x?x9xf32>, tensor<16x4x3x5xf32>) -> tensor<2x16x?x5xf32>
  return %0, %1, %2, %3, %4 : tensor<1x16x32x32xf32>, tensor<1x16x15x15xf32>, tensor<?x4x8xf32>, tensor<?x4x4xf32>, tensor<2x16x?x5xf32>
}

// ceil_mode rounds the output size up.
// CHECK-LABEL: func.func @max_pool
// CHECK-SAME: (%[[X:.*]]: tensor<1x16x32x32xf32>, %[[Y:.*]]: tensor<?x4x7xi32>)
func.func @max_pool(%x: tensor<1x16x32x32xf32>, %y: tensor<?x4x7xi32>)
    -> (tensor<1x16x16x16xf32>, tensor<?x4x3xi32>, tensor<?x4x4xi32>, tensor<1x16x30x30xf32>) {
  // CHECK: graph.max_pool %[[X]] kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1] : (tensor<1x16x32x32xf32>) -> tensor<1x16x16x16xf32>
  %0 = graph.max_pool %x kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1]
      : (tensor<1x16x32x32xf32>) -> tensor<1x16x16x16xf32>
  // CHECK: graph.max_pool %[[Y]] kernel = [2] strides = [2] padding = [0, 0] dilations = [1] : (tensor<?x4x7xi32>) -> tensor<?x4x3xi32>
  %1 = graph.max_pool %y kernel = [2] strides = [2] padding = [0, 0] dilations = [1]
      : (tensor<?x4x7xi32>) -> tensor<?x4x3xi32>
  // CHECK: graph.max_pool %[[Y]] kernel = [2] strides = [2] padding = [0, 0] dilations = [1] ceil_mode : (tensor<?x4x7xi32>) -> tensor<?x4x4xi32>
  %2 = graph.max_pool %y kernel = [2] strides = [2] padding = [0, 0] dilations = [1] ceil_mode
      : (tensor<?x4x7xi32>) -> tensor<?x4x4xi32>
  // CHECK: graph.max_pool %[[X]] kernel = [2, 2] strides = [1, 1] padding = [0, 0, 0, 0] dilations = [2, 2] : (tensor<1x16x32x32xf32>) -> tensor<1x16x30x30xf32>
  %3 = graph.max_pool %x kernel = [2, 2] strides = [1, 1] padding = [0, 0, 0, 0] dilations = [2, 2]
      : (tensor<1x16x32x32xf32>) -> tensor<1x16x30x30xf32>
  return %0, %1, %2, %3 : tensor<1x16x16x16xf32>, tensor<?x4x3xi32>, tensor<?x4x4xi32>, tensor<1x16x30x30xf32>
}

// 3-D pooling; a pad may reach kernel - 1 (every window keeps a real
// element).
// CHECK-LABEL: func.func @pool_3d
func.func @pool_3d(%x: tensor<1x3x8x8x8xf32>) -> (tensor<1x3x4x4x4xf32>, tensor<1x3x10x10x10xf32>) {
  // CHECK: graph.max_pool %{{.*}} kernel = [2, 2, 2] strides = [2, 2, 2] padding = [0, 0, 0, 0, 0, 0] dilations = [1, 1, 1] : (tensor<1x3x8x8x8xf32>) -> tensor<1x3x4x4x4xf32>
  %0 = graph.max_pool %x kernel = [2, 2, 2] strides = [2, 2, 2] padding = [0, 0, 0, 0, 0, 0] dilations = [1, 1, 1]
      : (tensor<1x3x8x8x8xf32>) -> tensor<1x3x4x4x4xf32>
  // CHECK: graph.avg_pool %{{.*}} kernel = [3, 3, 3] strides = [1, 1, 1] padding = [2, 2, 2, 2, 2, 2] : (tensor<1x3x8x8x8xf32>) -> tensor<1x3x10x10x10xf32>
  %1 = graph.avg_pool %x kernel = [3, 3, 3] strides = [1, 1, 1] padding = [2, 2, 2, 2, 2, 2]
      : (tensor<1x3x8x8x8xf32>) -> tensor<1x3x10x10x10xf32>
  return %0, %1 : tensor<1x3x4x4x4xf32>, tensor<1x3x10x10x10xf32>
}

// CHECK-LABEL: func.func @avg_pool
// CHECK-SAME: (%[[X:.*]]: tensor<1x16x8x8xf32>, %[[Y:.*]]: tensor<2x3x?xf16>)
func.func @avg_pool(%x: tensor<1x16x8x8xf32>, %y: tensor<2x3x?xf16>)
    -> (tensor<1x16x8x8xf32>, tensor<1x16x4x4xf32>, tensor<1x16x3x3xf32>, tensor<1x16x4x4xf32>, tensor<2x3x?xf16>) {
  // CHECK: graph.avg_pool %[[X]] kernel = [3, 3] strides = [1, 1] padding = [1, 1, 1, 1] count_include_pad : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %0 = graph.avg_pool %x kernel = [3, 3] strides = [1, 1] padding = [1, 1, 1, 1] count_include_pad
      : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  // CHECK: graph.avg_pool %[[X]] kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] : (tensor<1x16x8x8xf32>) -> tensor<1x16x4x4xf32>
  %1 = graph.avg_pool %x kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0]
      : (tensor<1x16x8x8xf32>) -> tensor<1x16x4x4xf32>
  // CHECK: graph.avg_pool %[[X]] kernel = [3, 3] strides = [3, 3] padding = [0, 0, 0, 0] ceil_mode : (tensor<1x16x8x8xf32>) -> tensor<1x16x3x3xf32>
  %2 = graph.avg_pool %x kernel = [3, 3] strides = [3, 3] padding = [0, 0, 0, 0] ceil_mode
      : (tensor<1x16x8x8xf32>) -> tensor<1x16x3x3xf32>
  // CHECK: graph.avg_pool %[[X]] kernel = [3, 3] strides = [2, 2] padding = [1, 1, 0, 0] ceil_mode count_include_pad : (tensor<1x16x8x8xf32>) -> tensor<1x16x4x4xf32>
  %3 = graph.avg_pool %x kernel = [3, 3] strides = [2, 2] padding = [1, 1, 0, 0] ceil_mode count_include_pad
      : (tensor<1x16x8x8xf32>) -> tensor<1x16x4x4xf32>
  // CHECK: graph.avg_pool %[[Y]] kernel = [3] strides = [1] padding = [1, 1] : (tensor<2x3x?xf16>) -> tensor<2x3x?xf16>
  %4 = graph.avg_pool %y kernel = [3] strides = [1] padding = [1, 1]
      : (tensor<2x3x?xf16>) -> tensor<2x3x?xf16>
  return %0, %1, %2, %3, %4 : tensor<1x16x8x8xf32>, tensor<1x16x4x4xf32>, tensor<1x16x3x3xf32>, tensor<1x16x4x4xf32>, tensor<2x3x?xf16>
}

// CHECK-LABEL: func.func @global_avg_pool
// CHECK-SAME: (%[[X:.*]]: tensor<1x512x7x7xf32>, %[[Y:.*]]: tensor<?x8x?xbf16>)
func.func @global_avg_pool(%x: tensor<1x512x7x7xf32>, %y: tensor<?x8x?xbf16>) -> (tensor<1x512x1x1xf32>, tensor<?x8x1xbf16>) {
  // CHECK: graph.global_avg_pool %[[X]] : (tensor<1x512x7x7xf32>) -> tensor<1x512x1x1xf32>
  %0 = graph.global_avg_pool %x : (tensor<1x512x7x7xf32>) -> tensor<1x512x1x1xf32>
  // CHECK: graph.global_avg_pool %[[Y]] : (tensor<?x8x?xbf16>) -> tensor<?x8x1xbf16>
  %1 = graph.global_avg_pool %y : (tensor<?x8x?xbf16>) -> tensor<?x8x1xbf16>
  return %0, %1 : tensor<1x512x1x1xf32>, tensor<?x8x1xbf16>
}

//===----------------------------------------------------------------------===//
// Normalization and softmax
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @batch_norm
// CHECK-SAME: (%[[X:.*]]: tensor<1x16x8x8xf32>, %[[S:.*]]: tensor<16xf32>, %[[B:.*]]: tensor<16xf32>, %[[M:.*]]: tensor<16xf32>, %[[V:.*]]: tensor<16xf32>, %[[Y:.*]]: tensor<?x?xf32>)
func.func @batch_norm(%x: tensor<1x16x8x8xf32>, %s: tensor<16xf32>, %b: tensor<16xf32>, %m: tensor<16xf32>, %v: tensor<16xf32>, %y: tensor<?x?xf32>)
    -> (tensor<1x16x8x8xf32>, tensor<?x?xf32>) {
  // CHECK: graph.batch_norm %[[X]], %[[S]], %[[B]], %[[M]], %[[V]] {epsilon = 1.000000e-05 : f64} : (tensor<1x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  %0 = graph.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f64}
      : (tensor<1x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  // CHECK: graph.batch_norm %[[Y]], %[[S]], %[[B]], %[[M]], %[[V]] {epsilon = 1.000000e-03 : f64} : (tensor<?x?xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x?xf32>
  %1 = graph.batch_norm %y, %s, %b, %m, %v {epsilon = 1.0e-03 : f64}
      : (tensor<?x?xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x?xf32>
  return %0, %1 : tensor<1x16x8x8xf32>, tensor<?x?xf32>
}

// With and without the optional bias; normalizing one or several trailing dims.
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.*]]: tensor<?x16x64xf32>, %[[G:.*]]: tensor<64xf32>, %[[B:.*]]: tensor<64xf32>, %[[G2:.*]]: tensor<16x64xf32>)
func.func @layer_norm(%x: tensor<?x16x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>, %g2: tensor<16x64xf32>)
    -> (tensor<?x16x64xf32>, tensor<?x16x64xf32>, tensor<?x16x64xf32>) {
  // CHECK: graph.layer_norm %[[X]], %[[G]], %[[B]] {axis = 2 : i64, epsilon = 1.000000e-05 : f64} : (tensor<?x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x16x64xf32>
  %0 = graph.layer_norm %x, %g, %b {axis = 2 : i64, epsilon = 1.0e-05 : f64}
      : (tensor<?x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x16x64xf32>
  // CHECK: graph.layer_norm %[[X]], %[[G]] {axis = 2 : i64, epsilon = 1.000000e-05 : f64} : (tensor<?x16x64xf32>, tensor<64xf32>) -> tensor<?x16x64xf32>
  %1 = graph.layer_norm %x, %g {axis = 2 : i64, epsilon = 1.0e-05 : f64}
      : (tensor<?x16x64xf32>, tensor<64xf32>) -> tensor<?x16x64xf32>
  // CHECK: graph.layer_norm %[[X]], %[[G2]] {axis = 1 : i64, epsilon = 1.000000e-03 : f64} : (tensor<?x16x64xf32>, tensor<16x64xf32>) -> tensor<?x16x64xf32>
  %2 = graph.layer_norm %x, %g2 {axis = 1 : i64, epsilon = 1.0e-03 : f64}
      : (tensor<?x16x64xf32>, tensor<16x64xf32>) -> tensor<?x16x64xf32>
  return %0, %1, %2 : tensor<?x16x64xf32>, tensor<?x16x64xf32>, tensor<?x16x64xf32>
}

// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.*]]: tensor<2x10xf32>, %[[Y:.*]]: tensor<?x?x8xf16>)
func.func @softmax(%x: tensor<2x10xf32>, %y: tensor<?x?x8xf16>)
    -> (tensor<2x10xf32>, tensor<?x?x8xf16>, tensor<2x10xf32>, tensor<?x?x8xf16>) {
  // CHECK: graph.softmax %[[X]] {axis = 1 : i64} : (tensor<2x10xf32>) -> tensor<2x10xf32>
  %0 = graph.softmax %x {axis = 1 : i64} : (tensor<2x10xf32>) -> tensor<2x10xf32>
  // CHECK: graph.softmax %[[Y]] {axis = 0 : i64} : (tensor<?x?x8xf16>) -> tensor<?x?x8xf16>
  %1 = graph.softmax %y {axis = 0 : i64} : (tensor<?x?x8xf16>) -> tensor<?x?x8xf16>
  // CHECK: graph.log_softmax %[[X]] {axis = 1 : i64} : (tensor<2x10xf32>) -> tensor<2x10xf32>
  %2 = graph.log_softmax %x {axis = 1 : i64} : (tensor<2x10xf32>) -> tensor<2x10xf32>
  // CHECK: graph.log_softmax %[[Y]] {axis = 2 : i64} : (tensor<?x?x8xf16>) -> tensor<?x?x8xf16>
  %3 = graph.log_softmax %y {axis = 2 : i64} : (tensor<?x?x8xf16>) -> tensor<?x?x8xf16>
  return %0, %1, %2, %3 : tensor<2x10xf32>, tensor<?x?x8xf16>, tensor<2x10xf32>, tensor<?x?x8xf16>
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @reduce
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[Y:.*]]: tensor<?x3x5xi32>)
func.func @reduce(%x: tensor<4x8xf32>, %y: tensor<?x3x5xi32>)
    -> (tensor<4x1xf32>, tensor<4xf32>, tensor<f32>, tensor<?x1x1xi32>, tensor<3xi32>, tensor<?x5xi32>) {
  // CHECK: graph.reduce_sum %[[X]] axes = [1] keepdims : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %0 = graph.reduce_sum %x axes = [1] keepdims : (tensor<4x8xf32>) -> tensor<4x1xf32>
  // CHECK: graph.reduce_mean %[[X]] axes = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
  %1 = graph.reduce_mean %x axes = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
  // CHECK: graph.reduce_mean %[[X]] axes = [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  %2 = graph.reduce_mean %x axes = [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  // CHECK: graph.reduce_max %[[Y]] axes = [1, 2] keepdims : (tensor<?x3x5xi32>) -> tensor<?x1x1xi32>
  %3 = graph.reduce_max %y axes = [1, 2] keepdims : (tensor<?x3x5xi32>) -> tensor<?x1x1xi32>
  // CHECK: graph.reduce_min %[[Y]] axes = [0, 2] : (tensor<?x3x5xi32>) -> tensor<3xi32>
  %4 = graph.reduce_min %y axes = [0, 2] : (tensor<?x3x5xi32>) -> tensor<3xi32>
  // CHECK: graph.reduce_sum %[[Y]] axes = [1] : (tensor<?x3x5xi32>) -> tensor<?x5xi32>
  %5 = graph.reduce_sum %y axes = [1] : (tensor<?x3x5xi32>) -> tensor<?x5xi32>
  return %0, %1, %2, %3, %4, %5 : tensor<4x1xf32>, tensor<4xf32>, tensor<f32>, tensor<?x1x1xi32>, tensor<3xi32>, tensor<?x5xi32>
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

// Positive dims, 0 (copy the input dim), -1 (inferred).
// CHECK-LABEL: func.func @reshape
// CHECK-SAME: (%[[X:.*]]: tensor<?x16x768xf32>, %[[Y:.*]]: tensor<2x3x4xi64>)
func.func @reshape(%x: tensor<?x16x768xf32>, %y: tensor<2x3x4xi64>)
    -> (tensor<?x16x12x64xf32>, tensor<6x4xi64>, tensor<24xi64>, tensor<?x16x2x384xf32>, tensor<?x64xf32>, tensor<2x1x12xi64>) {
  // CHECK: graph.reshape %[[X]] [0, 0, 12, 64] : (tensor<?x16x768xf32>) -> tensor<?x16x12x64xf32>
  %0 = graph.reshape %x [0, 0, 12, 64] : (tensor<?x16x768xf32>) -> tensor<?x16x12x64xf32>
  // CHECK: graph.reshape %[[Y]] [6, 4] : (tensor<2x3x4xi64>) -> tensor<6x4xi64>
  %1 = graph.reshape %y [6, 4] : (tensor<2x3x4xi64>) -> tensor<6x4xi64>
  // CHECK: graph.reshape %[[Y]] [-1] : (tensor<2x3x4xi64>) -> tensor<24xi64>
  %2 = graph.reshape %y [-1] : (tensor<2x3x4xi64>) -> tensor<24xi64>
  // CHECK: graph.reshape %[[X]] [0, 0, 2, -1] : (tensor<?x16x768xf32>) -> tensor<?x16x2x384xf32>
  %3 = graph.reshape %x [0, 0, 2, -1] : (tensor<?x16x768xf32>) -> tensor<?x16x2x384xf32>
  // CHECK: graph.reshape %[[X]] [-1, 64] : (tensor<?x16x768xf32>) -> tensor<?x64xf32>
  %4 = graph.reshape %x [-1, 64] : (tensor<?x16x768xf32>) -> tensor<?x64xf32>
  // CHECK: graph.reshape %[[Y]] [0, 1, -1] : (tensor<2x3x4xi64>) -> tensor<2x1x12xi64>
  %5 = graph.reshape %y [0, 1, -1] : (tensor<2x3x4xi64>) -> tensor<2x1x12xi64>
  return %0, %1, %2, %3, %4, %5 : tensor<?x16x12x64xf32>, tensor<6x4xi64>, tensor<24xi64>, tensor<?x16x2x384xf32>, tensor<?x64xf32>, tensor<2x1x12xi64>
}

// CHECK-LABEL: func.func @transpose
// CHECK-SAME: (%[[X:.*]]: tensor<2x16x12x64xf32>, %[[Y:.*]]: tensor<?x3xi1>)
func.func @transpose(%x: tensor<2x16x12x64xf32>, %y: tensor<?x3xi1>) -> (tensor<2x12x16x64xf32>, tensor<3x?xi1>, tensor<64x12x16x2xf32>) {
  // CHECK: graph.transpose %[[X]] [0, 2, 1, 3] : (tensor<2x16x12x64xf32>) -> tensor<2x12x16x64xf32>
  %0 = graph.transpose %x [0, 2, 1, 3] : (tensor<2x16x12x64xf32>) -> tensor<2x12x16x64xf32>
  // CHECK: graph.transpose %[[Y]] [1, 0] : (tensor<?x3xi1>) -> tensor<3x?xi1>
  %1 = graph.transpose %y [1, 0] : (tensor<?x3xi1>) -> tensor<3x?xi1>
  // CHECK: graph.transpose %[[X]] [3, 2, 1, 0] : (tensor<2x16x12x64xf32>) -> tensor<64x12x16x2xf32>
  %2 = graph.transpose %x [3, 2, 1, 0] : (tensor<2x16x12x64xf32>) -> tensor<64x12x16x2xf32>
  return %0, %1, %2 : tensor<2x12x16x64xf32>, tensor<3x?xi1>, tensor<64x12x16x2xf32>
}

// -1 keeps the operand dim (how a dynamic dim passes through); new leading
// dims; a dynamic operand dim against a static target takes the target.
// CHECK-LABEL: func.func @broadcast_to
// CHECK-SAME: (%[[B:.*]]: tensor<?x1x64xf32>, %[[C:.*]]: tensor<3xi32>, %[[D:.*]]: tensor<?xf32>)
func.func @broadcast_to(%b: tensor<?x1x64xf32>, %c: tensor<3xi32>, %d: tensor<?xf32>)
    -> (tensor<?x16x64xf32>, tensor<2x4x3xi32>, tensor<5xf32>, tensor<8x?xf32>) {
  // CHECK: graph.broadcast_to %[[B]] [-1, 16, 64] : (tensor<?x1x64xf32>) -> tensor<?x16x64xf32>
  %0 = graph.broadcast_to %b [-1, 16, 64] : (tensor<?x1x64xf32>) -> tensor<?x16x64xf32>
  // CHECK: graph.broadcast_to %[[C]] [2, 4, 3] : (tensor<3xi32>) -> tensor<2x4x3xi32>
  %1 = graph.broadcast_to %c [2, 4, 3] : (tensor<3xi32>) -> tensor<2x4x3xi32>
  // CHECK: graph.broadcast_to %[[D]] [5] : (tensor<?xf32>) -> tensor<5xf32>
  %2 = graph.broadcast_to %d [5] : (tensor<?xf32>) -> tensor<5xf32>
  // CHECK: graph.broadcast_to %[[D]] [8, -1] : (tensor<?xf32>) -> tensor<8x?xf32>
  %3 = graph.broadcast_to %d [8, -1] : (tensor<?xf32>) -> tensor<8x?xf32>
  return %0, %1, %2, %3 : tensor<?x16x64xf32>, tensor<2x4x3xi32>, tensor<5xf32>, tensor<8x?xf32>
}

// CHECK-LABEL: func.func @concat
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x5xf32>, %[[C:.*]]: tensor<?x3xf32>, %[[D:.*]]: tensor<2x?xf32>)
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>, %c: tensor<?x3xf32>, %d: tensor<2x?xf32>)
    -> (tensor<2x8xf32>, tensor<?x3xf32>, tensor<2x?xf32>, tensor<2x3xf32>, tensor<2x11xf32>) {
  // CHECK: graph.concat %[[A]], %[[B]] axis = 1 : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  %0 = graph.concat %a, %b axis = 1 : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  // CHECK: graph.concat %[[A]], %[[C]] axis = 0 : (tensor<2x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
  %1 = graph.concat %a, %c axis = 0 : (tensor<2x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
  // CHECK: graph.concat %[[A]], %[[D]] axis = 1 : (tensor<2x3xf32>, tensor<2x?xf32>) -> tensor<2x?xf32>
  %2 = graph.concat %a, %d axis = 1 : (tensor<2x3xf32>, tensor<2x?xf32>) -> tensor<2x?xf32>
  // CHECK: graph.concat %[[A]] axis = 0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = graph.concat %a axis = 0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: graph.concat %[[A]], %[[A]], %[[B]] axis = 1 : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x11xf32>
  %4 = graph.concat %a, %a, %b axis = 1 : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x11xf32>
  return %0, %1, %2, %3, %4 : tensor<2x8xf32>, tensor<?x3xf32>, tensor<2x?xf32>, tensor<2x3xf32>, tensor<2x11xf32>
}

// Steps, negative starts/ends, clamping of out-of-range ends, negative steps,
// dynamic dims.
// CHECK-LABEL: func.func @slice
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[Y:.*]]: tensor<?x10xi32>)
func.func @slice(%x: tensor<4x8xf32>, %y: tensor<?x10xi32>)
    -> (tensor<2x7xf32>, tensor<1x3xf32>, tensor<4x8xf32>, tensor<?x5xi32>) {
  // CHECK: graph.slice %[[X]] starts = [0, 1] ends = [4, 9223372036854775807] steps = [2, 1] : (tensor<4x8xf32>) -> tensor<2x7xf32>
  %0 = graph.slice %x starts = [0, 1] ends = [4, 9223372036854775807] steps = [2, 1]
      : (tensor<4x8xf32>) -> tensor<2x7xf32>
  // CHECK: graph.slice %[[X]] starts = [-1, -4] ends = [4, -1] steps = [1, 1] : (tensor<4x8xf32>) -> tensor<1x3xf32>
  %1 = graph.slice %x starts = [-1, -4] ends = [4, -1] steps = [1, 1]
      : (tensor<4x8xf32>) -> tensor<1x3xf32>
  // CHECK: graph.slice %[[X]] starts = [-1, -1] ends = [-100, -100] steps = [-1, -1] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = graph.slice %x starts = [-1, -1] ends = [-100, -100] steps = [-1, -1]
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: graph.slice %[[Y]] starts = [0, 9] ends = [5, 0] steps = [1, -2] : (tensor<?x10xi32>) -> tensor<?x5xi32>
  %3 = graph.slice %y starts = [0, 9] ends = [5, 0] steps = [1, -2]
      : (tensor<?x10xi32>) -> tensor<?x5xi32>
  return %0, %1, %2, %3 : tensor<2x7xf32>, tensor<1x3xf32>, tensor<4x8xf32>, tensor<?x5xi32>
}

// An empty dim, read backwards. NOTE: sliceLength evaluates
// std::clamp(start, 0, dim - 1) with dim = 0 (lo > hi), which is undefined
// behaviour; it happens to give the right length today.
// CHECK-LABEL: func.func @slice_empty
// CHECK-SAME: (%[[X:.*]]: tensor<0x3xf32>)
func.func @slice_empty(%x: tensor<0x3xf32>) -> tensor<0x3xf32> {
  // CHECK: graph.slice %[[X]] starts = [-1, 0] ends = [-100, 3] steps = [-1, 1] : (tensor<0x3xf32>) -> tensor<0x3xf32>
  %0 = graph.slice %x starts = [-1, 0] ends = [-100, 3] steps = [-1, 1]
      : (tensor<0x3xf32>) -> tensor<0x3xf32>
  return %0 : tensor<0x3xf32>
}

// CHECK-LABEL: func.func @gather
// CHECK-SAME: (%[[D:.*]]: tensor<10x4xf32>, %[[I:.*]]: tensor<3xi64>, %[[J:.*]]: tensor<?x2xi32>)
func.func @gather(%d: tensor<10x4xf32>, %i: tensor<3xi64>, %j: tensor<?x2xi32>)
    -> (tensor<3x4xf32>, tensor<10x?x2xf32>, tensor<4xf32>) {
  // CHECK: graph.gather %[[D]], %[[I]] axis = 0 : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  %0 = graph.gather %d, %i axis = 0 : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  // CHECK: graph.gather %[[D]], %[[J]] axis = 1 : (tensor<10x4xf32>, tensor<?x2xi32>) -> tensor<10x?x2xf32>
  %1 = graph.gather %d, %j axis = 1 : (tensor<10x4xf32>, tensor<?x2xi32>) -> tensor<10x?x2xf32>
  %k = graph.constant dense<2> : tensor<i64>
  // CHECK: graph.gather %[[D]], %{{.*}} axis = 0 : (tensor<10x4xf32>, tensor<i64>) -> tensor<4xf32>
  %2 = graph.gather %d, %k axis = 0 : (tensor<10x4xf32>, tensor<i64>) -> tensor<4xf32>
  return %0, %1, %2 : tensor<3x4xf32>, tensor<10x?x2xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @squeeze_unsqueeze
// CHECK-SAME: (%[[X:.*]]: tensor<4x1x8xf32>, %[[Y:.*]]: tensor<1x?x1xi64>, %[[Z:.*]]: tensor<4x8xf32>)
func.func @squeeze_unsqueeze(%x: tensor<4x1x8xf32>, %y: tensor<1x?x1xi64>, %z: tensor<4x8xf32>)
    -> (tensor<4x8xf32>, tensor<?xi64>, tensor<1x4x1x8xf32>, tensor<4x8x1xf32>) {
  // CHECK: graph.squeeze %[[X]] axes = [1] : (tensor<4x1x8xf32>) -> tensor<4x8xf32>
  %0 = graph.squeeze %x axes = [1] : (tensor<4x1x8xf32>) -> tensor<4x8xf32>
  // CHECK: graph.squeeze %[[Y]] axes = [0, 2] : (tensor<1x?x1xi64>) -> tensor<?xi64>
  %1 = graph.squeeze %y axes = [0, 2] : (tensor<1x?x1xi64>) -> tensor<?xi64>
  // CHECK: graph.unsqueeze %[[Z]] axes = [0, 2] : (tensor<4x8xf32>) -> tensor<1x4x1x8xf32>
  %2 = graph.unsqueeze %z axes = [0, 2] : (tensor<4x8xf32>) -> tensor<1x4x1x8xf32>
  // CHECK: graph.unsqueeze %[[Z]] axes = [2] : (tensor<4x8xf32>) -> tensor<4x8x1xf32>
  %3 = graph.unsqueeze %z axes = [2] : (tensor<4x8xf32>) -> tensor<4x8x1xf32>
  return %0, %1, %2, %3 : tensor<4x8xf32>, tensor<?xi64>, tensor<1x4x1x8xf32>, tensor<4x8x1xf32>
}

// A dynamic dim may be squeezed (it must be 1 at run time).
// CHECK-LABEL: func.func @squeeze_dynamic
// CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32>)
func.func @squeeze_dynamic(%x: tensor<?x4xf32>) -> tensor<4xf32> {
  // CHECK: graph.squeeze %[[X]] axes = [0] : (tensor<?x4xf32>) -> tensor<4xf32>
  %0 = graph.squeeze %x axes = [0] : (tensor<?x4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// CHECK-LABEL: func.func @flatten
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>, %[[Y:.*]]: tensor<?x3x4xf32>)
func.func @flatten(%x: tensor<2x3x4xf32>, %y: tensor<?x3x4xf32>)
    -> (tensor<2x12xf32>, tensor<1x24xf32>, tensor<24x1xf32>, tensor<?x12xf32>, tensor<?x4xf32>) {
  // CHECK: graph.flatten %[[X]] axis = 1 : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  %0 = graph.flatten %x axis = 1 : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  // CHECK: graph.flatten %[[X]] axis = 0 : (tensor<2x3x4xf32>) -> tensor<1x24xf32>
  %1 = graph.flatten %x axis = 0 : (tensor<2x3x4xf32>) -> tensor<1x24xf32>
  // CHECK: graph.flatten %[[X]] axis = 3 : (tensor<2x3x4xf32>) -> tensor<24x1xf32>
  %2 = graph.flatten %x axis = 3 : (tensor<2x3x4xf32>) -> tensor<24x1xf32>
  // CHECK: graph.flatten %[[Y]] axis = 1 : (tensor<?x3x4xf32>) -> tensor<?x12xf32>
  %3 = graph.flatten %y axis = 1 : (tensor<?x3x4xf32>) -> tensor<?x12xf32>
  // CHECK: graph.flatten %[[Y]] axis = 2 : (tensor<?x3x4xf32>) -> tensor<?x4xf32>
  %4 = graph.flatten %y axis = 2 : (tensor<?x3x4xf32>) -> tensor<?x4xf32>
  return %0, %1, %2, %3, %4 : tensor<2x12xf32>, tensor<1x24xf32>, tensor<24x1xf32>, tensor<?x12xf32>, tensor<?x4xf32>
}

// The default fill value (0.0) is not printed.
// CHECK-LABEL: func.func @pad
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[Y:.*]]: tensor<?x4xi32>)
func.func @pad(%x: tensor<2x3xf32>, %y: tensor<?x4xi32>)
    -> (tensor<2x5xf32>, tensor<4x5xf32>, tensor<?x8xi32>, tensor<?x6xi32>) {
  // CHECK: graph.pad %[[X]] pads = [0, 1, 0, 1] mode = constant : (tensor<2x3xf32>) -> tensor<2x5xf32>
  %0 = graph.pad %x pads = [0, 1, 0, 1] mode = constant {value = 0.0 : f64}
      : (tensor<2x3xf32>) -> tensor<2x5xf32>
  // CHECK: graph.pad %[[X]] pads = [1, 1, 1, 1] mode = constant {value = -1.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<4x5xf32>
  %1 = graph.pad %x pads = [1, 1, 1, 1] mode = constant {value = -1.0 : f64}
      : (tensor<2x3xf32>) -> tensor<4x5xf32>
  // CHECK: graph.pad %[[Y]] pads = [0, 3, 0, 1] mode = edge : (tensor<?x4xi32>) -> tensor<?x8xi32>
  %2 = graph.pad %y pads = [0, 3, 0, 1] mode = edge : (tensor<?x4xi32>) -> tensor<?x8xi32>
  // CHECK: graph.pad %[[Y]] pads = [2, 1, 2, 1] mode = reflect : (tensor<?x4xi32>) -> tensor<?x6xi32>
  %3 = graph.pad %y pads = [2, 1, 2, 1] mode = reflect : (tensor<?x4xi32>) -> tensor<?x6xi32>
  return %0, %1, %2, %3 : tensor<2x5xf32>, tensor<4x5xf32>, tensor<?x8xi32>, tensor<?x6xi32>
}

// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[T:.*]]: tensor<50257x768xf32>, %[[I:.*]]: tensor<?x16xi64>, %[[J:.*]]: tensor<5xi32>, %[[U:.*]]: tensor<?x?xbf16>)
func.func @embedding(%t: tensor<50257x768xf32>, %i: tensor<?x16xi64>, %j: tensor<5xi32>, %u: tensor<?x?xbf16>)
    -> (tensor<?x16x768xf32>, tensor<5x?xbf16>) {
  // CHECK: graph.embedding %[[T]], %[[I]] : (tensor<50257x768xf32>, tensor<?x16xi64>) -> tensor<?x16x768xf32>
  %0 = graph.embedding %t, %i : (tensor<50257x768xf32>, tensor<?x16xi64>) -> tensor<?x16x768xf32>
  // CHECK: graph.embedding %[[U]], %[[J]] : (tensor<?x?xbf16>, tensor<5xi32>) -> tensor<5x?xbf16>
  %1 = graph.embedding %u, %j : (tensor<?x?xbf16>, tensor<5xi32>) -> tensor<5x?xbf16>
  return %0, %1 : tensor<?x16x768xf32>, tensor<5x?xbf16>
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @cross_entropy
// CHECK-SAME: (%[[L:.*]]: tensor<2x16x100xf32>, %[[Y:.*]]: tensor<2x16xi64>, %[[M:.*]]: tensor<?x10xf32>, %[[N:.*]]: tensor<?xi32>)
func.func @cross_entropy(%l: tensor<2x16x100xf32>, %y: tensor<2x16xi64>, %m: tensor<?x10xf32>, %n: tensor<?xi32>)
    -> (tensor<f32>, tensor<f32>, tensor<2x16xf32>, tensor<?xf32>) {
  // CHECK: graph.cross_entropy %[[L]], %[[Y]] reduction = mean : (tensor<2x16x100xf32>, tensor<2x16xi64>) -> tensor<f32>
  %0 = graph.cross_entropy %l, %y reduction = mean : (tensor<2x16x100xf32>, tensor<2x16xi64>) -> tensor<f32>
  // CHECK: graph.cross_entropy %[[L]], %[[Y]] reduction = sum {ignore_index = -100 : i64} : (tensor<2x16x100xf32>, tensor<2x16xi64>) -> tensor<f32>
  %1 = graph.cross_entropy %l, %y reduction = sum {ignore_index = -100 : i64} : (tensor<2x16x100xf32>, tensor<2x16xi64>) -> tensor<f32>
  // CHECK: graph.cross_entropy %[[L]], %[[Y]] reduction = none : (tensor<2x16x100xf32>, tensor<2x16xi64>) -> tensor<2x16xf32>
  %2 = graph.cross_entropy %l, %y reduction = none : (tensor<2x16x100xf32>, tensor<2x16xi64>) -> tensor<2x16xf32>
  // CHECK: graph.cross_entropy %[[M]], %[[N]] reduction = none : (tensor<?x10xf32>, tensor<?xi32>) -> tensor<?xf32>
  %3 = graph.cross_entropy %m, %n reduction = none : (tensor<?x10xf32>, tensor<?xi32>) -> tensor<?xf32>
  return %0, %1, %2, %3 : tensor<f32>, tensor<f32>, tensor<2x16xf32>, tensor<?xf32>
}

// CHECK-LABEL: func.func @mse_loss
// CHECK-SAME: (%[[P:.*]]: tensor<8x1xf32>, %[[T:.*]]: tensor<8x1xf32>, %[[Q:.*]]: tensor<?x4xf64>, %[[U:.*]]: tensor<3x?xf64>)
func.func @mse_loss(%p: tensor<8x1xf32>, %t: tensor<8x1xf32>, %q: tensor<?x4xf64>, %u: tensor<3x?xf64>)
    -> (tensor<f32>, tensor<f32>, tensor<8x1xf32>, tensor<3x4xf64>) {
  // CHECK: graph.mse_loss %[[P]], %[[T]] reduction = mean : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<f32>
  %0 = graph.mse_loss %p, %t reduction = mean : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<f32>
  // CHECK: graph.mse_loss %[[P]], %[[T]] reduction = sum : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<f32>
  %1 = graph.mse_loss %p, %t reduction = sum : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<f32>
  // CHECK: graph.mse_loss %[[P]], %[[T]] reduction = none : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<8x1xf32>
  %2 = graph.mse_loss %p, %t reduction = none : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<8x1xf32>
  // CHECK: graph.mse_loss %[[Q]], %[[U]] reduction = none : (tensor<?x4xf64>, tensor<3x?xf64>) -> tensor<3x4xf64>
  %3 = graph.mse_loss %q, %u reduction = none : (tensor<?x4xf64>, tensor<3x?xf64>) -> tensor<3x4xf64>
  return %0, %1, %2, %3 : tensor<f32>, tensor<f32>, tensor<8x1xf32>, tensor<3x4xf64>
}

// Edge cases of the shape rules that are valid.

// A huge step takes one element (no overflow in the slice length).
// CHECK-LABEL: func.func @slice_huge_step
// CHECK: graph.slice %{{.*}} starts = [0] ends = [8] steps = [9223372036854775807] : (tensor<8xf32>) -> tensor<1xf32>
func.func @slice_huge_step(%x: tensor<8xf32>) -> tensor<1xf32> {
  %0 = graph.slice %x starts = [0] ends = [8] steps = [9223372036854775807]
      : (tensor<8xf32>) -> tensor<1xf32>
  return %0 : tensor<1xf32>
}

// ONNX's INT64_MIN end sentinel of a reversing slice round-trips.
// CHECK-LABEL: func.func @slice_int64_min
// CHECK: graph.slice %{{.*}} starts = [-1] ends = [-9223372036854775808] steps = [-1] : (tensor<8xf32>) -> tensor<8xf32>
func.func @slice_int64_min(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = graph.slice %x starts = [-1] ends = [-9223372036854775808] steps = [-1]
      : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// pool_c2 bounds the pad by half the dilated kernel: ((3 - 1) * 2 + 1) / 2.
// CHECK-LABEL: func.func @pool_c2_dilated
// CHECK: graph.max_pool {{.*}} padding = [2, 2, 2, 2] dilations = [2, 2] : (tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
func.func @pool_c2_dilated(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32> {
  %0 = graph.max_pool %x kernel = [3, 3] strides = [1, 1] padding = [2, 2, 2, 2] dilations = [2, 2]
      : (tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
  return %0 : tensor<1x3x8x8xf32>
}

// CHECK-LABEL: func.func @arg_reduce
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xf32>)
// CHECK: graph.arg_max %[[X]] axis = 1 keepdims : (tensor<?x8xf32>) -> tensor<?x1xi64>
// CHECK: graph.arg_min %[[X]] axis = 0 select_last_index : (tensor<?x8xf32>) -> tensor<8xi64>
func.func @arg_reduce(%x: tensor<?x8xf32>) -> (tensor<?x1xi64>, tensor<8xi64>) {
  %0 = graph.arg_max %x axis = 1 keepdims : (tensor<?x8xf32>) -> tensor<?x1xi64>
  %1 = graph.arg_min %x axis = 0 select_last_index : (tensor<?x8xf32>) -> tensor<8xi64>
  return %0, %1 : tensor<?x1xi64>, tensor<8xi64>
}

//===----------------------------------------------------------------------===//
// Ops added for the ONNX core set
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @rounding
func.func @rounding(%x: tensor<4xf32>, %i: tensor<4xi64>, %n: tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi64>) {
  // CHECK: graph.floor %{{.*}} : tensor<4xf32>
  %0 = graph.floor %x : tensor<4xf32>
  // CHECK: graph.ceil %{{.*}} : tensor<4xf32>
  %1 = graph.ceil %x : tensor<4xf32>
  // CHECK: graph.round %{{.*}} : tensor<4xf32>
  %2 = graph.round %x : tensor<4xf32>
  // CHECK: graph.rem %{{.*}}, %{{.*}} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = graph.rem %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // CHECK: graph.mod %{{.*}}, %{{.*}} : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
  %4 = graph.mod %i, %n : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
  return %0, %1, %2, %3, %4 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi64>
}

// CHECK-LABEL: func.func @fill_like
func.func @fill_like(%m: tensor<?x16xi1>) -> (tensor<?x16xf32>, tensor<?x16xi64>, tensor<?x16xi1>) {
  // CHECK: graph.fill_like %{{.*}}, 0.000000e+00 : f32 : (tensor<?x16xi1>) -> tensor<?x16xf32>
  %0 = graph.fill_like %m, 0.0 : f32 : (tensor<?x16xi1>) -> tensor<?x16xf32>
  // CHECK: graph.fill_like %{{.*}}, 7 : i64 : (tensor<?x16xi1>) -> tensor<?x16xi64>
  %1 = graph.fill_like %m, 7 : i64 : (tensor<?x16xi1>) -> tensor<?x16xi64>
  // CHECK: graph.fill_like %{{.*}}, true : (tensor<?x16xi1>) -> tensor<?x16xi1>
  %2 = graph.fill_like %m, true : (tensor<?x16xi1>) -> tensor<?x16xi1>
  return %0, %1, %2 : tensor<?x16xf32>, tensor<?x16xi64>, tensor<?x16xi1>
}

// CHECK-LABEL: func.func @scans
func.func @scans(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x3xf32>, tensor<2x3xi64>, tensor<1x8xf32>, tensor<1x8xi64>, tensor<2xf32>) {
  // CHECK: graph.cumsum %{{.*}} axis = 1 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %0 = graph.cumsum %x axis = 1 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: graph.cumsum %{{.*}} axis = 0 exclusive reverse : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %1 = graph.cumsum %x axis = 0 exclusive reverse : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: graph.top_k %{{.*}} k = 3 axis = 1 : (tensor<2x8xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>)
  %2:2 = graph.top_k %x k = 3 axis = 1 : (tensor<2x8xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>)
  // CHECK: graph.top_k %{{.*}} k = 1 axis = 0 smallest unsorted : (tensor<2x8xf32>) -> (tensor<1x8xf32>, tensor<1x8xi64>)
  %3:2 = graph.top_k %x k = 1 axis = 0 smallest unsorted : (tensor<2x8xf32>) -> (tensor<1x8xf32>, tensor<1x8xi64>)
  // CHECK: graph.reduce_prod %{{.*}} axes = [1] : (tensor<2x8xf32>) -> tensor<2xf32>
  %4 = graph.reduce_prod %x axes = [1] : (tensor<2x8xf32>) -> tensor<2xf32>
  return %0, %1, %2#0, %2#1, %3#0, %3#1, %4 : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x3xf32>, tensor<2x3xi64>, tensor<1x8xf32>, tensor<1x8xi64>, tensor<2xf32>
}

// CHECK-LABEL: func.func @elements
func.func @elements(%d: tensor<3x3xf32>, %i: tensor<2x3xi64>, %u: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>) {
  // CHECK: graph.gather_elements %{{.*}}, %{{.*}} axis = 0 : (tensor<3x3xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
  %0 = graph.gather_elements %d, %i axis = 0 : (tensor<3x3xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
  // CHECK: graph.scatter_elements %{{.*}}, %{{.*}}, %{{.*}} axis = 0 reduction = add : (tensor<3x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<3x3xf32>
  %1 = graph.scatter_elements %d, %i, %u axis = 0 reduction = add : (tensor<3x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<3x3xf32>
  // CHECK: graph.trilu %{{.*}} k = 0 : (tensor<3x3xf32>) -> tensor<3x3xf32>
  %2 = graph.trilu %d k = 0 : (tensor<3x3xf32>) -> tensor<3x3xf32>
  // CHECK: graph.trilu %{{.*}} upper k = -1 : (tensor<3x3xf32>) -> tensor<3x3xf32>
  %3 = graph.trilu %d upper k = -1 : (tensor<3x3xf32>) -> tensor<3x3xf32>
  return %0, %1, %2, %3 : tensor<2x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>
}

// CHECK-LABEL: func.func @resize
func.func @resize(%x: tensor<?x3x8x8xf32>) -> (tensor<?x3x16x16xf32>, tensor<?x3x5x12xf32>) {
  // CHECK: graph.resize %{{.*}} scales = [1.000000e+00, 1.000000e+00, 2.000000e+00, 2.000000e+00] sizes = [-1, -1, -1, -1] mode = linear coordinate_mode = half_pixel nearest_mode = round_prefer_floor : (tensor<?x3x8x8xf32>) -> tensor<?x3x16x16xf32>
  %0 = graph.resize %x scales = [1.0, 1.0, 2.0, 2.0] sizes = [-1, -1, -1, -1] mode = linear coordinate_mode = half_pixel nearest_mode = round_prefer_floor : (tensor<?x3x8x8xf32>) -> tensor<?x3x16x16xf32>
  // CHECK: graph.resize %{{.*}} scales = [1.000000e+00, 1.000000e+00, 6.250000e-01, 1.500000e+00] sizes = [-1, -1, 5, 12] mode = cubic coordinate_mode = align_corners nearest_mode = floor {cubic_coeff_a = -5.000000e-01 : f64, exclude_outside} : (tensor<?x3x8x8xf32>) -> tensor<?x3x5x12xf32>
  %1 = graph.resize %x scales = [1.0, 1.0, 0.625, 1.5] sizes = [-1, -1, 5, 12] mode = cubic coordinate_mode = align_corners nearest_mode = floor {cubic_coeff_a = -0.5 : f64, exclude_outside} : (tensor<?x3x8x8xf32>) -> tensor<?x3x5x12xf32>
  return %0, %1 : tensor<?x3x16x16xf32>, tensor<?x3x5x12xf32>
}

// Run-time shape parameters.

// CHECK-LABEL: func.func @dynamic_shape_ops
func.func @dynamic_shape_ops(%x: tensor<2x3x4xf32>, %s: tensor<2xi64>,
                             %a: tensor<1xi64>, %i: tensor<i32>,
                             %p: tensor<6xi64>, %v: tensor<f32>) {
  // CHECK: graph.dynamic_reshape %{{.*}}, %{{.*}} allowzero : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  %0 = graph.dynamic_reshape %x, %s allowzero : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  // CHECK: graph.dynamic_unsqueeze %{{.*}}, %{{.*}} : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<?x?x?x?xf32>
  %1 = graph.dynamic_unsqueeze %x, %a : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<?x?x?x?xf32>
  // CHECK: graph.dynamic_squeeze %{{.*}}, %{{.*}} : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<?x?xf32>
  %2 = graph.dynamic_squeeze %x, %a : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<?x?xf32>
  // CHECK: graph.dynamic_slice %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x3x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x?x?xf32>
  %3 = graph.dynamic_slice %x, %a, %a, %a, %a : (tensor<2x3x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x?x?xf32>
  // CHECK: graph.dynamic_reduce_sum %{{.*}}, %{{.*}} keepdims : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<?x?x?xf32>
  %4 = graph.dynamic_reduce_sum %x, %a keepdims : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<?x?x?xf32>
  // CHECK: graph.dynamic_reduce_sum %{{.*}}, %{{.*}} : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<?x?xf32>
  %5 = graph.dynamic_reduce_sum %x, %a : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<?x?xf32>
  // CHECK: graph.dynamic_cumsum %{{.*}}, %{{.*}} exclusive reverse : (tensor<2x3x4xf32>, tensor<i32>) -> tensor<2x3x4xf32>
  %6 = graph.dynamic_cumsum %x, %i exclusive reverse : (tensor<2x3x4xf32>, tensor<i32>) -> tensor<2x3x4xf32>
  // CHECK: graph.dynamic_fill %{{.*}} {value = 1 : i32} : (tensor<2xi64>) -> tensor<?x?xi32>
  %7 = graph.dynamic_fill %s {value = 1 : i32} : (tensor<2xi64>) -> tensor<?x?xi32>
  // CHECK: graph.dynamic_broadcast %{{.*}}, %{{.*}} : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x3x4xf32>
  %8 = graph.dynamic_broadcast %x, %s : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x3x4xf32>
  // CHECK: graph.range %{{.*}}, %{{.*}}, %{{.*}} : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<?xf32>
  %9 = graph.range %v, %v, %v : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<?xf32>
  // CHECK: graph.dynamic_pad %{{.*}}, %{{.*}}, %{{.*}} mode = reflect : (tensor<2x3x4xf32>, tensor<6xi64>, tensor<f32>) -> tensor<?x?x?xf32>
  %10 = graph.dynamic_pad %x, %p, %v mode = reflect : (tensor<2x3x4xf32>, tensor<6xi64>, tensor<f32>) -> tensor<?x?x?xf32>
  return
}

// CHECK-LABEL: func.func @dynamic_tile_resize
func.func @dynamic_tile_resize(%x: tensor<1x1x2x2xf32>, %r: tensor<4xi64>,
                               %s: tensor<4xf32>) {
  // CHECK: graph.dynamic_tile %{{.*}}, %{{.*}} : (tensor<1x1x2x2xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  %0 = graph.dynamic_tile %x, %r : (tensor<1x1x2x2xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  // CHECK: graph.dynamic_resize %{{.*}}, %{{.*}} mode = linear coordinate_mode = half_pixel nearest_mode = round_prefer_floor : (tensor<1x1x2x2xf32>, tensor<4xf32>) -> tensor<?x?x?x?xf32>
  %1 = graph.dynamic_resize %x, %s mode = linear coordinate_mode = half_pixel nearest_mode = round_prefer_floor : (tensor<1x1x2x2xf32>, tensor<4xf32>) -> tensor<?x?x?x?xf32>
  // CHECK: graph.dynamic_resize %{{.*}}, %{{.*}} mode = nearest coordinate_mode = asymmetric nearest_mode = floor : (tensor<1x1x2x2xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  %2 = graph.dynamic_resize %x, %r mode = nearest coordinate_mode = asymmetric nearest_mode = floor : (tensor<1x1x2x2xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  return
}

// CHECK-LABEL: func.func @dynamic_top_k
func.func @dynamic_top_k(%x: tensor<3x4xf32>, %k: tensor<1xi64>) {
  // CHECK: graph.dynamic_top_k %{{.*}}, %{{.*}} axis = 1 smallest : (tensor<3x4xf32>, tensor<1xi64>) -> (tensor<3x?xf32>, tensor<3x?xi64>)
  %v, %i = graph.dynamic_top_k %x, %k axis = 1 smallest : (tensor<3x4xf32>, tensor<1xi64>) -> (tensor<3x?xf32>, tensor<3x?xi64>)
  return
}

// CHECK-LABEL: func.func @nonzero
func.func @nonzero(%m: tensor<2x3xi1>, %s: tensor<i1>) {
  // CHECK: graph.nonzero %{{.*}} : (tensor<2x3xi1>) -> tensor<?x2xi64>
  %0 = graph.nonzero %m : (tensor<2x3xi1>) -> tensor<?x2xi64>
  // CHECK: graph.nonzero %{{.*}} : (tensor<i1>) -> tensor<?x0xi64>
  %1 = graph.nonzero %s : (tensor<i1>) -> tensor<?x0xi64>
  return
}
