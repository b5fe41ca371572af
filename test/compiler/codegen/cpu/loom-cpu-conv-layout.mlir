// RUN: loom-opt --loom-cpu-library-calls --split-input-file %s | FileCheck %s

// A residual block as bufferization leaves it: a stem convolution, then
// conv, conv, relu(conv + a), then a convolution whose output a global sum
// reads. The residual add folds into the block's second convolution:
// nothing reads the block's input %a after the add, so that convolution
// accumulates into %a itself (flags lose overwrite (1), gain ReLU (8)),
// and the add's users read %a. Every buffer between the convolutions is
// NHWC (in 16, out 32); the last output, read by a reduction, is NHWC too
// and the reduction reads it through a strided view.
// CHECK-LABEL: func.func @block
// CHECK: %[[A:.*]] = memref.alloc() : memref<1x4x5x5xf32>
// CHECK: %[[CA:.*]] = memref.cast %[[A]] :
// CHECK: %[[F1:.*]] = arith.constant 33 : i64
// CHECK-NEXT: call @loom_cpu_conv2d_nchw_f32(%{{.*}}, %{{.*}}, %[[CA]], {{.*}}, %[[F1]])
// CHECK: %[[F2:.*]] = arith.constant 49 : i64
// CHECK-NEXT: call @loom_cpu_conv2d_nchw_f32({{.*}}, %[[F2]])
// CHECK-NOT: linalg.generic
// CHECK: %[[CA2:.*]] = memref.cast %[[A]] :
// CHECK: %[[F3:.*]] = arith.constant 56 : i64
// CHECK-NEXT: call @loom_cpu_conv2d_nchw_f32(%{{.*}}, %{{.*}}, %[[CA2]], {{.*}}, %[[F3]])
// CHECK: %[[D:.*]] = memref.alloc() : memref<1x4x5x5xf32>
// CHECK-NEXT: %[[V:.*]] = memref.reinterpret_cast %[[D]] to offset: [0], sizes: [1, 4, 5, 5], strides: [100, 1, 20, 4]
// CHECK: %[[CA3:.*]] = memref.cast %[[A]] :
// CHECK: %[[F4:.*]] = arith.constant 49 : i64
// CHECK-NEXT: call @loom_cpu_conv2d_nchw_f32(%[[CA3]], {{.*}}, %[[F4]])
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[V]] :
func.func @block(%x: memref<1x4x5x5xf32>, %f: memref<4x4x1x1xf32>) -> memref<1x4xf32> {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<1x4x5x5xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<1x4x5x5xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %f : memref<1x4x5x5xf32>, memref<4x4x1x1xf32>) outs(%a : memref<1x4x5x5xf32>)
  %h = memref.alloc() : memref<1x4x5x5xf32>
  linalg.fill ins(%zero : f32) outs(%h : memref<1x4x5x5xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%a, %f : memref<1x4x5x5xf32>, memref<4x4x1x1xf32>) outs(%h : memref<1x4x5x5xf32>)
  %b = memref.alloc() : memref<1x4x5x5xf32>
  linalg.fill ins(%zero : f32) outs(%b : memref<1x4x5x5xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%h, %f : memref<1x4x5x5xf32>, memref<4x4x1x1xf32>) outs(%b : memref<1x4x5x5xf32>)
  %c = memref.alloc() : memref<1x4x5x5xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>,
                                   affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>,
                                   affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%b, %a : memref<1x4x5x5xf32>, memref<1x4x5x5xf32>) outs(%c : memref<1x4x5x5xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %s = arith.addf %p, %q : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }
  %d = memref.alloc() : memref<1x4x5x5xf32>
  linalg.fill ins(%zero : f32) outs(%d : memref<1x4x5x5xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%c, %f : memref<1x4x5x5xf32>, memref<4x4x1x1xf32>) outs(%d : memref<1x4x5x5xf32>)
  %sum = memref.alloc() : memref<1x4xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<1x4xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>,
                                   affine_map<(d0, d1, d2, d3) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%d : memref<1x4x5x5xf32>) outs(%sum : memref<1x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  }
  return %sum : memref<1x4xf32>
}

