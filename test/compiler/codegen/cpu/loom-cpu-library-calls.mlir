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

// A 2-D convolution: the kernel with strides, dilations, no padding and
// flags 0 (accumulating; the filter an argument that may change); the
// filter stands in for the missing bias.
// CHECK-LABEL: func.func @conv
// CHECK: %[[I:.*]] = memref.cast %arg0
// CHECK-NEXT: %[[W:.*]] = memref.cast %arg1
// CHECK-NEXT: %[[O:.*]] = memref.cast %arg2
// CHECK-NEXT: %[[B:.*]] = memref.cast %arg1
// CHECK-NEXT: %[[SH:.*]] = arith.constant 2 : i64
// CHECK-NEXT: %[[SW:.*]] = arith.constant 2 : i64
// CHECK-NEXT: %[[DH:.*]] = arith.constant 1 : i64
// CHECK-NEXT: %[[DW:.*]] = arith.constant 1 : i64
// CHECK-NEXT: %[[P0:.*]] = arith.constant 0 : i64
// CHECK-NEXT: %[[P1:.*]] = arith.constant 0 : i64
// CHECK-NEXT: %[[P2:.*]] = arith.constant 0 : i64
// CHECK-NEXT: %[[P3:.*]] = arith.constant 0 : i64
// CHECK-NEXT: %[[F:.*]] = arith.constant 0 : i64
// CHECK-NEXT: call @loom_cpu_conv2d_nchw_f32(%[[I]], %[[W]], %[[O]], %[[B]], %[[SH]], %[[SW]], %[[DH]], %[[DW]], %[[P0]], %[[P1]], %[[P2]], %[[P3]], %[[F]])
func.func @conv(%i: memref<1x3x9x9xf32>, %f: memref<8x3x3x3xf32>, %o: memref<1x8x4x4xf32>) {
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%i, %f : memref<1x3x9x9xf32>, memref<8x3x3x3xf32>) outs(%o : memref<1x8x4x4xf32>)
  return
}

// -----

// What the kernel takes in (tensor.pad, the bias broadcast and a ReLU, as
// one-shot bufferization leaves them): the zero-padded copy goes (the
// kernel pads: top 1, left 2, bottom 1, right 0; the batch size read off
// the padded buffer is read off the source), the bias broadcast goes
// (bias = %b), the ReLU goes and its users read the convolution's output,
// and the filter is a weight argument (graph.weight): flags = 1 | 2 | 4 |
// 8 = 15.
// CHECK-LABEL: func.func @folded
// CHECK-NOT: linalg.map
// CHECK-NOT: memref.copy
// CHECK: memref.dim %arg0
// CHECK: %[[N:.*]] = memref.dim %arg0
// CHECK-NEXT: %[[O:.*]] = memref.alloc(%[[N]]) : memref<?x4x5x6xf32>
// CHECK-NOT: linalg.generic
// CHECK: %[[CI:.*]] = memref.cast %arg0
// CHECK-NEXT: %[[CW:.*]] = memref.cast %arg1
// CHECK-NEXT: %[[CO:.*]] = memref.cast %[[O]]
// CHECK-NEXT: %[[CB:.*]] = memref.cast %arg2
// CHECK-COUNT-4: arith.constant 1 : i64
// CHECK-NEXT: arith.constant 1 : i64
// CHECK-NEXT: arith.constant 2 : i64
// CHECK-NEXT: arith.constant 1 : i64
// CHECK-NEXT: arith.constant 0 : i64
// CHECK-NEXT: %[[F:.*]] = arith.constant 15 : i64
// CHECK-NEXT: call @loom_cpu_conv2d_nchw_f32(%[[CI]], %[[CW]], %[[CO]], %[[CB]], {{.*}}, %[[F]])
// CHECK-NOT: linalg.generic
// CHECK: return %[[O]]
func.func @folded(%x: memref<?x3x4x5xf32>, %w: memref<4x3x2x2xf32> {graph.weight = "w"},
                  %b: memref<4xf32>) -> memref<?x4x5x6xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %x, %c0 : memref<?x3x4x5xf32>
  %padded = memref.alloc(%n) : memref<?x3x6x7xf32>
  linalg.map outs(%padded : memref<?x3x6x7xf32>) () {
    %i = linalg.index 0 : index
    linalg.yield %zero : f32
  }
  %window = memref.subview %padded[0, 0, 1, 2] [%n, 3, 4, 5] [1, 1, 1, 1]
      : memref<?x3x6x7xf32> to memref<?x3x4x5xf32, strided<[126, 42, 7, 1], offset: 9>>
  memref.copy %x, %window : memref<?x3x4x5xf32> to memref<?x3x4x5xf32, strided<[126, 42, 7, 1], offset: 9>>
  %m = memref.dim %padded, %c0 : memref<?x3x6x7xf32>
  %o = memref.alloc(%m) : memref<?x4x5x6xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1)>,
                                   affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%b : memref<4xf32>) outs(%o : memref<?x4x5x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%padded, %w : memref<?x3x6x7xf32>, memref<4x3x2x2xf32>) outs(%o : memref<?x4x5x6xf32>)
  %r = memref.alloc(%m) : memref<?x4x5x6xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>,
                                   affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%o : memref<?x4x5x6xf32>) outs(%r : memref<?x4x5x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %y = arith.maximumf %in, %zero : f32
    linalg.yield %y : f32
  }
  return %r : memref<?x4x5x6xf32>
}

