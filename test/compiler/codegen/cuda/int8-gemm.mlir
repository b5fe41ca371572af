// Integer matmuls on the CUDA target (CudaEmitGemm.cpp): cuBLASLt's int8
// GEMM (s8 x s8 -> s32) with kernels for what it cannot do, or an exact
// loop where its layout rules do not hold.
// RUN: loomc compile %s --target cuda --emit cuda --func uu -o %t.uu.cu
// RUN: FileCheck %s --check-prefix=UU < %t.uu.cu
// RUN: loomc compile %s --target cuda --emit cuda --func ss_weight -o %t.ss.cu
// RUN: FileCheck %s --check-prefix=SS < %t.ss.cu
// RUN: loomc compile %s --target cuda --emit cuda --func odd_k -o %t.odd.cu
// RUN: FileCheck %s --check-prefix=ODD < %t.odd.cu
// RUN: loomc compile %s --target cuda --emit cuda --func qdq -o %t.qdq.cu
// RUN: FileCheck %s --check-prefix=QDQ < %t.qdq.cu
// RUN: loomc compile %s --target cuda --emit cuda --func i32 -o %t.i32.cu
// RUN: FileCheck %s --check-prefix=I32 < %t.i32.cu
// RUN: loomc compile %s --target cuda --emit cuda --func epilogue -o %t.ep.cu
// RUN: loomc compile %s --target cuda --emit cuda --func trans -o %t.trans.cu
// RUN: FileCheck %s --check-prefix=TRANS < %t.trans.cu
// RUN: FileCheck %s --check-prefix=EPILOGUE < %t.ep.cu

// u8 x u8 with zero points 3 and 7: each operand is read less 128 into s8
// rows of K (the rhs, stored K x N, transposed to N x K) with its row sums;
// the GEMM writes scratch; the map kernel subtracts the zero points' terms.
// UU: // fusion_0 (matmul): {{.*}}matmul_integer {{.*}}[lhs to s8 rows]
// UU-NEXT: // launch: grid 1, block 256
// UU-NEXT: LOOM_KERNEL void fusion_0(const unsigned char *__restrict__ in0, signed char *out1, int *out2)
// UU: for (loom::i64 c = 0; c < 64; ++c)
// UU: int [[S:s[0-9]+]] = {{.*}} - 128;
// UU: loom::st(out1 + row * 64 + c, (signed char)[[S]]);
// UU: [[SUM:sum[0-9]+]] += [[S]];
// UU: loom::st(out2 + row, [[SUM]]);
// UU: // fusion_0 (matmul): {{.*}}matmul_integer {{.*}}[rhs to s8 rows]
// UU: LOOM_KERNEL void fusion_0_1(const unsigned char *__restrict__ in0, signed char *out1, int *out2)
// UU: loom::ld(in0[c * 32 + x{{[0-9]+}}])
// UU: // fusion_0_gemm: cuBLASLt int8 matmul m=8 n=32 k=64 batch=1 (s8 x s8 -> s32, CUBLAS_COMPUTE_32I; A M x K, B N x K), zero points corrected in the map kernel
// UU: LOOM_KERNEL void fusion_0_2(
// UU: (loom::i64)3 - 128;
// UU: (loom::i64)7 - 128;
// UU: + 64 * za{{[0-9]+}} * zb{{[0-9]+}})
func.func @uu(%a: tensor<8x64xui8>, %b: tensor<64x32xui8>) -> tensor<8x32xi32> {
  %za = graph.constant dense<3> : tensor<ui8>
  %zb = graph.constant dense<7> : tensor<ui8>
  %0 = graph.matmul_integer %a, %b, %za, %zb : (tensor<8x64xui8>, tensor<64x32xui8>, tensor<ui8>, tensor<ui8>) -> tensor<8x32xi32>
  return %0 : tensor<8x32xi32>
}

// s8 x s8 stored as cuBLASLt wants (the weight N x K, transpose_rhs) with
// zero points 0: the GEMM alone, into the result.
// SS: // fusion_0_gemm: cuBLASLt int8 matmul m=6 n=16 k=32 batch=2
// SS-NOT: LOOM_KERNEL
func.func @ss_weight(%a: tensor<2x6x32xi8>, %w: tensor<2x16x32xi8>) -> tensor<2x6x16xi32> {
  %z = graph.constant dense<0> : tensor<i8>
  %0 = graph.matmul_integer %a, %w, %z, %z {transpose_rhs} : (tensor<2x6x32xi8>, tensor<2x16x32xi8>, tensor<i8>, tensor<i8>) -> tensor<2x6x16xi32>
  return %0 : tensor<2x6x16xi32>
}

// K = 30 is no multiple of 4 (cuBLASLt's int8 rule): an exact loop over K
// per output, in the map kernel.
// ODD-NOT: cuBLASLt
// ODD: for (loom::i64 r{{[0-9]+}} = 0; r{{[0-9]+}} < 30; ++r{{[0-9]+}})
// ODD: += (loom::u64)(loom::i64)((
func.func @odd_k(%a: tensor<4x30xui8>, %b: tensor<30x8xi8>) -> tensor<4x8xi32> {
  %za = graph.constant dense<128> : tensor<ui8>
  %zb = graph.constant dense<1> : tensor<i8>
  %0 = graph.matmul_integer %a, %b, %za, %zb : (tensor<4x30xui8>, tensor<30x8xi8>, tensor<ui8>, tensor<i8>) -> tensor<4x8xi32>
  return %0 : tensor<4x8xi32>
}

