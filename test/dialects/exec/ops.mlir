// RUN: loom-opt %s | loom-opt | FileCheck %s
// RUN: loom-opt %s --mlir-print-op-generic | loom-opt | FileCheck %s

// Round-trip of every exec op in its custom assembly format; the second RUN
// line goes through the generic form first (the default offset 0 is elided).

// CHECK: exec.plan @f_plan arena 16512 dynamic_slots 2 alignment 64
exec.plan @f_plan arena 16512 dynamic_slots 2 alignment 64
// CHECK: exec.plan @empty_plan arena 0 dynamic_slots 0 alignment 1
exec.plan @empty_plan arena 0 dynamic_slots 0 alignment 1

// CHECK-LABEL: func.func @buffers
// CHECK-SAME: (%[[N:.*]]: index, %[[M:.*]]: index)
func.func @buffers(%n: index, %m: index) {
  // CHECK: exec.buffer @f_plan slot 0 : memref<32xf32>
  %a = exec.buffer @f_plan slot 0 : memref<32xf32>
  // CHECK: exec.buffer @f_plan slot 0 offset 128 : memref<64x64xf32>
  %b = exec.buffer @f_plan slot 0 offset 128 : memref<64x64xf32>
  // CHECK: exec.buffer @f_plan slot 0 offset 64 : memref<2x3xi1>
  %c = exec.buffer @f_plan slot 0 offset 64 : memref<2x3xi1>
  // CHECK: exec.buffer @f_plan slot 2 [%[[N]]] : memref<?x64xf32>
  %d = exec.buffer @f_plan slot 2 [%n] : memref<?x64xf32>
  // CHECK: exec.buffer @f_plan slot 1 [%[[N]], %[[M]]] : memref<?x4x?xindex>
  %e = exec.buffer @f_plan slot 1 [%n, %m] : memref<?x4x?xindex>
  return
}

// Buffers nested in a loop name the plan like the others.
// CHECK-LABEL: func.func @nested
func.func @nested(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    // CHECK: exec.buffer @f_plan slot 0 offset 16384 : memref<32xf32>
    %a = exec.buffer @f_plan slot 0 offset 16384 : memref<32xf32>
  }
  return
}