// -----

// What the kernel must leave: a padded buffer written between the copy and
// the convolution (its source, %x, is overwritten after the copy: the
// padding stays), an output zero-filled (flags 1) whose pre-activation is
// returned as well (the ReLU stays), and a constant global filter (2);
// the padded buffer, which only the convolution, a fill and the copy
// touch, is NHWC (16; the copy writes it through a strided view):
// flags = 19.
// CHECK-LABEL: func.func @kept
// CHECK: memref.copy
// CHECK: linalg.fill
// CHECK: %[[F:.*]] = arith.constant 19 : i64
// CHECK-NEXT: call @loom_cpu_conv2d_nchw_f32({{.*}}, %[[F]])
// CHECK: arith.maximumf
memref.global "private" constant @filter : memref<4x3x2x2xf32> = dense<0.5>
func.func @kept(%x: memref<1x3x4x5xf32>) -> (memref<1x4x5x6xf32>, memref<1x4x5x6xf32>) {
  %zero = arith.constant 0.0 : f32
  %w = memref.get_global @filter : memref<4x3x2x2xf32>
  %padded = memref.alloc() : memref<1x3x6x7xf32>
  linalg.fill ins(%zero : f32) outs(%padded : memref<1x3x6x7xf32>)
  %window = memref.subview %padded[0, 0, 1, 2] [1, 3, 4, 5] [1, 1, 1, 1]
      : memref<1x3x6x7xf32> to memref<1x3x4x5xf32, strided<[126, 42, 7, 1], offset: 9>>
  memref.copy %x, %window : memref<1x3x4x5xf32> to memref<1x3x4x5xf32, strided<[126, 42, 7, 1], offset: 9>>
  linalg.fill ins(%zero : f32) outs(%x : memref<1x3x4x5xf32>)
  %o = memref.alloc() : memref<1x4x5x6xf32>
  linalg.fill ins(%zero : f32) outs(%o : memref<1x4x5x6xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%padded, %w : memref<1x3x6x7xf32>, memref<4x3x2x2xf32>) outs(%o : memref<1x4x5x6xf32>)
  %r = memref.alloc() : memref<1x4x5x6xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>,
                                   affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%o : memref<1x4x5x6xf32>) outs(%r : memref<1x4x5x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %y = arith.maximumf %in, %zero : f32
    linalg.yield %y : f32
  }
  return %o, %r : memref<1x4x5x6xf32>, memref<1x4x5x6xf32>
}

// -----

