// The CUDA emitter (loomc --target cuda --emit cuda): one kernel per
// fused region, named after it, with its launch.
// RUN: loomc compile %s --target cuda --emit cuda --func chain -o %t.chain.cu
// RUN: FileCheck %s --check-prefix=CHAIN < %t.chain.cu
// RUN: loomc compile %s --target cuda --emit cuda --func rows -o %t.rows.cu
// RUN: FileCheck %s --check-prefix=ROWS < %t.rows.cu
// RUN: loomc compile %s --target cuda --emit cuda --func columns -o %t.cols.cu
// RUN: FileCheck %s --check-prefix=COLS < %t.cols.cu
// RUN: loomc compile %s --target cuda --emit cuda --func softmax -o %t.sm.cu
// RUN: FileCheck %s --check-prefix=SOFTMAX < %t.sm.cu
// RUN: loomc compile %s --target cuda --emit cuda --func ln_gelu_residual -o %t.ln.cu
// RUN: FileCheck %s --check-prefix=LN < %t.ln.cu
// RUN: loomc compile %s --target cuda --emit cuda --func linear -o %t.mm.cu
// RUN: FileCheck %s --check-prefix=GEMM < %t.mm.cu
// RUN: loomc compile %s --target cuda --emit cuda --func half -o %t.half.cu
// RUN: FileCheck %s --check-prefix=HALF < %t.half.cu
// RUN: loomc compile %s --target cuda --emit cuda --func gather_rows -o %t.gather.cu
// RUN: FileCheck %s --check-prefix=GATHER < %t.gather.cu
// RUN: not loomc compile %s --target cuda --emit cuda --func conv -o %t.conv.cu 2>&1 | FileCheck %s --check-prefix=CONV
// RUN: not loomc compile %s --target cuda --func chain -o %t.loom --arch 80 2>&1 | FileCheck %s --check-prefix=ARCH

// An elementwise chain with a broadcast bias: one grid-stride loop, 4
// elements per iteration with vector loads of the same-shape input; the
// bias is read at its broadcast index.
// CHAIN: #include <cuda_fp16.h>
// CHAIN: // ---- end of the loom prelude
// CHAIN: // ---- region fusion_0
// CHAIN: // fusion_0 (elementwise): add tanh mul
// CHAIN-NEXT: // launch: grid 1, block 256
// CHAIN-NEXT: LOOM_KERNEL void fusion_0(const float *__restrict__ in0, const float *__restrict__ in1, float *out2)
// CHAIN: for (loom::i64 j = blockIdx.x * (loom::i64)blockDim.x + threadIdx.x; j < 16; j += (loom::i64)gridDim.x * blockDim.x)
// CHAIN: loom::vec<float, 4> a{{[0-9]+}} = *reinterpret_cast<const loom::vec<float, 4> *>(in0 + 4 * j);
// CHAIN: #pragma unroll
// CHAIN: loom::i64 [[COL:x[0-9]+]] = (i) % 16;
// CHAIN: loom::ld(in1[[[COL]]])
// CHAIN: loom::tanh_(
// CHAIN: *reinterpret_cast<loom::vec<float, 4> *>(out2 + 4 * j) =
func.func @chain(%x: tensor<4x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = graph.add %x, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %1 = graph.tanh %0 : tensor<4x16xf32>
  %2 = graph.mul %1, %x : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %2 : tensor<4x16xf32>
}

// A row-wise reduction with a prologue over long rows: one block per row,
// warp shuffles and shared memory; thread 0 writes the row's result.
// ROWS: // fusion_0 (reduction): exp reduce_sum {{.*}}[rows]
// ROWS-NEXT: // launch: grid 8, block 256
// ROWS: __shared__ float sh[32];
// ROWS: for (loom::i64 row = blockIdx.x; row < 8; row += gridDim.x)
// ROWS: for (loom::i64 r = threadIdx.x; r < 2048; r += blockDim.x)
// ROWS: loom::exp_(
// ROWS: loom::block_reduce(
// ROWS: if (threadIdx.x == 0)
func.func @rows(%x: tensor<8x2048xf32>) -> tensor<8xf32> {
  %0 = graph.exp %x : tensor<8x2048xf32>
  %1 = graph.reduce_sum %0 axes = [1] : (tensor<8x2048xf32>) -> tensor<8xf32>
  return %1 : tensor<8xf32>
}

// A column-wise reduction: one thread per output, a loop down the column
// (consecutive threads read consecutive addresses).
// COLS: // fusion_0 (reduction): reduce_max {{.*}}[map]
// COLS: for (loom::i64 r{{[0-9]+}} = 0; r{{[0-9]+}} < 512; ++r{{[0-9]+}})
// COLS: loom::max_(
func.func @columns(%x: tensor<512x64xf32>) -> tensor<64xf32> {
  %0 = graph.reduce_max %x axes = [0] : (tensor<512x64xf32>) -> tensor<64xf32>
  return %0 : tensor<64xf32>
}

