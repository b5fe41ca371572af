// RUN: loom-opt --loom-cpu-profile-hooks %s | FileCheck %s

// Each kernel (a linalg op, a library call, a copy) is bracketed by the
// hooks with its id; the names go in `loom.kernels`, indexed by id.
// CHECK: module attributes {loom.kernels = ["fill 4x8 @loom-cpu-profile-hooks.mlir:{{[0-9]+}}", "copy 4x8 @loom-cpu-profile-hooks.mlir:{{[0-9]+}}"]}
// CHECK: func.func private @loom_rt_profile_begin(i64)
// CHECK: func.func private @loom_rt_profile_end(i64)
// CHECK-LABEL: func.func @f
// CHECK: %[[ID0:.*]] = arith.constant 0 : i64
// CHECK-NEXT: call @loom_rt_profile_begin(%[[ID0]])
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: call @loom_rt_profile_end(%[[ID0]])
// CHECK: %[[ID1:.*]] = arith.constant 1 : i64
// CHECK-NEXT: call @loom_rt_profile_begin(%[[ID1]])
// CHECK-NEXT: memref.copy
// CHECK-NEXT: call @loom_rt_profile_end(%[[ID1]])
func.func @f(%a: memref<4x8xf32>, %b: memref<4x8xf32>) {
  %c = arith.constant 0.0 : f32
  linalg.fill ins(%c : f32) outs(%a : memref<4x8xf32>)
  memref.copy %a, %b : memref<4x8xf32> to memref<4x8xf32>
  return
}
