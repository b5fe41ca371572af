// A transpose and a fill of a constant (a GEMM's zeroed output) run as
// parallel loop nests too, with the results of one thread. Expected values
// from numpy.
// RUN: loomc compile %s -o %t.loom
// RUN: %python -c "import numpy as np; np.save('%t.x.npy', (np.arange(60000, dtype=np.float32).reshape(300, 200) %% 7) - 3); np.save('%t.w.npy', (np.arange(19200, dtype=np.float32).reshape(300, 64) %% 5) - 2)"
// RUN: loom-run %t.loom --in x=%t.x.npy --in w=%t.w.npy --threads 2 --print | FileCheck %s
// RUN: loom-run %t.loom --in x=%t.x.npy --in w=%t.w.npy --threads 1 --print | FileCheck %s
// RUN: loom-opt --loom-cpu-lowering %s | FileCheck %s --check-prefix=IR

// numpy: x.T[0, :4] = -3 1 -2 2; (x.T @ w)[0, :3] = -7 3 3.
// CHECK: xt f32[200, 300] = -3 1 -2 2
// CHECK: y f32[200, 64] = -7 3 3

// The transpose and the fill go through the runtime's parallel loop (as
// named linalg ops they were not split).
// IR-DAG: llvm.func @loom_par_0(
// IR-DAG: llvm.func @loom_par_1(
// IR-NOT: loom_par_2

func.func @f(%x: tensor<300x200xf32> {graph.input = "x"},
             %w: tensor<300x64xf32> {graph.input = "w"})
    -> (tensor<200x300xf32> {graph.output = "xt"}, tensor<200x64xf32> {graph.output = "y"}) {
  %t = graph.transpose %x [1, 0] : (tensor<300x200xf32>) -> tensor<200x300xf32>
  %y = graph.matmul %t, %w : (tensor<200x300xf32>, tensor<300x64xf32>) -> tensor<200x64xf32>
  return %t, %y : tensor<200x300xf32>, tensor<200x64xf32>
}
