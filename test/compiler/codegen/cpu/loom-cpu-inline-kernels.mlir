// RUN: loom-opt --loom-cpu-inline-kernels --mlir-print-debuginfo %s | FileCheck %s

// Each kernel.fusion body moves into its parent: block arguments become the
// operands, results the yielded values, and each inlined op's location is
// tagged with the region's name (what the profile hooks name kernels by).
// CHECK-LABEL: func.func @f
// CHECK-SAME: (%[[X:[^:]*]]: tensor<4xf32> {{.*}}, %[[Y:[^:]*]]: tensor<4xf32> {{.*}})
// CHECK-NOT: kernel.
// CHECK: %[[E:.*]] = graph.exp %[[X]] : tensor<4xf32> loc(#[[LOC0:.*]])
// CHECK-NEXT: %[[A:.*]] = graph.add %[[E]], %[[Y]] : {{.*}} loc(#[[LOC1:.*]])
// CHECK-NEXT: %[[N:.*]] = graph.neg %[[A]] : tensor<4xf32> loc(#[[LOC2:.*]])
// CHECK-NEXT: return %[[N]], %[[E]]
// CHECK-DAG: #[[EXP:.*]] = loc("exp_node")
// CHECK-DAG: #[[LOC0]] = loc(fused<"fusion_0">[#[[EXP]]])
// CHECK-DAG: #[[LOC2]] = loc(fused<"fusion_1">[#{{.*}}])
func.func @f(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0:2 = kernel.fusion "fusion_0" elementwise (%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
    %1 = graph.exp %a : tensor<4xf32> loc("exp_node")
    %2 = graph.add %1, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    kernel.yield %2, %1 : tensor<4xf32>, tensor<4xf32>
  }
  %3 = kernel.fusion "fusion_1" elementwise (%0#0) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %4 = graph.neg %a : tensor<4xf32>
    kernel.yield %4 : tensor<4xf32>
  }
  return %3, %0#1 : tensor<4xf32>, tensor<4xf32>
}
