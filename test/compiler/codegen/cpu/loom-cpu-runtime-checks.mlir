// RUN: loom-opt --loom-cpu-runtime-checks %s | FileCheck %s

// Each cf.assert becomes a call of the runtime's loom_rt_fail with its
// message (one global per distinct message) when the condition is false.
// CHECK: llvm.mlir.global internal constant @loom_check_0("axes: bad\00")
// CHECK: llvm.mlir.global internal constant @loom_check_1("shape: bad\00")
// CHECK: func.func private @loom_rt_fail(!llvm.ptr)
// CHECK-LABEL: func.func @f
// CHECK-SAME: (%[[A:.*]]: i1, %[[B:.*]]: i1)
// CHECK: %[[NOT:.*]] = arith.xori %[[A]], %{{.*}} : i1
// CHECK: scf.if %[[NOT]] {
// CHECK:   %[[P:.*]] = llvm.mlir.addressof @loom_check_0 : !llvm.ptr
// CHECK:   func.call @loom_rt_fail(%[[P]]) : (!llvm.ptr) -> ()
// CHECK: }
// CHECK: scf.if
// CHECK:   llvm.mlir.addressof @loom_check_1
// CHECK: scf.if
// CHECK:   llvm.mlir.addressof @loom_check_0
// CHECK-NOT: cf.assert
func.func @f(%a: i1, %b: i1) {
  cf.assert %a, "axes: bad"
  cf.assert %b, "shape: bad"
  cf.assert %b, "axes: bad"
  return
}
