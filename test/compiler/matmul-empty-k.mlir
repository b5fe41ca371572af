// A matmul with an empty contraction dim is zeros: the kernel overwrites its
// output (the generated zero fill is dropped), so it writes them itself.
// RUN: loomc compile %s -o %t.loom
// RUN: %python -c "import numpy as np; np.save('%t.a.npy', np.zeros((3, 0), np.float32)); np.save('%t.b.npy', np.zeros((0, 4), np.float32))"
// RUN: loom-run %t.loom --in a=%t.a.npy --in b=%t.b.npy --print --bench 2 --warmup 0 | FileCheck %s
// CHECK: z f32[3, 4] = 0 0 0 0 0 0 0 0 0 0 0 0
// CHECK-NEXT: latency over 2 runs

func.func @empty_k(%a: tensor<3x0xf32> {graph.input = "a"}, %b: tensor<0x4xf32> {graph.input = "b"})
    -> (tensor<3x4xf32> {graph.output = "z"}) {
  %z = graph.matmul %a, %b : (tensor<3x0xf32>, tensor<0x4xf32>) -> tensor<3x4xf32>
  return %z : tensor<3x4xf32>
}
