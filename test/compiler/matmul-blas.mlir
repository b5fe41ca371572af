// Every matmul form reaches the runtime's GEMM kernel (sgemm, or sgemv for
// a vector operand) with the right result: transposes, vectors, batches,
// broadcast batch dims, a dynamic batch. Expected values from numpy.
// Nine matmuls: v . v (both operands the same value, deduplicated by
// canonicalization) stays a loop; the other eight call the kernel.
// RUN: loom-opt --loom-cpu-lowering %s | FileCheck %s --check-prefix=IR
// IR-COUNT-8: llvm.call @loom_cpu_matmul_f32(
// IR-NOT: llvm.call @loom_cpu_matmul_f32(
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/Inputs/matmul_check.py inputs %t
// RUN: loomc compile %s -o %t/m.loom
// RUN: loom-run %t/m.loom --in a=%t/a.npy --in b=%t/b.npy --in v=%t/v.npy --in w=%t/w.npy --in c=%t/c.npy --out-dir %t
// RUN: %python %S/Inputs/matmul_check.py check %t | FileCheck %s
// CHECK-COUNT-8: ok
// CHECK-NOT: MISMATCH

func.func @forms(%a: tensor<?x5x3xf32> {graph.input = "a"},   // batch x m x k
                 %b: tensor<3x4xf32> {graph.input = "b"},      // k x n
                 %v: tensor<3xf32> {graph.input = "v"},        // k
                 %w: tensor<4xf32> {graph.input = "w"},        // n
                 %c: tensor<1x4x3xf32> {graph.input = "c"})    // 1 x n x k
    -> (tensor<?x5x4xf32> {graph.output = "ab"}, tensor<?x5x4xf32> {graph.output = "a_ct"},
        tensor<4xf32> {graph.output = "vb"}, tensor<?x5xf32> {graph.output = "av"},
        tensor<f32> {graph.output = "vv"}, tensor<3x5xf32> {graph.output = "a0t_a0"},
        tensor<3xf32> {graph.output = "bw"}, tensor<?x5x4xf32> {graph.output = "a_c"}) {
  %ab = graph.matmul %a, %b : (tensor<?x5x3xf32>, tensor<3x4xf32>) -> tensor<?x5x4xf32>
  %act = graph.matmul %a, %c {transpose_rhs} : (tensor<?x5x3xf32>, tensor<1x4x3xf32>) -> tensor<?x5x4xf32>
  %vb = graph.matmul %v, %b : (tensor<3xf32>, tensor<3x4xf32>) -> tensor<4xf32>
  %av = graph.matmul %a, %v : (tensor<?x5x3xf32>, tensor<3xf32>) -> tensor<?x5xf32>
  %vv = graph.matmul %v, %v : (tensor<3xf32>, tensor<3xf32>) -> tensor<f32>
  %a0 = graph.slice %a starts = [0, 0, 0] ends = [1, 5, 3] steps = [1, 1, 1] : (tensor<?x5x3xf32>) -> tensor<?x5x3xf32>
  %a02 = graph.reshape %a0 [5, 3] : (tensor<?x5x3xf32>) -> tensor<5x3xf32>
  %ata = graph.matmul %a02, %a02 {transpose_lhs} : (tensor<5x3xf32>, tensor<5x3xf32>) -> tensor<3x3xf32>
  %ata5 = graph.matmul %ata, %a02 {transpose_rhs} : (tensor<3x3xf32>, tensor<5x3xf32>) -> tensor<3x5xf32>
  %bw = graph.matmul %b, %w : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
  %ac = graph.matmul %a, %c {transpose_rhs} : (tensor<?x5x3xf32>, tensor<1x4x3xf32>) -> tensor<?x5x4xf32>
  return %ab, %act, %vb, %av, %vv, %ata5, %bw, %ac
      : tensor<?x5x4xf32>, tensor<?x5x4xf32>, tensor<4xf32>, tensor<?x5xf32>, tensor<f32>, tensor<3x5xf32>, tensor<3xf32>, tensor<?x5x4xf32>
}
