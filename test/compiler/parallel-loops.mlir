// Loop nests run in chunks on several threads give the same results as on
// one: a dynamic batch of 1 (the split goes to the static dim of 300), a
// mask that reads the loop index (linalg.index shifted per chunk), and a
// row reduction. Expected values from numpy.
// RUN: loomc compile %s -o %t.loom
// RUN: %python -c "import numpy as np; np.save('%t.x.npy', (np.arange(90000, dtype=np.float32).reshape(1, 300, 300) %% 7) - 3)"
// RUN: loom-run %t.loom --in x=%t.x.npy --threads 2 --print | FileCheck %s
// RUN: loom-run %t.loom --in x=%t.x.npy --threads 1 --print | FileCheck %s
// RUN: loom-opt --loom-cpu-lowering %s | FileCheck %s --check-prefix=IR

// numpy: np.tril(x).sum() = 301; np.abs(x).sum(axis=2)[0, :4] = 513 514
// 515 516.
// CHECK: lower_sum f32[] = 301
// CHECK-NEXT: row_abs f32[1, 300] = 513 514 515 516

// The row reduction (its parallel loops) goes through the runtime's
// parallel loop; the full reduction has none and stays inline.
// IR: llvm.call @loom_par_dispatch_0(
// IR: llvm.func @loom_par_0(
// IR-NOT: loom_par_dispatch_1

func.func @f(%x: tensor<?x300x300xf32> {graph.input = "x"})
    -> (tensor<f32> {graph.output = "lower_sum"}, tensor<?x300xf32> {graph.output = "row_abs"}) {
  %t = graph.trilu %x k = 0 : (tensor<?x300x300xf32>) -> tensor<?x300x300xf32>
  %s = graph.reduce_sum %t axes = [0, 1, 2] : (tensor<?x300x300xf32>) -> tensor<f32>
  %a = graph.abs %x : tensor<?x300x300xf32>
  %r = graph.reduce_sum %a axes = [2] : (tensor<?x300x300xf32>) -> tensor<?x300xf32>
  return %s, %r : tensor<f32>, tensor<?x300xf32>
}