// Softmax over short rows (up to 1024 elements): a warp per row, 8 rows a
// block, combined by shuffles alone; one pass with an online max and sum,
// then the row's outputs in the same kernel.
// SOFTMAX: // fusion_0 (softmax): softmax {{.*}}[warp rows]
// SOFTMAX-NEXT: // launch: grid 2, block 256
// SOFTMAX-NOT: __shared__
// SOFTMAX: for (loom::i64 row = blockIdx.x * 8ll + (threadIdx.x >> 5); row < 16; row += (loom::i64)gridDim.x * 8)
// SOFTMAX: for (loom::i64 r = (threadIdx.x & 31); r < 128; r += 32)
// SOFTMAX: loom::combine_maxsum(
// SOFTMAX: loom::warp_reduce(
// SOFTMAX: loom::exp_(
// SOFTMAX-NOT: LOOM_KERNEL
func.func @softmax(%x: tensor<16x128xf32>) -> tensor<16x128xf32> {
  %0 = graph.softmax %x {axis = 1 : i64} : (tensor<16x128xf32>) -> tensor<16x128xf32>
  return %0 : tensor<16x128xf32>
}

// LayerNorm + GELU + residual: a warp per row (Welford statistics), the
// epilogue in the same kernel.
// LN: // fusion_0 (norm): layer_norm gelu add {{.*}}[warp rows]
// LN-NEXT: // launch: grid 4, block 256
// LN-NOT: __shared__
// LN: loom::combine_welford(
// LN: loom::warp_reduce(
// LN: loom::rsqrt_(
// LN: loom::gelu_tanh_(
// LN-NOT: LOOM_KERNEL
func.func @ln_gelu_residual(%x: tensor<32x768xf32>, %g: tensor<768xf32>, %b: tensor<768xf32>) -> tensor<32x768xf32> {
  %0 = graph.layer_norm %x, %g, %b {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<32x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<32x768xf32>
  %1 = graph.gelu %0 approximate = tanh : tensor<32x768xf32>
  %2 = graph.add %1, %x : (tensor<32x768xf32>, tensor<32x768xf32>) -> tensor<32x768xf32>
  return %2 : tensor<32x768xf32>
}

// A matmul with bias and ReLU is one cuBLASLt call with its epilogue; no
// hand-written GEMM.
// GEMM: // fusion_0_gemm_epilogue: cuBLASLt matmul m=4 n=16 k=8 batch=1 trans_a=false trans_b=false f32, epilogue bias+relu
// GEMM-NOT: LOOM_KERNEL
func.func @linear(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = graph.add %0, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %2 = graph.relu %1 : tensor<4x16xf32>
  return %2 : tensor<4x16xf32>
}

// f16 and bf16 are stored in 16 bits and computed in f32; each op's
// result is rounded to its type.
// HALF: LOOM_KERNEL void fusion_0(const __half *__restrict__ in0, const __nv_bfloat16 *__restrict__ in1, __nv_bfloat16 *out2)
// HALF: loom::vec<__half, 4>
// HALF: loom::rnd_f16(
// HALF: loom::rnd_bf16(
func.func @half(%x: tensor<64xf16>, %y: tensor<64xbf16>) -> tensor<64xbf16> {
  %0 = graph.exp %x : tensor<64xf16>
  %1 = graph.cast %0 to bf16 : tensor<64xf16>
  %2 = graph.mul %1, %y : (tensor<64xbf16>, tensor<64xbf16>) -> tensor<64xbf16>
  return %2 : tensor<64xbf16>
}

// A gather is index arithmetic inside the kernel; a bad index is clamped,
// never read out of bounds.
// GATHER: loom::index_(
func.func @gather_rows(%t: tensor<100x32xf32>, %ids: tensor<4xi64>) -> tensor<4x32xf32> {
  %0 = graph.gather %t, %ids axis = 0 : (tensor<100x32xf32>, tensor<4xi64>) -> tensor<4x32xf32>
  return %0 : tensor<4x32xf32>
}

// An op the emitter does not cover is an error naming it and where.
// CONV: error: CUDA codegen: graph.conv is not supported yet (convolution (im2col + cuBLASLt) is not emitted yet) [{{.*}}emit-cuda.mlir:[[@LINE+2]]:8]
func.func @conv(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = graph.conv %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// ARCH: error: --arch: '80' is not an arch like sm_80 or sm_90
