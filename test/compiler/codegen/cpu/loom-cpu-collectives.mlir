// RUN: loom-opt --loom-cpu-collectives --cse %s -split-input-file -verify-diagnostics | FileCheck %s

// A collective becomes a start where it stands and a wait right before the
// first use of its result: the matmul in between overlaps the all-reduce.
// Both buffers go to the wait, so the memory plan keeps them alive.

// CHECK-NOT: mesh.mesh
// CHECK-LABEL: func.func @bucket
// CHECK: %[[IN:.*]] = bufferization.to_memref %{{.*}} read_only : memref<8xf32>
// CHECK: %[[OUT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
// CHECK: %[[INU:.*]] = memref.cast %[[IN]] : memref<8xf32> to memref<*xf32>
// CHECK: %[[OUTU:.*]] = memref.cast %[[OUT]] : memref<8xf32> to memref<*xf32>
// CHECK: %[[C0:.*]] = arith.constant 0 : i64
// CHECK: %[[C1:.*]] = arith.constant 1 : i64
// CHECK: %[[H:.*]] = call @loom_rt_collective_start_f32(%[[INU]], %[[OUTU]], %[[C0]], %[[C1]], %[[C0]], %[[C1]])
// CHECK: graph.matmul
// CHECK: call @loom_rt_collective_wait_f32(%[[H]], %[[INU]], %[[OUTU]])
// CHECK: %[[R:.*]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK: graph.add %[[R]]
// CHECK-DAG: func.func private @loom_rt_collective_start_f32(memref<*xf32>, memref<*xf32>, i64, i64, i64, i64) -> i64 attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @loom_rt_collective_wait_f32(i64, memref<*xf32>, memref<*xf32>) attributes {llvm.emit_c_interface}
mesh.mesh @mesh(shape = 2) {loom.axes = ["data"]}
func.func @bucket(%g: tensor<8xf32>, %a: tensor<4x4xf32>) -> (tensor<8xf32>, tensor<4x4xf32>) {
  %r = mesh.all_reduce %g on @mesh mesh_axes = [0] : tensor<8xf32> -> tensor<8xf32>
  %m = graph.matmul %a, %a : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %s = graph.add %r, %g : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %s, %m : tensor<8xf32>, tensor<4x4xf32>
}

// -----

// Kinds and reductions: reduce-scatter 2, all-gather 1, all-slice 4, max 1;
// the axes as a bit mask (axis 1 of a 2x2 mesh: 2). A result nobody uses
// is awaited before the terminator.

// CHECK-LABEL: func.func @kinds
// CHECK: %[[C2:.*]] = arith.constant 2 : i64
// CHECK: %[[C1:.*]] = arith.constant 1 : i64
// CHECK: %[[RS:.*]] = call @loom_rt_collective_start_f32(%{{.*}}, %{{.*}}, %[[C2]], %[[C1]], %[[C1]], %[[C2]])
// CHECK: %[[C7:.*]] = arith.constant 7 : i64
// CHECK: %[[C0:.*]] = arith.constant 0 : i64
// CHECK: call @loom_rt_collective_start_i64(%{{.*}}, %{{.*}}, %[[C1]], %[[C7]], %[[C0]], %[[C1]])
// CHECK: %[[C4:.*]] = arith.constant 4 : i64
// CHECK: call @loom_rt_collective_start_f32(%{{.*}}, %{{.*}}, %[[C4]], %[[C1]], %[[C0]], %[[C1]])
// CHECK: call @loom_rt_collective_wait_f32(%[[RS]]
mesh.mesh @mesh(shape = 2x2) {loom.axes = ["data", "tensor"]}
func.func @kinds(%x: tensor<4x3xf32>, %i: tensor<2xi64>) -> (tensor<4xi64>, tensor<2x3xf32>) {
  %rs = mesh.reduce_scatter %x on @mesh mesh_axes = [1] reduction = <max> scatter_axis = 0 : tensor<4x3xf32> -> tensor<2x3xf32>
  %ag = mesh.all_gather %i on @mesh mesh_axes = [0] gather_axis = 0 : tensor<2xi64> -> tensor<4xi64>
  %sl = mesh.all_slice %x on @mesh mesh_axes = [0] slice_axis = 0 : tensor<4x3xf32> -> tensor<2x3xf32>
  return %ag, %sl : tensor<4xi64>, tensor<2x3xf32>
}

// -----

mesh.mesh @mesh(shape = 2) {loom.axes = ["data"]}
func.func @gather_dim1(%x: tensor<4x3xf32>) -> tensor<4x6xf32> {
  // expected-error @+1 {{the CPU backend gathers along dim 0 only}}
  %g = mesh.all_gather %x on @mesh mesh_axes = [0] gather_axis = 1 : tensor<4x3xf32> -> tensor<4x6xf32>
  return %g : tensor<4x6xf32>
}

// -----

mesh.mesh @mesh(shape = 2) {loom.axes = ["data"]}
func.func @shift(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{the CPU backend does not run 'mesh.shift'}}
  %s = mesh.shift %x on @mesh mesh_axes = [0] shift_axis = 0 offset = 1 : tensor<4xf32> -> tensor<4xf32>
  return %s : tensor<4xf32>
}