// Conv into a buffer only the next conv reads: handed over in NHWC
// (writer flags 1 | 32 = 33, reader 1 | 16 = 17); the reader's output is
// returned, so it stays NCHW.
// CHECK-LABEL: func.func @chain
// CHECK: %[[W:.*]] = arith.constant 33 : i64
// CHECK-NEXT: call @loom_cpu_conv2d_nchw_f32({{.*}}, %[[W]])
// CHECK: %[[R:.*]] = arith.constant 17 : i64
// CHECK-NEXT: call @loom_cpu_conv2d_nchw_f32({{.*}}, %[[R]])
func.func @chain(%x: memref<1x3x6x6xf32>, %f: memref<3x3x1x1xf32>) -> memref<1x3x6x6xf32> {
  %zero = arith.constant 0.0 : f32
  %h = memref.alloc() : memref<1x3x6x6xf32>
  linalg.fill ins(%zero : f32) outs(%h : memref<1x3x6x6xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %f : memref<1x3x6x6xf32>, memref<3x3x1x1xf32>) outs(%h : memref<1x3x6x6xf32>)
  %o = memref.alloc() : memref<1x3x6x6xf32>
  linalg.fill ins(%zero : f32) outs(%o : memref<1x3x6x6xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%h, %f : memref<1x3x6x6xf32>, memref<3x3x1x1xf32>) outs(%o : memref<1x3x6x6xf32>)
  return %o : memref<1x3x6x6xf32>
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

// -----

// An integer matmul (graph.matmul_integer lowered) after its zero fill:
// one call of the integer GEMM with its zero points loaded and widened by
// their operand's signedness; flags = 2 (rhs transposed) | 16 (overwrite)
// | 32 (lhs unsigned) = 50.
// CHECK: func.func private @loom_cpu_matmul_i8(memref<*xi8>, memref<*xi8>, memref<*xi32>, i32, i32, i64) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @integer_matmul
// CHECK-NOT: linalg.fill
// CHECK: %[[L:.*]] = memref.cast %arg0 : memref<?x5x3xi8> to memref<*xi8>
// CHECK: %[[R:.*]] = memref.cast %arg1 : memref<4x3xi8> to memref<*xi8>
// CHECK: %[[O:.*]] = memref.cast %arg4 : memref<?x5x4xi32> to memref<*xi32>
// CHECK: %[[ZA8:.*]] = memref.load %arg2[] : memref<i8>
// CHECK: %[[ZA:.*]] = arith.extui %[[ZA8]] : i8 to i32
// CHECK: %[[ZB8:.*]] = memref.load %arg3[] : memref<i8>
// CHECK: %[[ZB:.*]] = arith.extsi %[[ZB8]] : i8 to i32
// CHECK: %[[F:.*]] = arith.constant 50 : i64
// CHECK: call @loom_cpu_matmul_i8(%[[L]], %[[R]], %[[O]], %[[ZA]], %[[ZB]], %[[F]])
// CHECK-NOT: linalg.generic
func.func @integer_matmul(%a: memref<?x5x3xi8>, %b: memref<4x3xi8>, %za: memref<i8>, %zb: memref<i8>, %o: memref<?x5x4xi32>) {
  %c0 = arith.constant 0 : i32
  linalg.fill ins(%c0 : i32) outs(%o : memref<?x5x4xi32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>,
                                   affine_map<(d0, d1, d2, d3) -> (d2, d3)>,
                                   affine_map<(d0, d1, d2, d3) -> ()>,
                                   affine_map<(d0, d1, d2, d3) -> ()>,
                                   affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b, %za, %zb : memref<?x5x3xi8>, memref<4x3xi8>, memref<i8>, memref<i8>) outs(%o : memref<?x5x4xi32>) {
  ^bb0(%x: i8, %y: i8, %u: i8, %v: i8, %acc: i32):
    %xw = arith.extui %x : i8 to i32
    %uw = arith.extui %u : i8 to i32
    %xs = arith.subi %xw, %uw : i32
    %yw = arith.extsi %y : i8 to i32
    %vw = arith.extsi %v : i8 to i32
    %ys = arith.subi %yw, %vw : i32
    %m = arith.muli %xs, %ys : i32
    %s = arith.addi %acc, %m : i32
    linalg.yield %s : i32
  }
  return
}

// -----

// The same with constant zero points folded into the body (a zero one
// folded away): constants at the call, rhs signed. flags = 32.
// CHECK-LABEL: func.func @integer_matmul_constant_zeros
// CHECK: memref.cast %arg2
// CHECK-NEXT: %[[ZA:.*]] = arith.constant 7 : i32
// CHECK-NEXT: %[[ZB:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[F:.*]] = arith.constant 32 : i64
// CHECK: call @loom_cpu_matmul_i8(%{{.*}}, %{{.*}}, %{{.*}}, %[[ZA]], %[[ZB]], %[[F]])
func.func @integer_matmul_constant_zeros(%a: memref<5x3xi8>, %b: memref<3x4xi8>, %o: memref<5x4xi32>) {
  %c7 = arith.constant 7 : i32
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                                   affine_map<(d0, d1, d2) -> (d2, d1)>,
                                   affine_map<(d0, d1, d2) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<5x3xi8>, memref<3x4xi8>) outs(%o : memref<5x4xi32>) {
  ^bb0(%x: i8, %y: i8, %acc: i32):
    %xw = arith.extui %x : i8 to i32
    %xs = arith.subi %xw, %c7 : i32
    %yw = arith.extsi %y : i8 to i32
    %m = arith.muli %yw, %xs : i32
    %s = arith.addi %m, %acc : i32
    linalg.yield %s : i32
  }
  return
}

// -----

// An i32 matmul of operands that are not widened 8-bit values stays loops.
// CHECK-LABEL: func.func @i32_matmul_stays
// CHECK: linalg.generic
// CHECK-NOT: call @loom_cpu_matmul_i8
func.func @i32_matmul_stays(%a: memref<5x3xi32>, %b: memref<3x4xi32>, %o: memref<5x4xi32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                                   affine_map<(d0, d1, d2) -> (d2, d1)>,
                                   affine_map<(d0, d1, d2) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<5x3xi32>, memref<3x4xi32>) outs(%o : memref<5x4xi32>) {
  ^bb0(%x: i32, %y: i32, %acc: i32):
    %m = arith.muli %x, %y : i32
    %s = arith.addi %acc, %m : i32
    linalg.yield %s : i32
  }
  return
}
