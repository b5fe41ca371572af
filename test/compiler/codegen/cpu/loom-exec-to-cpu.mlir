// RUN: loom-opt --loom-exec-to-cpu %s | FileCheck %s

// The arena is asked for once, at the top of the function, with the plan's
// size; each static buffer is a view of it at its offset. Each dynamic
// buffer asks for its slot where it is made, with its own bytes. The plan
// goes.
// CHECK-NOT: exec.plan
// CHECK: func.func private @loom_rt_slot(i64, index) -> memref<?xi8> attributes {llvm.emit_c_interface}
// CHECK-NOT: exec.plan
// CHECK-LABEL: func.func @f
// CHECK-SAME: (%[[X:.*]]: memref<256xf32>, %[[N:.*]]: index)
// CHECK-DAG: %[[C0_I64:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[C2048:.*]] = arith.constant 2048 : index
// CHECK: %[[ARENA:.*]] = call @loom_rt_slot(%[[C0_I64]], %[[C2048]])
// CHECK: %[[OFF0:.*]] = arith.constant 0 : index
// CHECK: %[[T0:.*]] = memref.view %[[ARENA]][%[[OFF0]]][] : memref<?xi8> to memref<256xf32>
// CHECK: memref.copy %[[X]], %[[T0]]
// CHECK: %[[OFF1:.*]] = arith.constant 1024 : index
// CHECK: %[[T1:.*]] = memref.view %[[ARENA]][%[[OFF1]]][] : memref<?xi8> to memref<256xf32>
// CHECK: memref.copy %[[T0]], %[[T1]]
// CHECK: %[[ROW:.*]] = arith.constant 256 : index
// CHECK: %[[BYTES:.*]] = arith.muli %[[ROW]], %[[N]] : index
// CHECK: %[[C2_I64:.*]] = arith.constant 2 : i64
// CHECK: %[[SLOT:.*]] = call @loom_rt_slot(%[[C2_I64]], %[[BYTES]])
// CHECK: %[[Z:.*]] = arith.constant 0 : index
// CHECK: %[[D:.*]] = memref.view %[[SLOT]][%[[Z]]][%[[N]]] : memref<?xi8> to memref<?x64xf32>
// CHECK: memref.copy %[[D]], %[[D]]
// CHECK-NOT: exec.buffer
// CHECK: return
exec.plan @f_plan arena 2048 dynamic_slots 2 alignment 64
func.func @f(%x: memref<256xf32>, %n: index) {
  %t0 = exec.buffer @f_plan slot 0 : memref<256xf32>
  memref.copy %x, %t0 : memref<256xf32> to memref<256xf32>
  %t1 = exec.buffer @f_plan slot 0 offset 1024 : memref<256xf32>
  memref.copy %t0, %t1 : memref<256xf32> to memref<256xf32>
  %d = exec.buffer @f_plan slot 2 [%n] : memref<?x64xf32>
  memref.copy %d, %d : memref<?x64xf32> to memref<?x64xf32>
  return
}

// A function with dynamic buffers only asks for no arena; a buffer in a
// loop is lowered in place.
// CHECK-LABEL: func.func @dynamic_only
// CHECK-SAME: (%[[N:.*]]: index)
// CHECK-NOT: call @loom_rt_slot
// CHECK: scf.for
// CHECK: %[[S:.*]] = func.call @loom_rt_slot
// CHECK: memref.view %[[S]]
exec.plan @dynamic_only_plan arena 0 dynamic_slots 1 alignment 64
func.func @dynamic_only(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %d = exec.buffer @dynamic_only_plan slot 1 [%n] : memref<?xi8>
    memref.copy %d, %d : memref<?xi8> to memref<?xi8>
  }
  return
}
