// RUN: loom-opt --loom-cpu-memory-plan %s | FileCheck %s
// RUN: loom-opt --loom-cpu-memory-plan=alignment=2048 %s | FileCheck %s --check-prefix=ALIGN

// Three 1 KiB buffers: %t0 dies when %t2 is made, so %t2 reuses its bytes
// (arena 2 KiB). The dynamic %d0 and %d1 overlap and get two slots; %d2
// reuses %d0's slot. The returned %r is the caller's and stays an alloc.
// The plan becomes exec ops: a plan per function, a buffer per planned
// alloc, no deallocs.
// CHECK: module attributes {loom.memory_plan = [{arena_bytes = 2048 : i64, buffers = [
// CHECK-SAME: dynamic_slots = 2 : i64, function = "f", unshared_bytes = 3072 : i64}
// CHECK: exec.plan @f_plan arena 2048 dynamic_slots 2 alignment 64
// CHECK-LABEL: func.func @f
// CHECK-SAME: (%[[X:.*]]: memref<256xf32>, %[[N:.*]]: index)
// CHECK: %[[T0:.*]] = exec.buffer @f_plan slot 0 : memref<256xf32>
// CHECK: memref.copy %[[X]], %[[T0]]
// CHECK: %[[T1:.*]] = exec.buffer @f_plan slot 0 offset 1024 : memref<256xf32>
// CHECK: %[[T2:.*]] = exec.buffer @f_plan slot 0 : memref<256xf32>
// CHECK: exec.buffer @f_plan slot 1 [%[[N]]] : memref<?xf32>
// CHECK: exec.buffer @f_plan slot 2 [%[[N]]] : memref<?xf32>
// CHECK: %[[D2:.*]] = exec.buffer @f_plan slot 1 [%[[N]]] : memref<?xf32>
// CHECK: %[[R:.*]] = memref.alloc(%[[N]]) : memref<?xf32>
// CHECK: memref.copy %[[D2]], %[[R]]
// CHECK-NOT: memref.dealloc
// CHECK: return %[[R]]

// Offsets at a coarser alignment: each 1 KiB buffer takes 2 KiB.
// ALIGN: exec.plan @f_plan arena 4096 dynamic_slots 2 alignment 2048
// ALIGN: exec.buffer @f_plan slot 0 offset 2048 : memref<256xf32>
func.func @f(%x: memref<256xf32>, %n: index) -> memref<?xf32> {
  %t0 = memref.alloc() : memref<256xf32>
  memref.copy %x, %t0 : memref<256xf32> to memref<256xf32>
  %t1 = memref.alloc() : memref<256xf32>
  memref.copy %t0, %t1 : memref<256xf32> to memref<256xf32>
  %t2 = memref.alloc() : memref<256xf32>
  memref.copy %t1, %t2 : memref<256xf32> to memref<256xf32>
  %d0 = memref.alloc(%n) : memref<?xf32>
  %d1 = memref.alloc(%n) : memref<?xf32>
  memref.copy %d0, %d1 : memref<?xf32> to memref<?xf32>
  %d2 = memref.alloc(%n) : memref<?xf32>
  memref.copy %d1, %d2 : memref<?xf32> to memref<?xf32>
  %r = memref.alloc(%n) : memref<?xf32>
  memref.copy %d2, %r : memref<?xf32> to memref<?xf32>
  memref.dealloc %t0 : memref<256xf32>
  memref.dealloc %t1 : memref<256xf32>
  memref.dealloc %t2 : memref<256xf32>
  memref.dealloc %d0 : memref<?xf32>
  memref.dealloc %d1 : memref<?xf32>
  memref.dealloc %d2 : memref<?xf32>
  return %r : memref<?xf32>
}

// A function without intermediates gets no plan; a plan whose name is
// taken gets another.
// CHECK-NOT: exec.plan @copy_plan
// CHECK-LABEL: func.func @copy
func.func @copy(%x: memref<4xf32>, %y: memref<4xf32>) {
  memref.copy %x, %y : memref<4xf32> to memref<4xf32>
  return
}

func.func private @g_plan()
// CHECK: exec.plan @[[G:g_plan_.*]] arena 64 dynamic_slots 0 alignment 64
// CHECK-LABEL: func.func @g
// CHECK: exec.buffer @[[G]] slot 0 : memref<4xf32>
func.func @g(%x: memref<4xf32>, %y: memref<4xf32>) {
  %t = memref.alloc() : memref<4xf32>
  memref.copy %x, %t : memref<4xf32> to memref<4xf32>
  memref.copy %t, %y : memref<4xf32> to memref<4xf32>
  memref.dealloc %t : memref<4xf32>
  return
}
