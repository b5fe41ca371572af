// graph.sum_squares (the global gradient norm's sum of squares, made by
// --loom-optimizer with fused-norm on the CUDA target): one kernel reads
// every operand once, its blocks walking a table of 65536-element chunks
// of all of them, the operands reached through a pointer table; then one
// block sums the partials in order. Run in the CUDA simulator against
// NumPy.
// RUN: loomc compile %s --target cuda --emit cuda -o %t.cu
// RUN: FileCheck %s < %t.cu
// RUN: loomc compile %s --target cuda -o %t.loom
// RUN: %python -c "import numpy as np; r = np.random.default_rng(0); [np.save('%t.in%%d.npy' %% i, r.standard_normal(s).astype(np.float32)) for i, s in enumerate([(300, 300), (10,), (7, 3)])]"
// RUN: env LOOM_CUDA_CACHE=%t.cache loom-run %t.loom --device cuda-sim --in input_0=%t.in0.npy --in input_1=%t.in1.npy --in input_2=%t.in2.npy --out-dir %t.out
// RUN: %python -c "import numpy as np; x = [np.load('%t.in%%d.npy' %% i).astype(np.float64) for i in range(3)]; want = sum((a * a).sum() for a in x); got = float(np.load('%t.out/output_0.npy')); print('ok' if abs(got - want) <= 1e-5 * want else 'bad %%r %%r' %% (got, want))" | FileCheck %s --check-prefix=NUMPY


// CHECK: __device__ const int fusion_0_operand[4] = {0, 0, 1, 2};
// CHECK: __device__ const long long fusion_0_start[4] = {0, 65536, 0, 0};
// CHECK: __device__ const int fusion_0_count[4] = {65536, 24464, 10, 21};
// CHECK: sum of squares, 4 chunks of 3 tensors
// CHECK: LOOM_KERNEL void fusion_0(void *const *__restrict__ loom_table)
// CHECK: static_cast<const float *>(loom_table[fusion_0_operand[c]]) + fusion_0_start[c]
// CHECK: sum of squares: the partials
// CHECK: launch: grid 1, block 256
// NUMPY: ok
func.func @norm(%a: tensor<300x300xf32>, %b: tensor<10xf32>, %c: tensor<7x3xf32>) -> tensor<f32> {
  %s = graph.sum_squares %a, %b, %c : (tensor<300x300xf32>, tensor<10xf32>, tensor<7x3xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