// A residual the convolution itself reads (a block whose first layer is
// the one the add follows) is copied into the convolution's output
// first: in and out never share a buffer.
// CHECK-LABEL: func.func @reads_residual
// CHECK: %[[A:.*]] = memref.alloc() : memref<1x4x5x5xf32>
// CHECK: %[[B:.*]] = memref.alloc() : memref<1x4x5x5xf32>
// CHECK: linalg.copy ins(%[[A]] : {{.*}}) outs(%[[B]] :
// CHECK: %[[F:.*]] = arith.constant 56 : i64
// CHECK-NEXT: call @loom_cpu_conv2d_nchw_f32({{.*}}, %[[F]])
// CHECK-NOT: linalg.generic
func.func @reads_residual(%x: memref<1x4x5x5xf32>, %f: memref<4x4x1x1xf32>) -> memref<1x4x5x5xf32> {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<1x4x5x5xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<1x4x5x5xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %f : memref<1x4x5x5xf32>, memref<4x4x1x1xf32>) outs(%a : memref<1x4x5x5xf32>)
  %b = memref.alloc() : memref<1x4x5x5xf32>
  linalg.fill ins(%zero : f32) outs(%b : memref<1x4x5x5xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%a, %f : memref<1x4x5x5xf32>, memref<4x4x1x1xf32>) outs(%b : memref<1x4x5x5xf32>)
  %c = memref.alloc() : memref<1x4x5x5xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>,
                                   affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>,
                                   affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%a, %b : memref<1x4x5x5xf32>, memref<1x4x5x5xf32>) outs(%c : memref<1x4x5x5xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %s = arith.addf %p, %q : f32
    %r = arith.maximumf %zero, %s : f32
    linalg.yield %r : f32
  }
  %o = memref.alloc() : memref<1x4x5x5xf32>
  linalg.fill ins(%zero : f32) outs(%o : memref<1x4x5x5xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%c, %f : memref<1x4x5x5xf32>, memref<4x4x1x1xf32>) outs(%o : memref<1x4x5x5xf32>)
  return %o : memref<1x4x5x5xf32>
}

// -----

// The dynamic-batch form (the add reads batch prefixes of both buffers, as
// a run-time size check leaves them): the copy is of the smaller batch.
// CHECK-LABEL: func.func @dynamic
// CHECK: %[[N:.*]] = arith.minui
// CHECK: %[[R:.*]] = memref.subview %arg2[0, 0, 0, 0] [%[[N]], 4, 5, 5] [1, 1, 1, 1]
// CHECK-NEXT: %[[O:.*]] = memref.subview %{{.*}}[0, 0, 0, 0] [%[[N]], 4, 5, 5] [1, 1, 1, 1]
// CHECK-NEXT: linalg.copy ins(%[[R]] : {{.*}}) outs(%[[O]] :
// The residual is an argument, so the buffer stays NCHW: flags 0 (no
// overwrite, no ReLU).
// CHECK-NEXT: %[[F:.*]] = arith.constant 0 : i64
// CHECK-NEXT: call @loom_cpu_conv2d_nchw_f32({{.*}}, %[[F]])
// CHECK-NOT: linalg.generic
func.func @dynamic(%x: memref<?x4x5x5xf32>, %f: memref<4x4x1x1xf32>, %res: memref<?x4x5x5xf32>) -> memref<?x4x5x5xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x4x5x5xf32>
  %a = memref.alloc(%n) : memref<?x4x5x5xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<?x4x5x5xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %f : memref<?x4x5x5xf32>, memref<4x4x1x1xf32>) outs(%a : memref<?x4x5x5xf32>)
  %m = memref.dim %res, %c0 : memref<?x4x5x5xf32>
  %k = arith.minui %n, %m : index
  %pa = memref.subview %a[0, 0, 0, 0] [%k, 4, 5, 5] [1, 1, 1, 1]
      : memref<?x4x5x5xf32> to memref<?x4x5x5xf32, strided<[100, 25, 5, 1]>>
  %pr = memref.subview %res[0, 0, 0, 0] [%k, 4, 5, 5] [1, 1, 1, 1]
      : memref<?x4x5x5xf32> to memref<?x4x5x5xf32, strided<[100, 25, 5, 1]>>
  %c = memref.alloc(%k) : memref<?x4x5x5xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>,
                                   affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>,
                                   affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%pa, %pr : memref<?x4x5x5xf32, strided<[100, 25, 5, 1]>>, memref<?x4x5x5xf32, strided<[100, 25, 5, 1]>>)
      outs(%c : memref<?x4x5x5xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  }
  return %c : memref<?x4x5x5xf32>
}

