// RUN: loom-opt --loom-cpu-library-calls --split-input-file %s | FileCheck %s

// The matmul contraction --loom-graph-to-linalg emits (batch broadcast on the
// rhs, rhs transposed) becomes one call of the GEMM kernel, flags = 2.
// CHECK-LABEL: func.func @batched_transposed
// CHECK: %[[L:.*]] = memref.cast %arg0 : memref<?x5x3xf32> to memref<*xf32>
// CHECK: %[[R:.*]] = memref.cast %arg1 : memref<4x3xf32> to memref<*xf32>
// CHECK: %[[O:.*]] = memref.cast %arg2 : memref<?x5x4xf32> to memref<*xf32>
// CHECK: %[[F:.*]] = arith.constant 2 : i64
// CHECK: call @loom_cpu_matmul_f32(%[[L]], %[[R]], %[[O]], %[[F]])
// CHECK-NOT: linalg.generic
func.func @batched_transposed(%a: memref<?x5x3xf32>, %b: memref<4x3xf32>, %o: memref<?x5x4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>,
                                   affine_map<(d0, d1, d2, d3) -> (d2, d3)>,
                                   affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<?x5x3xf32>, memref<4x3xf32>) outs(%o : memref<?x5x4xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}
// CHECK: func.func private @loom_cpu_matmul_f32(memref<*xf32>, memref<*xf32>, memref<*xf32>, i64) attributes {llvm.emit_c_interface}

// -----

// A vector times a matrix: flags = 4 (lhs is a vector).
// CHECK-LABEL: func.func @vecmat
// CHECK: arith.constant 4 : i64
// CHECK: call @loom_cpu_matmul_f32
func.func @vecmat(%v: memref<3xf32>, %b: memref<3x4xf32>, %o: memref<4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>,
                                   affine_map<(d0, d1) -> (d1, d0)>,
                                   affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%v, %b : memref<3xf32>, memref<3x4xf32>) outs(%o : memref<4xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A 2-D convolution: the im2col kernel with strides and dilations.
// CHECK-LABEL: func.func @conv
// CHECK: %[[SH:.*]] = arith.constant 2 : i64
// CHECK-NEXT: %[[SW:.*]] = arith.constant 2 : i64
// CHECK-NEXT: %[[DH:.*]] = arith.constant 1 : i64
// CHECK-NEXT: %[[DW:.*]] = arith.constant 1 : i64
// CHECK-NEXT: call @loom_cpu_conv2d_nchw_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[SH]], %[[SW]], %[[DH]], %[[DW]])
func.func @conv(%i: memref<1x3x9x9xf32>, %f: memref<8x3x3x3xf32>, %o: memref<1x8x4x4xf32>) {
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%i, %f : memref<1x3x9x9xf32>, memref<8x3x3x3xf32>) outs(%o : memref<1x8x4x4xf32>)
  return
}

// -----

// Integer matmuls and other bodies stay loops.
// CHECK-LABEL: func.func @integer
// CHECK-NOT: call
// CHECK: linalg.generic
func.func @integer(%a: memref<2x3xi32>, %b: memref<3x4xi32>, %o: memref<2x4xi32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                                   affine_map<(d0, d1, d2) -> (d2, d1)>,
                                   affine_map<(d0, d1, d2) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<2x3xi32>, memref<3x4xi32>) outs(%o : memref<2x4xi32>) {
  ^bb0(%x: i32, %y: i32, %acc: i32):
    %m = arith.muli %x, %y : i32
    %s = arith.addi %acc, %m : i32
    linalg.yield %s : i32
  }
  return
}

// -----

// A zero fill of the output right before the contraction is dropped: the
// kernel overwrites the output instead of accumulating (flags = 16). A fill
// of another value, or not right before, stays.
// CHECK-LABEL: func.func @overwrite
// CHECK-NOT: linalg.fill
// CHECK: %[[F:.*]] = arith.constant 16 : i64
// CHECK: call @loom_cpu_matmul_f32({{.*}}, %[[F]])
// CHECK-LABEL: func.func @accumulate
// CHECK: linalg.fill
// CHECK: %[[F:.*]] = arith.constant 0 : i64
// CHECK: call @loom_cpu_matmul_f32({{.*}}, %[[F]])
func.func @overwrite(%a: memref<5x3xf32>, %b: memref<3x4xf32>, %o: memref<5x4xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%o : memref<5x4xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                                   affine_map<(d0, d1, d2) -> (d2, d1)>,
                                   affine_map<(d0, d1, d2) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<5x3xf32>, memref<3x4xf32>) outs(%o : memref<5x4xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}
func.func @accumulate(%a: memref<5x3xf32>, %b: memref<3x4xf32>, %o: memref<5x4xf32>) {
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%o : memref<5x4xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                                   affine_map<(d0, d1, d2) -> (d2, d1)>,
                                   affine_map<(d0, d1, d2) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<5x3xf32>, memref<3x4xf32>) outs(%o : memref<5x4xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}
