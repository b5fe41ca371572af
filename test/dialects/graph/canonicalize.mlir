// RUN: loom-opt %s -canonicalize -split-input-file | FileCheck %s

// One function per fold in GraphFolds.cpp, with the cases that must not fold.

//===----------------------------------------------------------------------===//
// Constant arithmetic
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @add_constants_float
// CHECK-NEXT: %[[C:.*]] = graph.constant dense<[4.000000e+00, 6.000000e+00]> : tensor<2xf32>
// CHECK-NEXT: return %[[C]]
func.func @add_constants_float() -> tensor<2xf32> {
  %a = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = graph.constant dense<[3.0, 4.0]> : tensor<2xf32>
  %0 = graph.add %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// CHECK-LABEL: func.func @add_constants_int
// CHECK-NEXT: %[[C:.*]] = graph.constant dense<[11, 22, 33]> : tensor<3xi64>
// CHECK-NEXT: return %[[C]]
func.func @add_constants_int() -> tensor<3xi64> {
  %a = graph.constant dense<[1, 2, 3]> : tensor<3xi64>
  %b = graph.constant dense<[10, 20, 30]> : tensor<3xi64>
  %0 = graph.add %a, %b : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  return %0 : tensor<3xi64>
}

// -----

// Integer arithmetic wraps around.
// CHECK-LABEL: func.func @add_constants_int_wrap
// CHECK-NEXT: %[[C:.*]] = graph.constant dense<-128> : tensor<2xi8>
// CHECK-NEXT: return %[[C]]
func.func @add_constants_int_wrap() -> tensor<2xi8> {
  %a = graph.constant dense<127> : tensor<2xi8>
  %b = graph.constant dense<1> : tensor<2xi8>
  %0 = graph.add %a, %b : (tensor<2xi8>, tensor<2xi8>) -> tensor<2xi8>
  return %0 : tensor<2xi8>
}

// -----

// CHECK-LABEL: func.func @sub_constants_float
// CHECK-NEXT: %[[C:.*]] = graph.constant dense<[-2.000000e+00, 5.000000e-01]> : tensor<2xf16>
// CHECK-NEXT: return %[[C]]
func.func @sub_constants_float() -> tensor<2xf16> {
  %a = graph.constant dense<[1.0, 2.0]> : tensor<2xf16>
  %b = graph.constant dense<[3.0, 1.5]> : tensor<2xf16>
  %0 = graph.sub %a, %b : (tensor<2xf16>, tensor<2xf16>) -> tensor<2xf16>
  return %0 : tensor<2xf16>
}

// -----

// CHECK-LABEL: func.func @sub_constants_int
// CHECK-NEXT: %[[C:.*]] = graph.constant dense<[-9, 5]> : tensor<2xi32>
// CHECK-NEXT: return %[[C]]
func.func @sub_constants_int() -> tensor<2xi32> {
  %a = graph.constant dense<[1, 7]> : tensor<2xi32>
  %b = graph.constant dense<[10, 2]> : tensor<2xi32>
  %0 = graph.sub %a, %b : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

// CHECK-LABEL: func.func @mul_constants_float
// CHECK-NEXT: %[[C:.*]] = graph.constant dense<{{\[}}[3.000000e+00, 8.000000e+00]]> : tensor<1x2xf64>
// CHECK-NEXT: return %[[C]]
func.func @mul_constants_float() -> tensor<1x2xf64> {
  %a = graph.constant dense<[[1.0, 2.0]]> : tensor<1x2xf64>
  %b = graph.constant dense<[[3.0, 4.0]]> : tensor<1x2xf64>
  %0 = graph.mul %a, %b : (tensor<1x2xf64>, tensor<1x2xf64>) -> tensor<1x2xf64>
  return %0 : tensor<1x2xf64>
}

// -----

// CHECK-LABEL: func.func @mul_constants_int
// CHECK-NEXT: %[[C:.*]] = graph.constant dense<[-6, 20]> : tensor<2xi32>
// CHECK-NEXT: return %[[C]]
func.func @mul_constants_int() -> tensor<2xi32> {
  %a = graph.constant dense<[2, 4]> : tensor<2xi32>
  %b = graph.constant dense<[-3, 5]> : tensor<2xi32>
  %0 = graph.mul %a, %b : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

// CHECK-LABEL: func.func @div_constants_float
// CHECK-NEXT: %[[C:.*]] = graph.constant dense<[2.500000e-01, 0x7F800000]> : tensor<2xf32>
// CHECK-NEXT: return %[[C]]
func.func @div_constants_float() -> tensor<2xf32> {
  %a = graph.constant dense<[1.0, 1.0]> : tensor<2xf32>
  %b = graph.constant dense<[4.0, 0.0]> : tensor<2xf32>
  %0 = graph.div %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// Integer division of constants does not fold (it may trap).
// CHECK-LABEL: func.func @div_constants_int_no_fold
// CHECK-DAG: %[[A:.*]] = graph.constant dense<[7, 8]> : tensor<2xi32>
// CHECK-DAG: %[[B:.*]] = graph.constant dense<[2, 0]> : tensor<2xi32>
// CHECK: %[[D:.*]] = graph.div %[[A]], %[[B]] : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
// CHECK-NEXT: return %[[D]]
func.func @div_constants_int_no_fold() -> tensor<2xi32> {
  %a = graph.constant dense<[7, 8]> : tensor<2xi32>
  %b = graph.constant dense<[2, 0]> : tensor<2xi32>
  %0 = graph.div %a, %b : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

// Constants of different types (broadcasting) do not fold.
// CHECK-LABEL: func.func @add_constants_broadcast_no_fold
// CHECK: %[[R:.*]] = graph.add %{{.*}}, %{{.*}} : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
// CHECK-NEXT: return %[[R]]
func.func @add_constants_broadcast_no_fold() -> tensor<2x2xf32> {
  %a = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %b = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %0 = graph.add %a, %b : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

//===----------------------------------------------------------------------===//
// Arithmetic identities
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func.func @add_zero_rhs
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NOT: graph.add
// CHECK: return %[[X]]
func.func @add_zero_rhs(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %z = graph.constant dense<0.0> : tensor<2x3xf32>
  %0 = graph.add %x, %z : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @add_zero_lhs
// CHECK-SAME: (%[[X:.*]]: tensor<?x3xi32>)
// CHECK-NOT: graph.add
// CHECK: return %[[X]]
func.func @add_zero_lhs(%x: tensor<?x3xi32>) -> tensor<?x3xi32> {
  %z = graph.constant dense<0> : tensor<3xi32>
  %0 = graph.add %z, %x : (tensor<3xi32>, tensor<?x3xi32>) -> tensor<?x3xi32>
  return %0 : tensor<?x3xi32>
}

// -----

// A zero that broadcasts to the result's type (lower rank, size-1 dims) folds.
// CHECK-LABEL: func.func @add_zero_broadcast_scalar
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NOT: graph.add
// CHECK: return %[[X]]
func.func @add_zero_broadcast_scalar(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %z = graph.constant dense<0.0> : tensor<1x1xf32>
  %0 = graph.add %x, %z : (tensor<2x3xf32>, tensor<1x1xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// x + 0 where the zero broadcasts x to a bigger shape must not fold.
// CHECK-LABEL: func.func @add_zero_bigger_no_fold
// CHECK-SAME: (%[[X:.*]]: tensor<3xf32>)
// CHECK: %[[Z:.*]] = graph.constant dense<0.000000e+00> : tensor<2x3xf32>
// CHECK: %[[R:.*]] = graph.add %[[X]], %[[Z]] : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK: return %[[R]]
func.func @add_zero_bigger_no_fold(%x: tensor<3xf32>) -> tensor<2x3xf32> {
  %z = graph.constant dense<0.0> : tensor<2x3xf32>
  %0 = graph.add %x, %z : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// The same with the zero on the left, and with a size-1 dim of x broadcast.
// CHECK-LABEL: func.func @add_zero_bigger_lhs_no_fold
// CHECK-SAME: (%[[X:.*]]: tensor<1x4xi64>)
// CHECK: %[[R:.*]] = graph.add {{.*}}%[[X]]{{.*}} -> tensor<5x4xi64>
// CHECK: return %[[R]]
func.func @add_zero_bigger_lhs_no_fold(%x: tensor<1x4xi64>) -> tensor<5x4xi64> {
  %z = graph.constant dense<0> : tensor<5x4xi64>
  %0 = graph.add %z, %x : (tensor<5x4xi64>, tensor<1x4xi64>) -> tensor<5x4xi64>
  return %0 : tensor<5x4xi64>
}

// -----

// A dynamic dim of x that the zero would make static must not fold either.
// CHECK-LABEL: func.func @add_zero_dynamic_no_fold
// CHECK-SAME: (%[[X:.*]]: tensor<?xf32>)
// CHECK: %[[R:.*]] = graph.add %[[X]], %{{.*}} : (tensor<?xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK: return %[[R]]
func.func @add_zero_dynamic_no_fold(%x: tensor<?xf32>) -> tensor<4xf32> {
  %z = graph.constant dense<0.0> : tensor<4xf32>
  %0 = graph.add %x, %z : (tensor<?xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @sub_zero
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NOT: graph.sub
// CHECK: return %[[X]]
func.func @sub_zero(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %z = graph.constant dense<0.0> : tensor<3xf32>
  %0 = graph.sub %x, %z : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// 0 - x is not x.
// CHECK-LABEL: func.func @zero_sub_no_fold
// CHECK-SAME: (%[[X:.*]]: tensor<4xi32>)
// CHECK: %[[R:.*]] = graph.sub %{{.*}}, %[[X]]
// CHECK: return %[[R]]
func.func @zero_sub_no_fold(%x: tensor<4xi32>) -> tensor<4xi32> {
  %z = graph.constant dense<0> : tensor<4xi32>
  %0 = graph.sub %z, %x : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// CHECK-LABEL: func.func @mul_one_rhs
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NOT: graph.mul
// CHECK: return %[[X]]
func.func @mul_one_rhs(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %o = graph.constant dense<1.0> : tensor<f32>
  %0 = graph.mul %x, %o : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @mul_one_lhs
// CHECK-SAME: (%[[X:.*]]: tensor<4xi8>)
// CHECK-NOT: graph.mul
// CHECK: return %[[X]]
func.func @mul_one_lhs(%x: tensor<4xi8>) -> tensor<4xi8> {
  %o = graph.constant dense<1> : tensor<4xi8>
  %0 = graph.mul %o, %x : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  return %0 : tensor<4xi8>
}

// -----

// x * 1 where the one broadcasts x to a bigger shape must not fold.
// CHECK-LABEL: func.func @mul_one_bigger_no_fold
// CHECK: %[[R:.*]] = graph.mul %{{.*}}, %{{.*}} : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK: return %[[R]]
func.func @mul_one_bigger_no_fold(%x: tensor<3xf32>) -> tensor<2x3xf32> {
  %o = graph.constant dense<1.0> : tensor<2x3xf32>
  %0 = graph.mul %x, %o : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @div_one
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[I:.*]]: tensor<5xi64>)
// CHECK-NOT: graph.div
// CHECK: return %[[X]], %[[I]]
func.func @div_one(%x: tensor<2x3xf32>, %i: tensor<5xi64>) -> (tensor<2x3xf32>, tensor<5xi64>) {
  %o = graph.constant dense<1.0> : tensor<f32>
  %0 = graph.div %x, %o : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %p = graph.constant dense<1> : tensor<5xi64>
  %1 = graph.div %i, %p : (tensor<5xi64>, tensor<5xi64>) -> tensor<5xi64>
  return %0, %1 : tensor<2x3xf32>, tensor<5xi64>
}

// -----

// 1 / x is not x.
// CHECK-LABEL: func.func @one_div_no_fold
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK: %[[R:.*]] = graph.div %{{.*}}, %[[X]]
// CHECK: return %[[R]]
func.func @one_div_no_fold(%x: tensor<4xf32>) -> tensor<4xf32> {
  %o = graph.constant dense<1.0> : tensor<4xf32>
  %0 = graph.div %o, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @neg_neg
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NOT: graph.neg
// CHECK: return %[[X]]
func.func @neg_neg(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.neg %x : tensor<4xf32>
  %1 = graph.neg %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// A single neg stays.
// CHECK-LABEL: func.func @neg_single
// CHECK-SAME: (%[[X:.*]]: tensor<4xi32>)
// CHECK: %[[R:.*]] = graph.neg %[[X]] : tensor<4xi32>
// CHECK: return %[[R]]
func.func @neg_single(%x: tensor<4xi32>) -> tensor<4xi32> {
  %0 = graph.neg %x : tensor<4xi32>
  return %0 : tensor<4xi32>
}

//===----------------------------------------------------------------------===//
// Dropout and cast
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func.func @dropout_inference
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NOT: graph.dropout
// CHECK: return %[[X]]
func.func @dropout_inference(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = graph.dropout %x {ratio = 0.1 : f64, seed = 3 : i64} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @dropout_ratio_zero
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NOT: graph.dropout
// CHECK: return %[[X]]
func.func @dropout_ratio_zero(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = graph.dropout %x {ratio = 0.0 : f64, training} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Training with a non-zero ratio stays.
// CHECK-LABEL: func.func @dropout_training
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK: %[[R:.*]] = graph.dropout %[[X]] {ratio = 1.000000e-01 : f64, training} : tensor<4x8xf32>
// CHECK: return %[[R]]
func.func @dropout_training(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = graph.dropout %x {ratio = 0.1 : f64, training} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @cast_same_type
// CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32>)
// CHECK-NOT: graph.cast
// CHECK: return %[[X]]
func.func @cast_same_type(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = graph.cast %x to f32 : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// CHECK-LABEL: func.func @cast_other_type
// CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32>)
// CHECK: %[[R:.*]] = graph.cast %[[X]] to f16 : tensor<?x4xf32>
// CHECK: return %[[R]]
func.func @cast_other_type(%x: tensor<?x4xf32>) -> tensor<?x4xf16> {
  %0 = graph.cast %x to f16 : tensor<?x4xf32>
  return %0 : tensor<?x4xf16>
}

//===----------------------------------------------------------------------===//
// Reshape
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func.func @reshape_same_type
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NOT: graph.reshape
// CHECK: return %[[X]]
func.func @reshape_same_type(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = graph.reshape %x [2, -1] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Two static reshapes become one.
// CHECK-LABEL: func.func @reshape_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[R:.*]] = graph.reshape %[[X]] [24] : (tensor<2x3x4xf32>) -> tensor<24xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_reshape(%x: tensor<2x3x4xf32>) -> tensor<24xf32> {
  %0 = graph.reshape %x [6, 4] : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %1 = graph.reshape %0 [24] : (tensor<6x4xf32>) -> tensor<24xf32>
  return %1 : tensor<24xf32>
}

// -----

// A 0 of the outer reshape that copies a static dim of the inner result is
// made explicit.
// CHECK-LABEL: func.func @reshape_reshape_static_copy
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[R:.*]] = graph.reshape %[[X]] [6, 2, 2] : (tensor<2x3x4xf32>) -> tensor<6x2x2xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_reshape_static_copy(%x: tensor<2x3x4xf32>) -> tensor<6x2x2xf32> {
  %0 = graph.reshape %x [6, 4] : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %1 = graph.reshape %0 [0, 2, 2] : (tensor<6x4xf32>) -> tensor<6x2x2xf32>
  return %1 : tensor<6x2x2xf32>
}

// -----

// A reshape and its inverse cancel.
// CHECK-LABEL: func.func @reshape_reshape_cancel
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NOT: graph.reshape
// CHECK: return %[[X]]
func.func @reshape_reshape_cancel(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = graph.reshape %x [6, 4] : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %1 = graph.reshape %0 [2, 3, 4] : (tensor<6x4xf32>) -> tensor<2x3x4xf32>
  return %1 : tensor<2x3x4xf32>
}

// -----

// Splitting heads and merging them back with a dynamic batch dim: the 0 that
// copies the dynamic dim stays a 0 (the inner reshape copied it too), the 0
// that copies the static 16 becomes 16; the single reshape [0, 16, 768] that
// results restates the input's type, so it folds away as well.
// CHECK-LABEL: func.func @reshape_reshape_dynamic_copy
// CHECK-SAME: (%[[X:.*]]: tensor<?x16x768xf32>)
// CHECK-NOT: graph.reshape
// CHECK: return %[[X]]
func.func @reshape_reshape_dynamic_copy(%x: tensor<?x16x768xf32>) -> tensor<?x16x768xf32> {
  %0 = graph.reshape %x [0, 0, 12, 64] : (tensor<?x16x768xf32>) -> tensor<?x16x12x64xf32>
  %1 = graph.reshape %0 [0, 0, 768] : (tensor<?x16x12x64xf32>) -> tensor<?x16x768xf32>
  return %1 : tensor<?x16x768xf32>
}

// -----

// With -1 in the outer reshape and a dynamic dim.
// CHECK-LABEL: func.func @reshape_reshape_dynamic_inferred
// CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32>)
// CHECK-NEXT: %[[R:.*]] = graph.reshape %[[X]] [-1, 2] : (tensor<?x4xf32>) -> tensor<?x2xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_reshape_dynamic_inferred(%x: tensor<?x4xf32>) -> tensor<?x2xf32> {
  %0 = graph.reshape %x [0, 2, 2] : (tensor<?x4xf32>) -> tensor<?x2x2xf32>
  %1 = graph.reshape %0 [-1, 2] : (tensor<?x2x2xf32>) -> tensor<?x2xf32>
  return %1 : tensor<?x2xf32>
}

// -----

// A 0 copying a dynamic dim that the inner reshape did not copy (it came from
// a -1) cannot be expressed on the inner operand: no fold.
// CHECK-LABEL: func.func @reshape_reshape_dynamic_no_fold
// CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32>)
// CHECK: %[[A:.*]] = graph.reshape %[[X]] [-1] : (tensor<?x4xf32>) -> tensor<?xf32>
// CHECK: %[[B:.*]] = graph.reshape %[[A]] [0, 1] : (tensor<?xf32>) -> tensor<?x1xf32>
// CHECK: return %[[B]]
func.func @reshape_reshape_dynamic_no_fold(%x: tensor<?x4xf32>) -> tensor<?x1xf32> {
  %0 = graph.reshape %x [-1] : (tensor<?x4xf32>) -> tensor<?xf32>
  %1 = graph.reshape %0 [0, 1] : (tensor<?xf32>) -> tensor<?x1xf32>
  return %1 : tensor<?x1xf32>
}

//===----------------------------------------------------------------------===//
// Transpose
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func.func @transpose_identity
// CHECK-SAME: (%[[X:.*]]: tensor<2x?x4xf32>)
// CHECK-NOT: graph.transpose
// CHECK: return %[[X]]
func.func @transpose_identity(%x: tensor<2x?x4xf32>) -> tensor<2x?x4xf32> {
  %0 = graph.transpose %x [0, 1, 2] : (tensor<2x?x4xf32>) -> tensor<2x?x4xf32>
  return %0 : tensor<2x?x4xf32>
}

// -----

// Result dim i of the outer transpose is dim inner[outer[i]] of x.
// CHECK-LABEL: func.func @transpose_transpose
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[R:.*]] = graph.transpose %[[X]] [1, 2, 0] : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
// CHECK-NEXT: return %[[R]]
func.func @transpose_transpose(%x: tensor<2x3x4xf32>) -> tensor<3x4x2xf32> {
  %0 = graph.transpose %x [1, 0, 2] : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %1 = graph.transpose %0 [0, 2, 1] : (tensor<3x2x4xf32>) -> tensor<3x4x2xf32>
  return %1 : tensor<3x4x2xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_transpose_cancel
// CHECK-SAME: (%[[X:.*]]: tensor<2x16x12x64xf32>)
// CHECK-NOT: graph.transpose
// CHECK: return %[[X]]
func.func @transpose_transpose_cancel(%x: tensor<2x16x12x64xf32>) -> tensor<2x16x12x64xf32> {
  %0 = graph.transpose %x [0, 2, 1, 3] : (tensor<2x16x12x64xf32>) -> tensor<2x12x16x64xf32>
  %1 = graph.transpose %0 [0, 2, 1, 3] : (tensor<2x12x16x64xf32>) -> tensor<2x16x12x64xf32>
  return %1 : tensor<2x16x12x64xf32>
}

// -----

// A transpose of a matmul operand's last two dims becomes its flag, so the
// GEMM reads the operand in place (a tied LM head: x . wte^T).
// CHECK-LABEL: func.func @matmul_transposed_operand
// CHECK-SAME: (%[[X:.*]]: tensor<2x8x32xf32>, %[[W:.*]]: tensor<100x32xf32>)
// CHECK-NEXT: %[[R:.*]] = graph.matmul %[[X]], %[[W]] {transpose_rhs} : (tensor<2x8x32xf32>, tensor<100x32xf32>) -> tensor<2x8x100xf32>
// CHECK-NEXT: return %[[R]]
func.func @matmul_transposed_operand(%x: tensor<2x8x32xf32>, %w: tensor<100x32xf32>) -> tensor<2x8x100xf32> {
  %t = graph.transpose %w [1, 0] : (tensor<100x32xf32>) -> tensor<32x100xf32>
  %0 = graph.matmul %x, %t : (tensor<2x8x32xf32>, tensor<32x100xf32>) -> tensor<2x8x100xf32>
  return %0 : tensor<2x8x100xf32>
}

// -----

// Both operands, and a flag already set (toggled off); a permutation that
// moves a batch dim stays a transpose.
// CHECK-LABEL: func.func @matmul_transposed_operands
// CHECK-SAME: (%[[A:.*]]: tensor<4x8x16xf32>, %[[B:.*]]: tensor<4x32x8xf32>, %[[C:.*]]: tensor<8x4x16xf32>)
// CHECK-NEXT: %[[P:.*]] = graph.matmul %[[A]], %[[B]] {transpose_lhs, transpose_rhs} : (tensor<4x8x16xf32>, tensor<4x32x8xf32>) -> tensor<4x16x32xf32>
// CHECK-NEXT: %[[T:.*]] = graph.transpose %[[C]] [1, 0, 2]
// CHECK-NEXT: %[[Q:.*]] = graph.matmul %[[T]], %[[A]] {transpose_rhs}
// CHECK-NEXT: return %[[P]], %[[Q]]
func.func @matmul_transposed_operands(%a: tensor<4x8x16xf32>, %b: tensor<4x32x8xf32>, %c: tensor<8x4x16xf32>) -> (tensor<4x16x32xf32>, tensor<4x8x8xf32>) {
  %at = graph.transpose %a [0, 2, 1] : (tensor<4x8x16xf32>) -> tensor<4x16x8xf32>
  %0 = graph.matmul %at, %b {transpose_rhs} : (tensor<4x16x8xf32>, tensor<4x32x8xf32>) -> tensor<4x16x32xf32>
  %ct = graph.transpose %c [1, 0, 2] : (tensor<8x4x16xf32>) -> tensor<4x8x16xf32>
  %bt = graph.transpose %at [0, 2, 1] : (tensor<4x16x8xf32>) -> tensor<4x8x16xf32>
  %1 = graph.matmul %ct, %bt {transpose_rhs} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<4x8x8xf32>
  return %0, %1 : tensor<4x16x32xf32>, tensor<4x8x8xf32>
}

// -----

// (A B)^T = B^T A^T: the product in the transposed layout, when the
// transpose is the matmul's only user.
// CHECK-LABEL: func.func @transpose_of_matmul
// CHECK-SAME: (%[[X:.*]]: tensor<6x32xf32>, %[[D:.*]]: tensor<6x100xf32>)
// CHECK-NEXT: %[[R:.*]] = graph.matmul %[[D]], %[[X]] {transpose_lhs} : (tensor<6x100xf32>, tensor<6x32xf32>) -> tensor<100x32xf32>
// CHECK-NEXT: return %[[R]]
func.func @transpose_of_matmul(%x: tensor<6x32xf32>, %d: tensor<6x100xf32>) -> tensor<100x32xf32> {
  %0 = graph.matmul %x, %d {transpose_lhs} : (tensor<6x32xf32>, tensor<6x100xf32>) -> tensor<32x100xf32>
  %1 = graph.transpose %0 [1, 0] : (tensor<32x100xf32>) -> tensor<100x32xf32>
  return %1 : tensor<100x32xf32>
}

// -----

// A product that is also used as it is keeps its layout.
// CHECK-LABEL: func.func @transpose_of_shared_matmul
// CHECK: %[[M:.*]] = graph.matmul
// CHECK-NEXT: %[[T:.*]] = graph.transpose %[[M]] [1, 0]
// CHECK-NEXT: return %[[M]], %[[T]]
func.func @transpose_of_shared_matmul(%x: tensor<6x32xf32>, %d: tensor<6x100xf32>) -> (tensor<32x100xf32>, tensor<100x32xf32>) {
  %0 = graph.matmul %x, %d {transpose_lhs} : (tensor<6x32xf32>, tensor<6x100xf32>) -> tensor<32x100xf32>
  %1 = graph.transpose %0 [1, 0] : (tensor<32x100xf32>) -> tensor<100x32xf32>
  return %0, %1 : tensor<32x100xf32>, tensor<100x32xf32>
}

// -----

// A permutation and its inverse (not an involution) cancel too.
// CHECK-LABEL: func.func @transpose_transpose_inverse
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NOT: graph.transpose
// CHECK: return %[[X]]
func.func @transpose_transpose_inverse(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = graph.transpose %x [1, 2, 0] : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %1 = graph.transpose %0 [2, 0, 1] : (tensor<3x4x2xf32>) -> tensor<2x3x4xf32>
  return %1 : tensor<2x3x4xf32>
}

//===----------------------------------------------------------------------===//
// Other shape ops
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func.func @broadcast_to_same_type
// CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32>, %[[Y:.*]]: tensor<2x1xi32>)
// CHECK-NOT: graph.broadcast_to
// CHECK: return %[[X]], %[[Y]]
func.func @broadcast_to_same_type(%x: tensor<?x4xf32>, %y: tensor<2x1xi32>) -> (tensor<?x4xf32>, tensor<2x1xi32>) {
  %0 = graph.broadcast_to %x [-1, 4] : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %1 = graph.broadcast_to %y [2, 1] : (tensor<2x1xi32>) -> tensor<2x1xi32>
  return %0, %1 : tensor<?x4xf32>, tensor<2x1xi32>
}

// -----

// CHECK-LABEL: func.func @broadcast_to_bigger
// CHECK-SAME: (%[[X:.*]]: tensor<1x4xf32>)
// CHECK: %[[R:.*]] = graph.broadcast_to %[[X]] [3, 4] : (tensor<1x4xf32>) -> tensor<3x4xf32>
// CHECK: return %[[R]]
func.func @broadcast_to_bigger(%x: tensor<1x4xf32>) -> tensor<3x4xf32> {
  %0 = graph.broadcast_to %x [3, 4] : (tensor<1x4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// CHECK-LABEL: func.func @concat_single
// CHECK-SAME: (%[[X:.*]]: tensor<2x?xf32>)
// CHECK-NOT: graph.concat
// CHECK: return %[[X]]
func.func @concat_single(%x: tensor<2x?xf32>) -> tensor<2x?xf32> {
  %0 = graph.concat %x axis = 1 : (tensor<2x?xf32>) -> tensor<2x?xf32>
  return %0 : tensor<2x?xf32>
}

// -----

// CHECK-LABEL: func.func @slice_everything
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NOT: graph.slice
// CHECK: return %[[X]], %[[X]]
func.func @slice_everything(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = graph.slice %x starts = [0, 0] ends = [4, 8] steps = [1, 1] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = graph.slice %x starts = [-4, 0] ends = [100, 9223372036854775807] steps = [1, 1] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A reversing slice keeps the type but is not the identity.
// CHECK-LABEL: func.func @slice_reverse_no_fold
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK: %[[R:.*]] = graph.slice %[[X]] starts = [-1] ends = [-100] steps = [-1] : (tensor<4xf32>) -> tensor<4xf32>
// CHECK: return %[[R]]
func.func @slice_reverse_no_fold(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.slice %x starts = [-1] ends = [-100] steps = [-1] : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A slice of a dynamic dim may drop elements: no fold.
// CHECK-LABEL: func.func @slice_dynamic_no_fold
// CHECK-SAME: (%[[X:.*]]: tensor<?xf32>)
// CHECK: %[[R:.*]] = graph.slice %[[X]] starts = [1] ends = [9223372036854775807] steps = [1] : (tensor<?xf32>) -> tensor<?xf32>
// CHECK: return %[[R]]
func.func @slice_dynamic_no_fold(%x: tensor<?xf32>) -> tensor<?xf32> {
  %0 = graph.slice %x starts = [1] ends = [9223372036854775807] steps = [1] : (tensor<?xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// CHECK-LABEL: func.func @flatten_same_type
// CHECK-SAME: (%[[X:.*]]: tensor<2x12xf32>, %[[Y:.*]]: tensor<?x1xf32>)
// CHECK-NOT: graph.flatten
// CHECK: return %[[X]], %[[Y]]
func.func @flatten_same_type(%x: tensor<2x12xf32>, %y: tensor<?x1xf32>) -> (tensor<2x12xf32>, tensor<?x1xf32>) {
  %0 = graph.flatten %x axis = 1 : (tensor<2x12xf32>) -> tensor<2x12xf32>
  %1 = graph.flatten %y axis = 2 : (tensor<?x1xf32>) -> tensor<?x1xf32>
  return %0, %1 : tensor<2x12xf32>, tensor<?x1xf32>
}

// -----

// CHECK-LABEL: func.func @flatten_other_type
// CHECK-SAME: (%[[X:.*]]: tensor<2x12xf32>)
// CHECK: %[[R:.*]] = graph.flatten %[[X]] axis = 0 : (tensor<2x12xf32>) -> tensor<1x24xf32>
// CHECK: return %[[R]]
func.func @flatten_other_type(%x: tensor<2x12xf32>) -> tensor<1x24xf32> {
  %0 = graph.flatten %x axis = 0 : (tensor<2x12xf32>) -> tensor<1x24xf32>
  return %0 : tensor<1x24xf32>
}

// -----

// CHECK-LABEL: func.func @pad_zero
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[Y:.*]]: tensor<?x4xi32>)
// CHECK-NOT: graph.pad
// CHECK: return %[[X]], %[[Y]]
func.func @pad_zero(%x: tensor<2x3xf32>, %y: tensor<?x4xi32>) -> (tensor<2x3xf32>, tensor<?x4xi32>) {
  %0 = graph.pad %x pads = [0, 0, 0, 0] mode = constant {value = 5.0 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = graph.pad %y pads = [0, 0, 0, 0] mode = reflect : (tensor<?x4xi32>) -> tensor<?x4xi32>
  return %0, %1 : tensor<2x3xf32>, tensor<?x4xi32>
}

// -----

// CHECK-LABEL: func.func @pad_nonzero
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK: %[[R:.*]] = graph.pad %[[X]] pads = [0, 1, 0, 0] mode = edge : (tensor<2x3xf32>) -> tensor<2x4xf32>
// CHECK: return %[[R]]
func.func @pad_nonzero(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  %0 = graph.pad %x pads = [0, 1, 0, 0] mode = edge : (tensor<2x3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// A reshape that restates a dynamic type with 0s and static dims folds away.
// One spelled with -1 is the identity too, but the fold does not look into
// -1 and keeps it (conservative).
// CHECK-LABEL: func.func @reshape_same_dynamic_type
// CHECK-SAME: (%[[X:.*]]: tensor<?x16xf32>)
// CHECK-NOT: graph.reshape
// CHECK: return %[[X]]
func.func @reshape_same_dynamic_type(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %0 = graph.reshape %x [0, 16] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// CHECK-LABEL: func.func @reshape_same_dynamic_type_kept
// CHECK: graph.reshape %{{.*}} [-1, 16]
func.func @reshape_same_dynamic_type_kept(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %0 = graph.reshape %x [-1, 16] : (tensor<?x16xf32>) -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

// grad_all_reduce is read by autodiff only: it folds to its operand.
// CHECK-LABEL: func.func @grad_all_reduce
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: return %[[X]]
mesh.mesh @mesh(shape = 2)
func.func @grad_all_reduce(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.grad_all_reduce %x on @mesh axes = [0] : tensor<4xf32>
  return %0 : tensor<4xf32>
}
