// RUN: loom-opt --graph-to-linalg --loom-cpu-fusion %s | FileCheck %s

// An elementwise chain becomes one generic; the chain feeding a matmul
// does not fuse into it (the matmul stays a library call), but the bias
// and relu after it fuse together.
// CHECK-LABEL: func.func @f
// CHECK: %[[PRE:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]}
// CHECK: math.exp
// CHECK: arith.mulf
// CHECK: %[[MM:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[PRE]], %{{.*}} : tensor<4x8xf32>, tensor<8x2xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[MM]]
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK-NOT: linalg.generic
func.func @f(%x: tensor<4x8xf32>, %w: tensor<8x2xf32>, %b: tensor<2xf32>) -> tensor<4x2xf32> {
  %0 = graph.exp %x : tensor<4x8xf32>
  %1 = graph.mul %0, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = graph.matmul %1, %w : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %3 = graph.add %2, %b : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %4 = graph.relu %3 : tensor<4x2xf32>
  return %4 : tensor<4x2xf32>
}

// A producer with two users is computed once, not fused into both.
// CHECK-LABEL: func.func @shared
// CHECK: %[[E:.*]] = linalg.generic
// CHECK: math.exp
// CHECK: linalg.generic {{.*}} ins(%[[E]]
// CHECK: linalg.generic {{.*}} ins(%[[E]]
func.func @shared(%x: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %0 = graph.exp %x : tensor<64xf32>
  %1 = graph.neg %0 : tensor<64xf32>
  %2 = graph.sqrt %0 : tensor<64xf32>
  return %1, %2 : tensor<64xf32>, tensor<64xf32>
}