// The QDQ form: --loom-integer-matmul runs in the CUDA pipeline, so the
// matmul of dequantized 8-bit tensors is the int8 GEMM; the activation's
// zero point 130 needs the rhs's row sums (its own zero point is 0: no
// sums of the lhs). --loom-fusion puts the product's dequantization
// (cast, the scales) in the matmul_integer's region: the map kernel
// that corrects the product writes the f32 result, no i32 tensor between.
// QDQ: [rhs to s8 rows]
// QDQ: loom::st(out{{[0-9]+}} + row, sum{{[0-9]+}});
// QDQ: cuBLASLt int8 matmul m=4 n=8 k=16 batch=1
// QDQ: // fusion_0 (matmul): {{.*}}matmul_integer cast mul {{.*}}[map]
// QDQ: LOOM_KERNEL void fusion_0_2(const int *__restrict__ in0, const int *__restrict__ in1, float *out2)
// QDQ: (loom::i64)130 - 128;
// QDQ-NOT: LOOM_KERNEL
func.func @qdq(%x: tensor<4x16xui8>, %w: tensor<16x8xi8>) -> tensor<4x8xf32> {
  %sx = graph.constant dense<0.5> : tensor<f32>
  %zx = graph.constant dense<130> : tensor<ui8>
  %sw = graph.constant dense<0.25> : tensor<f32>
  %zw = graph.constant dense<0> : tensor<i8>
  %xd = graph.dequantize %x, %sx, %zx : (tensor<4x16xui8>, tensor<f32>, tensor<ui8>) -> tensor<4x16xf32>
  %wd = graph.dequantize %w, %sw, %zw : (tensor<16x8xi8>, tensor<f32>, tensor<i8>) -> tensor<16x8xf32>
  %0 = graph.matmul %xd, %wd : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// graph.matmul of i32 (MatMulInteger with per-row zero points): the exact
// loop, products and sums wrapping at 32 bits as on the CPU.
// I32-NOT: cuBLASLt
// I32: += (loom::u64)(loom::i64){{.*}} * (loom::u64)(loom::i64)
func.func @i32(%a: tensor<3x5xi32>, %b: tensor<5x2xi32>) -> tensor<3x2xi32> {
  %0 = graph.matmul %a, %b : (tensor<3x5xi32>, tensor<5x2xi32>) -> tensor<3x2xi32>
  return %0 : tensor<3x2xi32>
}

// A region that holds the requantization after the product (here made by
// hand, as --loom-fusion makes one): the
// zero-point corrections and the requantization are one map kernel, the
// corrected product read from the GEMM's scratch, never stored as i32
// for the quantized output. int8-matmul-cuda.test runs it.
// EPILOGUE: cuBLASLt int8 matmul m=8 n=32 k=64 batch=1
// EPILOGUE: // fusion_0 (other): {{.*}}matmul_integer cast mul quantize {{.*}}[map]
// EPILOGUE: int [[P:p[0-9]+]] = (int)(d{{[0-9]+}} - za{{[0-9]+}} * loom::ld(
// EPILOGUE-NEXT: float v{{[0-9]+}} = (float)([[P]]);
// EPILOGUE: loom::round_(
func.func @epilogue(%a: tensor<8x64xui8>, %b: tensor<64x32xi8>) -> (tensor<8x32xui8>, tensor<8x32xi32>) {
  %r:2 = kernel.fusion "fusion_0" other(%a, %b) : (tensor<8x64xui8>, tensor<64x32xi8>) -> (tensor<8x32xui8>, tensor<8x32xi32>) {
  ^bb0(%x: tensor<8x64xui8>, %w: tensor<64x32xi8>):
    %za = graph.constant dense<3> : tensor<ui8>
    %zb = graph.constant dense<-5> : tensor<i8>
    %s = graph.constant dense<0.001> : tensor<f32>
    %zy = graph.constant dense<100> : tensor<ui8>
    %sy = graph.constant dense<0.5> : tensor<f32>
    %p = graph.matmul_integer %x, %w, %za, %zb : (tensor<8x64xui8>, tensor<64x32xi8>, tensor<ui8>, tensor<i8>) -> tensor<8x32xi32>
    %f = graph.cast %p to f32 : tensor<8x32xi32>
    %m = graph.mul %f, %s : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
    %q = graph.quantize %m, %sy, %zy : (tensor<8x32xf32>, tensor<f32>, tensor<ui8>) -> tensor<8x32xui8>
    kernel.yield %q, %p : tensor<8x32xui8>, tensor<8x32xi32>
  }
  return %r#0, %r#1 : tensor<8x32xui8>, tensor<8x32xi32>
}

// A transposed lhs with batches, a transposed u8 rhs shared by them: the
// lhs is laid out M x K per batch (its row sums too), the rhs is already
// N x K but u8 (read less 128); the GEMM's batches read one rhs.
// int8-matmul-cuda.test runs it.
// TRANS: [lhs to s8 rows]
// TRANS: loom::ld(in0[x{{[0-9]+}} * 320 + c * 5 + x{{[0-9]+}}])
// TRANS: [rhs to s8 rows]
// TRANS: cuBLASLt int8 matmul m=5 n=12 k=64 batch=3
func.func @trans(%a: tensor<3x64x5xi8>, %b: tensor<12x64xui8>) -> tensor<3x5x12xi32> {
  %za = graph.constant dense<-7> : tensor<i8>
  %zb = graph.constant dense<250> : tensor<ui8>
  %0 = graph.matmul_integer %a, %b, %za, %zb {transpose_lhs, transpose_rhs} : (tensor<3x64x5xi8>, tensor<12x64xui8>, tensor<i8>, tensor<ui8>) -> tensor<3x5x12xi32>
  return %0 : tensor<3x5x12xi32>
}
