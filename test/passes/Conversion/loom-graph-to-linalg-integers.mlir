// RUN: loom-opt --loom-graph-to-linalg %s | FileCheck %s

// CHECK: #[[CHANNEL:.*]] = affine_map<(d0, d1, d2) -> (0, d1, 0)>

// Unsigned integer types pick unsigned arithmetic, and no unsigned type is
// left after the lowering: the signature, the bodies and the constants are
// signless of the same width. The numbers are checked by the ONNX
// conformance suite (the uint8 ... uint64 node tests, onnx-node-run).

// CHECK-LABEL: func.func @unsigned_ops
// CHECK-SAME: (%{{.*}}: tensor<4xi8>, %{{.*}}: tensor<4xi8>) -> (tensor<4xi8>, tensor<4xi1>, tensor<4xf32>, tensor<4xi32>, tensor<4xi8>, tensor<4xi8>)
// CHECK: arith.divui
// CHECK: arith.cmpi ult
// CHECK: arith.uitofp %{{.*}} : i8 to f32
// CHECK: arith.extui %{{.*}} : i8 to i32
// CHECK: arith.maxui
// CHECK: arith.remui
// CHECK-NOT: ui8
// CHECK-NOT: arith.divsi
func.func @unsigned_ops(%a: tensor<4xui8>, %b: tensor<4xui8>)
    -> (tensor<4xui8>, tensor<4xi1>, tensor<4xf32>, tensor<4xi32>, tensor<4xui8>, tensor<4xui8>) {
  %0 = graph.div %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %1 = graph.compare lt, %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xi1>
  %2 = graph.cast %a to f32 : tensor<4xui8>
  %3 = graph.cast %a to i32 : tensor<4xui8>
  %4 = graph.max %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %5 = graph.mod %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  return %0, %1, %2, %3, %4, %5 : tensor<4xui8>, tensor<4xi1>, tensor<4xf32>, tensor<4xi32>, tensor<4xui8>, tensor<4xui8>
}

// Signed narrow integers keep signed arithmetic; a float to unsigned cast
// is fptoui, and a cast between i8 and ui8 keeps the bits.
// CHECK-LABEL: func.func @signed_and_casts
// CHECK: arith.divsi %{{.*}} : i16
// CHECK: arith.fptoui %{{.*}} : f32 to i16
// CHECK: arith.bitcast %{{.*}} : i8 to i8
func.func @signed_and_casts(%a: tensor<3xi16>, %f: tensor<3xf32>, %c: tensor<3xi8>)
    -> (tensor<3xi16>, tensor<3xui16>, tensor<3xui8>) {
  %0 = graph.div %a, %a : (tensor<3xi16>, tensor<3xi16>) -> tensor<3xi16>
  %1 = graph.cast %f to ui16 : tensor<3xf32>
  %2 = graph.cast %c to ui8 : tensor<3xi8>
  return %0, %1, %2 : tensor<3xi16>, tensor<3xui16>, tensor<3xui8>
}

// The max of ui32 starts from 0, not from the signed minimum.
// CHECK-LABEL: func.func @unsigned_max
// CHECK: arith.constant 0 : i32
// CHECK: arith.maxui
func.func @unsigned_max(%a: tensor<2x3xui32>) -> tensor<2xui32> {
  %0 = graph.reduce_max %a axes = [1] : (tensor<2x3xui32>) -> tensor<2xui32>
  return %0 : tensor<2xui32>
}

// quantize: x / scale rounded to nearest even, plus the zero point,
// clamped to [0, 255] and converted unsigned; the per-channel scale is
// read along dim 1.
// CHECK-LABEL: func.func @quantize
// CHECK: indexing_maps = [#{{.*}}, #[[CHANNEL]], #[[CHANNEL]], #{{.*}}]
// CHECK: arith.divf
// CHECK: math.roundeven
// CHECK: arith.uitofp
// CHECK-DAG: %[[HI:.*]] = arith.constant 2.550000e+02 : f32
// CHECK-DAG: %[[LO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[M:.*]] = arith.maximumf %{{.*}}, %[[LO]]
// CHECK: arith.minimumf %[[M]], %[[HI]]
// CHECK: arith.fptoui %{{.*}} : f32 to i8
func.func @quantize(%x: tensor<2x3x4xf32>, %s: tensor<1x3x1xf32>, %z: tensor<1x3x1xui8>) -> tensor<2x3x4xui8> {
  %0 = graph.quantize %x, %s, %z : (tensor<2x3x4xf32>, tensor<1x3x1xf32>, tensor<1x3x1xui8>) -> tensor<2x3x4xui8>
  return %0 : tensor<2x3x4xui8>
}

