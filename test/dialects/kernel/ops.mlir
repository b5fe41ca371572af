// RUN: loom-opt %s | loom-opt | FileCheck %s
// RUN: loom-opt %s --mlir-print-op-generic | loom-opt | FileCheck %s

// Round-trip of kernel.fusion and kernel.yield in their custom format; the
// second RUN line goes through the generic form first.

// CHECK-LABEL: func.func @matmul_epilogue
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8x16xf32>, %[[B:.*]]: tensor<16xf32>)
func.func @matmul_epilogue(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  // CHECK: %[[Y:.*]] = kernel.fusion "fusion_0" matmul(%[[X]], %[[W]], %[[B]]) : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32> {
  // CHECK-NEXT: ^bb0(%[[A0:.*]]: tensor<4x8xf32>, %[[A1:.*]]: tensor<8x16xf32>, %[[A2:.*]]: tensor<16xf32>):
  // CHECK-NEXT: %[[M:.*]] = graph.matmul %[[A0]], %[[A1]]
  // CHECK-NEXT: %[[S:.*]] = graph.add %[[M]], %[[A2]]
  // CHECK-NEXT: %[[R:.*]] = graph.relu %[[S]]
  // CHECK-NEXT: kernel.yield %[[R]] : tensor<4x16xf32>
  // CHECK-NEXT: }
  %y = kernel.fusion "fusion_0" matmul (%x, %w, %b)
      : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32> {
  ^bb0(%a: tensor<4x8xf32>, %bw: tensor<8x16xf32>, %bb: tensor<16xf32>):
    %0 = graph.matmul %a, %bw : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %1 = graph.add %0, %bb : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    %2 = graph.relu %1 : tensor<4x16xf32>
    kernel.yield %2 : tensor<4x16xf32>
  }
  // CHECK: return %[[Y]]
  return %y : tensor<4x16xf32>
}

// Several results, a cloned constant, no operands; every kind spelled.
// CHECK-LABEL: func.func @kinds
func.func @kinds(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4x8xf32>) {
  // CHECK: kernel.fusion "fusion_1" reduction(%{{.*}}) : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>)
  // CHECK: kernel.yield %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<4xf32>
  %0:2 = kernel.fusion "fusion_1" reduction (%x) : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>) {
  ^bb0(%a: tensor<4x8xf32>):
    %c = graph.constant dense<2.0> : tensor<f32>
    %e = graph.mul %a, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %s = graph.reduce_sum %e axes = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
    kernel.yield %e, %s : tensor<4x8xf32>, tensor<4xf32>
  }
  // CHECK: kernel.fusion "softmax_node" softmax(
  %1 = kernel.fusion "softmax_node" softmax (%0#0) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %r = graph.softmax %a {axis = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    kernel.yield %r : tensor<4x8xf32>
  }
  // CHECK: kernel.fusion "fusion_3" elementwise() : () -> tensor<4xf32>
  %2 = kernel.fusion "fusion_3" elementwise () : () -> tensor<4xf32> {
    %i = graph.iota [4] axis = 0 : f32
    kernel.yield %i : tensor<4xf32>
  }
  // CHECK: kernel.fusion "fusion_4" norm(
  // CHECK: kernel.fusion "fusion_5" other(
  %3 = kernel.fusion "fusion_4" norm (%1) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %n = graph.exp %a : tensor<4x8xf32>
    kernel.yield %n : tensor<4x8xf32>
  }
  %4 = kernel.fusion "fusion_5" other (%3) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %n = graph.neg %a : tensor<4x8xf32>
    kernel.yield %n : tensor<4x8xf32>
  }
  %5 = graph.add %2, %0#1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %4, %5, %3 : tensor<4x8xf32>, tensor<4xf32>, tensor<4x8xf32>
}

// A run-time check (cf.assert, from lowerings of run-time shape operands)
// touches no buffer and may sit in a body.
// CHECK-LABEL: func.func @check_in_body
// CHECK: kernel.fusion "fusion_0" other
// CHECK: cf.assert %{{.*}}, "reshape: element count differs"
func.func @check_in_body(%x: tensor<4xf32>, %ok: i1) -> tensor<4xf32> {
  %0 = kernel.fusion "fusion_0" other (%x, %ok) : (tensor<4xf32>, i1) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>, %c: i1):
    cf.assert %c, "reshape: element count differs"
    %1 = graph.neg %a : tensor<4xf32>
    kernel.yield %1 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}
