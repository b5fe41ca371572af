// RUN: loom-opt --loom-graph-to-linalg --loom-cpu-fusion %s | FileCheck %s

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

// kernel.fusion regions (from --loom-fusion) are lowered in place by
// --loom-graph-to-linalg and bound the fusion: a chain fuses within its region,
// never across two (each region is isolated from above).
// CHECK-LABEL: func.func @regions
// CHECK: %[[A:.*]] = kernel.fusion "fusion_0" elementwise
// CHECK: linalg.generic
// CHECK: math.exp
// CHECK: arith.negf
// CHECK-NOT: linalg.generic
// CHECK: kernel.yield
// CHECK: kernel.fusion "fusion_1" elementwise(%[[A]])
// CHECK: linalg.generic
// CHECK: arith.mulf
// CHECK-NOT: linalg.generic
// CHECK: kernel.yield
func.func @regions(%x: tensor<64xf32>) -> tensor<64xf32> {
  %0 = kernel.fusion "fusion_0" elementwise (%x) : (tensor<64xf32>) -> tensor<64xf32> {
  ^bb0(%a: tensor<64xf32>):
    %1 = graph.exp %a : tensor<64xf32>
    %2 = graph.neg %1 : tensor<64xf32>
    kernel.yield %2 : tensor<64xf32>
  }
  %3 = kernel.fusion "fusion_1" elementwise (%0) : (tensor<64xf32>) -> tensor<64xf32> {
  ^bb0(%a: tensor<64xf32>):
    %4 = graph.mul %a, %a : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    kernel.yield %4 : tensor<64xf32>
  }
  return %3 : tensor<64xf32>
}

// A region whose body folds away (x / 1: the generic becomes an identity)
// is replaced by the operand it forwards.
// CHECK-LABEL: func.func @region_folds_away
// CHECK-SAME: (%[[X:.*]]: tensor<3xf32>)
// CHECK-NOT: kernel.fusion
// CHECK: return %[[X]]
func.func @region_folds_away(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = kernel.fusion "fusion_0" elementwise (%x) : (tensor<3xf32>) -> tensor<3xf32> {
  ^bb0(%a: tensor<3xf32>):
    %c = graph.constant dense<1.0> : tensor<f32>
    %1 = graph.div %a, %c : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
    kernel.yield %1 : tensor<3xf32>
  }
  return %0 : tensor<3xf32>
}