// dequantize: (x - zero point) in i32, then times the scale.
// CHECK-LABEL: func.func @dequantize
// CHECK: arith.extsi %{{.*}} : i8 to i32
// CHECK: arith.subi
// CHECK: arith.sitofp %{{.*}} : i32 to f32
// CHECK: arith.mulf
func.func @dequantize(%x: tensor<2x3xi8>, %s: tensor<f32>, %z: tensor<i8>) -> tensor<2x3xf32> {
  %0 = graph.dequantize %x, %s, %z : (tensor<2x3xi8>, tensor<f32>, tensor<i8>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// Shifts: an amount of the bit width or more (compared unsigned) gives 0,
// or the sign for an arithmetic right shift; unsigned types shift right
// logically.
// CHECK-LABEL: func.func @shifts
// CHECK: %[[OVER:.*]] = arith.cmpi uge, %{{.*}}, %{{.*}} : i8
// CHECK: %[[SHL:.*]] = arith.shli
// CHECK: arith.select %[[OVER]], %{{.*}}, %[[SHL]]
// CHECK: arith.shrui
// CHECK: %[[CAP:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : i16
// CHECK: arith.shrsi %{{.*}}, %[[CAP]] : i16
// CHECK: arith.andi
// CHECK: arith.xori %{{.*}}, %{{.*}} : i32
func.func @shifts(%a: tensor<4xui8>, %b: tensor<4xui8>, %c: tensor<4xi16>, %d: tensor<4xi32>)
    -> (tensor<4xui8>, tensor<4xui8>, tensor<4xi16>, tensor<4xi32>, tensor<4xi32>) {
  %0 = graph.shift_left %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %1 = graph.shift_right %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %2 = graph.shift_right %c, %c : (tensor<4xi16>, tensor<4xi16>) -> tensor<4xi16>
  %3 = graph.bit_and %d, %d : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %4 = graph.bit_not %d : tensor<4xi32>
  return %0, %1, %2, %3, %4 : tensor<4xui8>, tensor<4xui8>, tensor<4xi16>, tensor<4xi32>, tensor<4xi32>
}

// Constants of unsigned types keep their bytes under the signless type
// (200 reads as -56 in i8, 128 as -128).
// CHECK-LABEL: func.func @unsigned_constants
// CHECK-DAG: arith.constant dense<[-56, 100]> : tensor<2xi8>
// CHECK-DAG: arith.constant dense<-128> : tensor<i8>
// CHECK-NOT: ui8
func.func @unsigned_constants(%x: tensor<2xf32>) -> (tensor<2xui8>, tensor<2xf32>) {
  %c = graph.constant dense<[200, 100]> : tensor<2xui8>
  %s = graph.constant dense<0.5> : tensor<f32>
  %z = graph.constant dense<128> : tensor<ui8>
  %d = graph.dequantize %c, %s, %z : (tensor<2xui8>, tensor<f32>, tensor<ui8>) -> tensor<2xf32>
  return %c, %d : tensor<2xui8>, tensor<2xf32>
}

// An integer matmul reads its 8-bit operands and zero points as they are:
// one contraction over [batch, m, n, k] widening each by its own signedness
// (ui8 zero-extended, i8 sign-extended) and subtracting the zero point,
// in i32; --loom-cpu-library-calls hands it to the integer GEMM.
// CHECK-LABEL: func.func @matmul_integer
// CHECK-SAME: (%[[A:.*]]: tensor<2x4x8xi8>, %[[B:.*]]: tensor<8x16xi8>, %[[ZA:.*]]: tensor<i8>, %[[ZB:.*]]: tensor<i8>) -> tensor<2x4x16xi32>
// CHECK: %[[FILL:.*]] = linalg.fill
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[A]], %[[B]], %[[ZA]], %[[ZB]] : tensor<2x4x8xi8>, tensor<8x16xi8>, tensor<i8>, tensor<i8>) outs(%[[FILL]] : tensor<2x4x16xi32>)
// CHECK-NEXT: ^bb0(%[[X:.*]]: i8, %[[Y:.*]]: i8, %[[U:.*]]: i8, %[[V:.*]]: i8, %[[ACC:.*]]: i32):
// CHECK-NEXT: %[[XW:.*]] = arith.extui %[[X]] : i8 to i32
// CHECK-NEXT: %[[UW:.*]] = arith.extui %[[U]] : i8 to i32
// CHECK-NEXT: %[[XS:.*]] = arith.subi %[[XW]], %[[UW]] : i32
// CHECK-NEXT: %[[YW:.*]] = arith.extsi %[[Y]] : i8 to i32
// CHECK-NEXT: %[[VW:.*]] = arith.extsi %[[V]] : i8 to i32
// CHECK-NEXT: %[[YS:.*]] = arith.subi %[[YW]], %[[VW]] : i32
// CHECK-NEXT: %[[P:.*]] = arith.muli %[[XS]], %[[YS]] : i32
// CHECK-NEXT: %[[S:.*]] = arith.addi %[[ACC]], %[[P]] : i32
// CHECK-NEXT: linalg.yield %[[S]] : i32
func.func @matmul_integer(%a: tensor<2x4x8xui8>, %b: tensor<8x16xi8>, %za: tensor<ui8>, %zb: tensor<i8>) -> tensor<2x4x16xi32> {
  %y = graph.matmul_integer %a, %b, %za, %zb : (tensor<2x4x8xui8>, tensor<8x16xi8>, tensor<ui8>, tensor<i8>) -> tensor<2x4x16xi32>
  return %y : tensor<2x4x16xi32>
}
