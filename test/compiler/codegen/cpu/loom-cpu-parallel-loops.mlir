// A linalg.generic of a public function with a parallel outer loop is
// outlined into @loom_par_N over a range [lo, hi) of that loop (subviews of
// its operands) and replaced by a call of the dispatcher @loom_par_dispatch_N
// (loop size, grain, operands) that addParallelDispatchers defines later.
// Private functions are left alone.
// RUN: loom-opt --loom-cpu-parallel-loops %s | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>

// CHECK: func.func private @loom_par_dispatch_0(i64, i64, memref<64x32xf32>, memref<64x32xf32>) attributes {llvm.emit_c_interface}
// CHECK-NOT: @loom_par_dispatch_1

// CHECK-LABEL: func.func @relu
// CHECK-SAME: (%[[X:.*]]: memref<64x32xf32>, %[[Y:.*]]: memref<64x32xf32>)
// CHECK-NOT: linalg.generic
// CHECK: call @loom_par_dispatch_0(%{{.*}}, %{{.*}}, %[[X]], %[[Y]])
// CHECK-NEXT: return
func.func @relu(%x: memref<64x32xf32>, %y: memref<64x32xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<64x32xf32>) outs(%y : memref<64x32xf32>) {
  ^bb0(%a: f32, %b: f32):
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %a, %z : f32
    linalg.yield %m : f32
  }
  return
}

// CHECK-LABEL: func.func private @helper
// CHECK: linalg.generic
// CHECK-NOT: call
func.func private @helper(%x: memref<64x32xf32>, %y: memref<64x32xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<64x32xf32>) outs(%y : memref<64x32xf32>) {
  ^bb0(%a: f32, %b: f32):
    linalg.yield %a : f32
  }
  return
}

// CHECK-LABEL: func.func private @loom_par_0
// CHECK-SAME: (%[[LO:.*]]: index, %[[HI:.*]]: index, %[[A:.*]]: memref<64x32xf32>, %[[B:.*]]: memref<64x32xf32>)
// CHECK: %[[N:.*]] = arith.subi %[[HI]], %[[LO]]
// CHECK: memref.subview %[[A]][%[[LO]], 0] [%[[N]], 32] [1, 1]
// CHECK: memref.subview %[[B]][%[[LO]], 0] [%[[N]], 32] [1, 1]
// CHECK: linalg.generic
// CHECK: arith.maximumf
