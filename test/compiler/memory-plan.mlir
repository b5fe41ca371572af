// loomc compile --print-memory-plan: static-size intermediates share one
// arena by liveness, dynamic-size ones share slots; the plan runs (the
// outputs are right on two batch sizes, each run reusing the slots).
// RUN: loomc compile %s -o %t.loom --print-memory-plan | FileCheck %s
// RUN: %python -c "import numpy as np; np.save('%t.s.npy', np.full((4, 64), 0.01, np.float32)); np.save('%t.x1.npy', np.full((1, 64), 0.01, np.float32)); np.save('%t.x5.npy', np.full((5, 64), 0.01, np.float32))"
// RUN: loom-run %t.loom --in s=%t.s.npy --in x=%t.x5.npy --bench 3 --warmup 0 --print | FileCheck %s --check-prefix=RUN5
// RUN: loom-run %t.loom --in s=%t.s.npy --in x=%t.x1.npy --print | FileCheck %s --check-prefix=RUN1

// Four static 4x64 f32 intermediates (1 KiB each) live one after another:
// a chain a -> b -> c -> d needs two at a time, so 2 KiB instead of 4.
// CHECK: memory plan of 'chain': {{[0-9]+}} intermediate buffers
// CHECK-NEXT: planned peak (static-size buffers): 2.0 KiB in one arena (4.0 KiB without reuse)
// CHECK-NEXT: dynamic-size buffers: {{[0-9]+}} in 2 reused slots
// CHECK: largest buffers:
// CHECK: 1.0 KiB  memref<4x64xf32>  arena offset {{0|1024}}  live ops {{[0-9]+}}-{{[0-9]+}} @memory-plan.mlir:{{[0-9]+}}
// CHECK: dynamic  memref<?x64xf32>  slot {{1|2}}

func.func @chain(%s: tensor<4x64xf32> {graph.input = "s"},
                 %x: tensor<?x64xf32> {graph.input = "x"})
    -> (tensor<4x64xf32> {graph.output = "t"}, tensor<?x64xf32> {graph.output = "y"}) {
  %w = graph.constant dense<0.5> : tensor<64x64xf32>
  %a = graph.matmul %s, %w : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
  %b = graph.matmul %a, %w : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
  %c = graph.matmul %b, %w : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
  %d = graph.matmul %c, %w : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
  %t = graph.tanh %d : tensor<4x64xf32>
  %p = graph.matmul %x, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %q = graph.matmul %p, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %r = graph.matmul %q, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %y = graph.tanh %r : tensor<?x64xf32>
  return %t, %y : tensor<4x64xf32>, tensor<?x64xf32>
}

// Each row of s and x is 0.01 everywhere; each matmul multiplies by 32, so
// after four: 0.01 * 32^4 = 10485.76 -> tanh 1; after three: 327.68 -> 1.
// RUN5: t f32[4, 64] = 1 1 1
// RUN5: y f32[5, 64] = 1 1 1
// RUN5: latency over 3 runs
// RUN1: y f32[1, 64] = 1 1 1
