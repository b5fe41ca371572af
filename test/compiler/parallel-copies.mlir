// A transpose and a fill of a constant (a reduction's zeroed output) run as
// parallel loop nests too, with the results of one thread. Expected values
// from numpy.
// RUN: loomc compile %s -o %t.loom
// RUN: %python -c "import numpy as np; np.save('%t.x.npy', (np.arange(60000, dtype=np.float32).reshape(300, 200) %% 7) - 3)"
// RUN: loom-run %t.loom --in x=%t.x.npy --threads 2 --print | FileCheck %s
// RUN: loom-run %t.loom --in x=%t.x.npy --threads 1 --print | FileCheck %s
// RUN: loom-opt --loom-cpu-lowering %s | FileCheck %s --check-prefix=IR

// numpy: x.T[0, :4] = -3 1 -2 2; x.T.sum(axis=1)[:4] = 0 -1 -2 -3.
// CHECK: xt f32[200, 300] = -3 1 -2 2
// CHECK: rows f32[200] = 0 -1 -2 -3

// The transpose, the fill and the row reduction go through the runtime's
// parallel loop (the first two were not split as named linalg ops).
// IR-DAG: llvm.func @loom_par_0(
// IR-DAG: llvm.func @loom_par_1(
// IR-DAG: llvm.func @loom_par_2(
// IR-NOT: loom_par_3

func.func @f(%x: tensor<300x200xf32> {graph.input = "x"})
    -> (tensor<200x300xf32> {graph.output = "xt"}, tensor<200xf32> {graph.output = "rows"}) {
  %t = graph.transpose %x [1, 0] : (tensor<300x200xf32>) -> tensor<200x300xf32>
  %r = graph.reduce_sum %t axes = [1] : (tensor<200x300xf32>) -> tensor<200xf32>
  return %t, %r : tensor<200x300xf32>, tensor<200xf32>
}