// -----

// A max pooling between two convolutions: its -inf padding and output
// fill go (the kernel pads: 1 on each side; window 3x3, stride 2), and it
// runs on NHWC like them (flags 1 | 2); the first convolution writes NHWC
// (1 | 32), the second reads it (1 | 16).
// CHECK-LABEL: func.func @pool
// CHECK-NOT: linalg.map
// CHECK-NOT: memref.copy
// CHECK: %[[F1:.*]] = arith.constant 33 : i64
// CHECK-NEXT: call @loom_cpu_conv2d_nchw_f32({{.*}}, %[[F1]])
// CHECK-NOT: linalg.fill
// CHECK: arith.constant 3 : i64
// CHECK-NEXT: arith.constant 3 : i64
// CHECK-NEXT: arith.constant 2 : i64
// CHECK-NEXT: arith.constant 2 : i64
// CHECK-NEXT: arith.constant 1 : i64
// CHECK-NEXT: arith.constant 1 : i64
// CHECK-NEXT: arith.constant 1 : i64
// CHECK-NEXT: arith.constant 1 : i64
// CHECK-NEXT: arith.constant 1 : i64
// CHECK-NEXT: arith.constant 1 : i64
// CHECK-NEXT: %[[P:.*]] = arith.constant 3 : i64
// CHECK-NEXT: call @loom_cpu_maxpool2d_f32({{.*}}, %[[P]])
// CHECK-NOT: linalg.generic
// CHECK: %[[F2:.*]] = arith.constant 17 : i64
// CHECK-NEXT: call @loom_cpu_conv2d_nchw_f32({{.*}}, %[[F2]])
func.func @pool(%x: memref<1x3x6x6xf32>, %f: memref<3x3x1x1xf32>) -> memref<1x3x3x3xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %a = memref.alloc() : memref<1x3x6x6xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<1x3x6x6xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %f : memref<1x3x6x6xf32>, memref<3x3x1x1xf32>) outs(%a : memref<1x3x6x6xf32>)
  %padded = memref.alloc() : memref<1x3x8x8xf32>
  linalg.map outs(%padded : memref<1x3x8x8xf32>) () {
    %i = linalg.index 0 : index
    linalg.yield %ninf : f32
  }
  %window = memref.subview %padded[0, 0, 1, 1] [1, 3, 6, 6] [1, 1, 1, 1]
      : memref<1x3x8x8xf32> to memref<1x3x6x6xf32, strided<[192, 64, 8, 1], offset: 9>>
  memref.copy %a, %window : memref<1x3x6x6xf32> to memref<1x3x6x6xf32, strided<[192, 64, 8, 1], offset: 9>>
  %shape = memref.alloc() : memref<3x3xf32>
  %p = memref.alloc() : memref<1x3x3x3xf32>
  linalg.fill ins(%ninf : f32) outs(%p : memref<1x3x3x3xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)>,
                                   affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>,
                                   affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%padded, %shape : memref<1x3x8x8xf32>, memref<3x3xf32>) outs(%p : memref<1x3x3x3xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %m = arith.maximumf %out, %in : f32
    linalg.yield %m : f32
  }
  %o = memref.alloc() : memref<1x3x3x3xf32>
  linalg.fill ins(%zero : f32) outs(%o : memref<1x3x3x3xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%p, %f : memref<1x3x3x3xf32>, memref<3x3x1x1xf32>) outs(%o : memref<1x3x3x3xf32>)
  return %o : memref<1x3x3x3xf32>
}

