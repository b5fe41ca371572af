// Defects of the CUDA emitter found in review (issue 23), each checked on
// the emitted source; NVRTC compiles it in CI (test/compiler/codegen/cuda
// and the training NVRTC checks).
// RUN: loomc compile %s --target cuda --emit cuda --func two_results -o %t.two.cu
// RUN: FileCheck %s --check-prefix=TWO < %t.two.cu
// RUN: loomc compile %s --target cuda --emit cuda --func softmax64 -o %t.sm64.cu
// RUN: FileCheck %s --check-prefix=SM64 < %t.sm64.cu
// RUN: loomc compile %s --target cuda --emit cuda --func norm64 -o %t.ln64.cu
// RUN: FileCheck %s --check-prefix=LN64 < %t.ln64.cu
// RUN: loomc compile %s --target cuda --emit cuda --func relu -o %t.relu.cu
// RUN: FileCheck %s --check-prefix=RELU < %t.relu.cu

// A matmul's result read back by a map kernel that writes two results:
// the read-back value's override survives the vector loop (it was erased,
// and the second result could not read the matmul).
// TWO: fusion_0_gemm: cuBLASLt matmul m=8 n=32 k=16
// TWO: LOOM_KERNEL void fusion_0(const float *__restrict__ in0, const float *__restrict__ in1, float *out2, float *out3)
// TWO: loom::tanh_(
// TWO: loom::st(&o1.v[l],
// TWO: loom::st(&o2.v[l],
func.func @two_results(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %bias: tensor<32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  %0 = graph.matmul %a, %b : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %1 = graph.tanh %0 : tensor<8x32xf32>
  %2 = graph.add %1, %bias : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  return %1, %2 : tensor<8x32xf32>, tensor<8x32xf32>
}

// f64 softmax and layer norm keep their statistics in double (they were
// float).
// SM64: loom::maxsum_t<double> acc{{[0-9]+}} = loom::maxsum_t<double>{
// SM64: loom::combine_maxsum(acc{{[0-9]+}}, loom::maxsum_t<double>{v{{[0-9]+}}, 1.0});
// SM64: double inv{{[0-9]+}} = 1.0 / acc{{[0-9]+}}.s;
func.func @softmax64(%x: tensor<4x64xf64>) -> tensor<4x64xf64> {
  %0 = graph.softmax %x {axis = 1 : i64} : (tensor<4x64xf64>) -> tensor<4x64xf64>
  return %0 : tensor<4x64xf64>
}
// LN64: loom::welford_t<double> acc{{[0-9]+}} = loom::welford_t<double>{
// LN64: double mean{{[0-9]+}} = acc{{[0-9]+}}.mean;
// LN64: double rstd{{[0-9]+}} = loom::rsqrt_(
func.func @norm64(%x: tensor<4x64xf64>, %g: tensor<64xf64>, %b: tensor<64xf64>) -> tensor<4x64xf64> {
  %0 = graph.layer_norm %x, %g, %b {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<4x64xf64>, tensor<64xf64>, tensor<64xf64>) -> tensor<4x64xf64>
  return %0 : tensor<4x64xf64>
}

// ReLU keeps NaN (x > 0 ? x : 0 made it 0).
// RELU: float v[[X:[0-9]+]] = loom::ld(a0.v[l]);
// RELU-NEXT: float v{{[0-9]+}} = v[[X]] < 0.f ? 0.f : v[[X]];
func.func @relu(%x: tensor<16xf32>) -> tensor<16xf32> {
  %0 = graph.relu %x : tensor<16xf32>
  return %0 : tensor<16xf32>
}
