// RUN: loom-opt --loom-cpu-memory-plan %s | FileCheck %s

// Three 1 KiB buffers: %t0 dies when %t2 is made, so %t2 reuses its bytes
// (arena 2 KiB). The dynamic %d0 and %d1 overlap and get two slots; %d2
// reuses %d0's slot. The returned %r is the caller's and stays an alloc.
// CHECK: module attributes {loom.memory_plan = [{arena_bytes = 2048 : i64, buffers = [
// CHECK-SAME: dynamic_slots = 2 : i64, function = "f", unshared_bytes = 3072 : i64}]}
// CHECK: func.func private @loom_rt_slot(i64, index) -> memref<?xi8> attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @f
// CHECK: %[[ARENA:.*]] = call @loom_rt_slot(%{{.*}}, %{{.*}}) : (i64, index) -> memref<?xi8>
// CHECK: memref.view %[[ARENA]][%{{.*}}][] : memref<?xi8> to memref<256xf32>
// CHECK: call @loom_rt_slot
// CHECK: memref.view %{{.*}}[%{{.*}}][%{{.*}}] : memref<?xi8> to memref<?xf32>
// CHECK: %[[R:.*]] = memref.alloc(%{{.*}}) : memref<?xf32>
// CHECK-NOT: memref.dealloc
// CHECK: return %[[R]]
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