// -----

// A layout is chosen for a buffer and everything linked to it by
// elementwise ops, or not at all: the elementwise op after the
// convolution writes returned buffers, which stay NCHW, so the
// convolution writes NCHW too (flags 1) and nothing is viewed strided.
// CHECK-LABEL: func.func @boundary
// CHECK-COUNT-4: arith.constant 0 : i64
// CHECK-NEXT: %[[F:.*]] = arith.constant 1 : i64
// CHECK-NEXT: call @loom_cpu_conv2d_nchw_f32({{.*}}, %[[F]])
// CHECK: linalg.generic
// CHECK-NOT: reinterpret_cast
func.func @boundary(%x: memref<1x3x6x6xf32>, %f: memref<3x3x1x1xf32>) -> (memref<1x3x6x6xf32>, memref<1x3x6x6xf32>) {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<1x3x6x6xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<1x3x6x6xf32>)
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %f : memref<1x3x6x6xf32>, memref<3x3x1x1xf32>) outs(%a : memref<1x3x6x6xf32>)
  %r = memref.alloc() : memref<1x3x6x6xf32>
  %s = memref.alloc() : memref<1x3x6x6xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>,
                                   affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>,
                                   affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%a : memref<1x3x6x6xf32>) outs(%r, %s : memref<1x3x6x6xf32>, memref<1x3x6x6xf32>) {
  ^bb0(%in: f32, %o1: f32, %o2: f32):
    %y = arith.maximumf %in, %zero : f32
    linalg.yield %y, %in : f32, f32
  }
  return %r, %s : memref<1x3x6x6xf32>, memref<1x3x6x6xf32>
}

// -----

// A ReLU fused into the pooling (max(out, max(in, 0))) is the kernel's
// (kPoolRelu, 4); no padding, the input an argument (NCHW): flags 4.
// CHECK-LABEL: func.func @pool_relu
// CHECK-NOT: linalg.fill
// CHECK: arith.constant 2 : i64
// CHECK-NEXT: arith.constant 2 : i64
// CHECK-NEXT: arith.constant 2 : i64
// CHECK-NEXT: arith.constant 2 : i64
// CHECK-NEXT: arith.constant 1 : i64
// CHECK-NEXT: arith.constant 1 : i64
// CHECK-NEXT: arith.constant 0 : i64
// CHECK-NEXT: arith.constant 0 : i64
// CHECK-NEXT: arith.constant 0 : i64
// CHECK-NEXT: arith.constant 0 : i64
// CHECK-NEXT: %[[P:.*]] = arith.constant 4 : i64
// CHECK-NEXT: call @loom_cpu_maxpool2d_f32({{.*}}, %[[P]])
// CHECK-NOT: linalg.generic
func.func @pool_relu(%x: memref<2x3x4x4xf32>) -> memref<2x3x2x2xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %shape = memref.alloc() : memref<2x2xf32>
  %p = memref.alloc() : memref<2x3x2x2xf32>
  linalg.fill ins(%ninf : f32) outs(%p : memref<2x3x2x2xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)>,
                                   affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>,
                                   affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %shape : memref<2x3x4x4xf32>, memref<2x2xf32>) outs(%p : memref<2x3x2x2xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    %m = arith.maximumf %out, %r : f32
    linalg.yield %m : f32
  }
  return %p : memref<2x3x2x2xf32>
}
