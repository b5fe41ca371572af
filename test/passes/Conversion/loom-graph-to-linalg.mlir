// graph ops lower to linalg on tensors: elementwise ops as one generic each
// with broadcasting in the indexing maps, dynamic dims through tensor.dim.
// RUN: loom-opt --loom-graph-to-linalg --split-input-file --verify-diagnostics %s | FileCheck %s

// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[COL0:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func.func @broadcast_add
// CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32>, %[[B:.*]]: tensor<4xf32>, %[[C:.*]]: tensor<?x1xf32>)
func.func @broadcast_add(%x: tensor<?x4xf32>, %b: tensor<4xf32>, %c: tensor<?x1xf32>) -> tensor<?x4xf32> {
  // CHECK: %[[C0:.*]] = arith.constant 0 : index
  // CHECK: %[[N:.*]] = tensor.dim %[[X]], %[[C0]]
  // CHECK: %[[E:.*]] = tensor.empty(%[[N]]) : tensor<?x4xf32>
  // CHECK: %[[S:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[X]], %[[B]] : tensor<?x4xf32>, tensor<4xf32>) outs(%[[E]] : tensor<?x4xf32>)
  // CHECK: arith.addf
  %0 = graph.add %x, %b : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  // CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[COL0]], #[[ID]]]
  // CHECK: arith.mulf
  %1 = graph.mul %0, %c : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
  return %1 : tensor<?x4xf32>
}

// -----

// CHECK-LABEL: func.func @unary_and_compare
func.func @unary_and_compare(%x: tensor<8xf32>, %i: tensor<8xi32>) -> (tensor<8xf32>, tensor<8xi1>, tensor<8xi32>) {
  // Exact gelu: 0.5 x (1 + erf(x / sqrt(2))).
  // CHECK: math.erf
  %0 = graph.gelu %x : tensor<8xf32>
  // CHECK: arith.cmpf une
  %1 = graph.compare ne, %0, %x : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xi1>
  // Floored modulo on integers: the remainder, moved by rhs when the signs differ.
  // CHECK: arith.remsi
  // CHECK: arith.select
  %2 = graph.mod %i, %i : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
  return %0, %1, %2 : tensor<8xf32>, tensor<8xi1>, tensor<8xi32>
}

// -----

// CHECK-DAG: #[[L:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[R:.*]] = affine_map<(d0, d1, d2, d3) -> (d3, d2)>
// CHECK-DAG: #[[O:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @matmul
func.func @matmul(%a: tensor<?x16x32xf32>, %w: tensor<32x8xf32>) -> tensor<?x16x8xf32> {
  // CHECK: %[[Z:.*]] = linalg.fill
  // CHECK: linalg.generic {indexing_maps = [#[[L]], #[[R]], #[[O]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
  %0 = graph.matmul %a, %w : (tensor<?x16x32xf32>, tensor<32x8xf32>) -> tensor<?x16x8xf32>
  return %0 : tensor<?x16x8xf32>
}

// -----

// CHECK-LABEL: func.func @reduce_and_reshape
func.func @reduce_and_reshape(%x: tensor<?x4x8xf32>) -> (tensor<?x1x1xf32>, tensor<?x32xf32>, tensor<8x4x?xf32>) {
  // CHECK: arith.constant 0.000000e+00 : f32
  // CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "reduction"]
  // CHECK: arith.addf
  // CHECK: arith.divf
  // CHECK: tensor.reshape
  %0 = graph.reduce_mean %x axes = [1, 2] keepdims : (tensor<?x4x8xf32>) -> tensor<?x1x1xf32>
  // CHECK: tensor.reshape {{.*}} -> tensor<?x32xf32>
  %1 = graph.reshape %x [0, 32] : (tensor<?x4x8xf32>) -> tensor<?x32xf32>
  // CHECK: linalg.transpose
  %2 = graph.transpose %x [2, 1, 0] : (tensor<?x4x8xf32>) -> tensor<8x4x?xf32>
  return %0, %1, %2 : tensor<?x1x1xf32>, tensor<?x32xf32>, tensor<8x4x?xf32>
}

// -----

// Softmax: the row max, the sum of exp(x - max), then one parallel pass.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @softmax
func.func @softmax(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // CHECK: arith.constant 0xFF800000 : f32
  // CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ROW]]], iterator_types = ["parallel", "reduction"]}
  // CHECK: arith.maximumf
  // CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ROW]]], iterator_types = ["parallel", "reduction"]}
  // CHECK: math.exp
  // CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
  // CHECK: arith.divf
  %0 = graph.softmax %x {axis = 1 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// Layer norm: mean, then the variance around it, then the affine map;
// scale and bias read through the normalized dims.
// CHECK-DAG: #[[AFF:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-LABEL: func.func @layer_norm
func.func @layer_norm(%x: tensor<?x4x8xf32>, %g: tensor<4x8xf32>) -> tensor<?x4x8xf32> {
  // CHECK: iterator_types = ["parallel", "reduction", "reduction"]
  // CHECK: arith.divf
  // CHECK: iterator_types = ["parallel", "reduction", "reduction"]
  // CHECK: linalg.generic {indexing_maps = [{{.*}}, #[[AFF]], {{.*}}]
  // CHECK: math.sqrt
  %0 = graph.layer_norm %x, %g {axis = 1 : i64, epsilon = 1.0e-05 : f64}
      : (tensor<?x4x8xf32>, tensor<4x8xf32>) -> tensor<?x4x8xf32>
  return %0 : tensor<?x4x8xf32>
}

// -----

// Dropout in training: a SplitMix64 hash of the element index; at
// inference it is the identity.
// CHECK-LABEL: func.func @dropout
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
func.func @dropout(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK: %[[T:.*]] = linalg.generic
  // CHECK: linalg.index 1
  // CHECK: arith.shrui
  // CHECK: arith.cmpi uge
  // CHECK: arith.select
  %0 = graph.dropout %x {ratio = 0.25 : f64, seed = 3 : i64, training} : tensor<4x8xf32>
  %1 = graph.dropout %x {ratio = 0.25 : f64} : tensor<4x8xf32>
  // CHECK: return %[[T]], %[[X]]
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// arg_max: one reduction with two outputs, the value and its index.
// CHECK-LABEL: func.func @arg_max
func.func @arg_max(%x: tensor<4x?xi32>) -> tensor<4x1xi64> {
  // CHECK: %[[R:.*]]:2 = linalg.generic
  // CHECK: arith.cmpi sgt
  // CHECK: linalg.index 1
  // CHECK: tensor.reshape %[[R]]#1
  %0 = graph.arg_max %x axis = 1 keepdims : (tensor<4x?xi32>) -> tensor<4x1xi64>
  return %0 : tensor<4x1xi64>
}

// -----

// Cross-entropy reads each row's label with tensor.extract; ignored rows
// read class 0 and count 0.
// CHECK-LABEL: func.func @cross_entropy
func.func @cross_entropy(%l: tensor<?x10xf32>, %y: tensor<?xi64>) -> tensor<f32> {
  // CHECK: arith.cmpi ne
  // CHECK: tensor.extract
  // CHECK: math.log
  %0 = graph.cross_entropy %l, %y reduction = mean {ignore_index = -100 : i64}
      : (tensor<?x10xf32>, tensor<?xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Concat: insert_slice at running offsets, dynamic ones from tensor.dim.
// CHECK-LABEL: func.func @concat
// CHECK-SAME: (%[[A:.*]]: tensor<2x?xf32>, %[[B:.*]]: tensor<2x3xf32>)
func.func @concat(%a: tensor<2x?xf32>, %b: tensor<2x3xf32>) -> tensor<2x?xf32> {
  // CHECK: %[[N:.*]] = tensor.dim %[[A]]
  // CHECK: %[[R:.*]] = tensor.insert_slice %[[A]] into {{.*}}[0, 0] [2, %{{.*}}] [1, 1]
  // CHECK: tensor.insert_slice %[[B]] into %[[R]][0, %{{.*}}] [2, 3] [1, 1]
  %0 = graph.concat %a, %b axis = 1 : (tensor<2x?xf32>, tensor<2x3xf32>) -> tensor<2x?xf32>
  return %0 : tensor<2x?xf32>
}

// -----

// Slice: extract_slice with the positive stride; a negative step is then
// reversed by a generic that reads mirrored indices.
// CHECK-LABEL: func.func @slice
func.func @slice(%x: tensor<8x?xf32>) -> (tensor<3x?xf32>, tensor<4x?xf32>) {
  // CHECK: tensor.extract_slice %{{.*}}[1, %{{.*}}] [3, %{{.*}}] [2, 1] : tensor<8x?xf32> to tensor<3x?xf32>
  %0 = graph.slice %x starts = [1, 0] ends = [6, -1] steps = [2, 1] : (tensor<8x?xf32>) -> tensor<3x?xf32>
  // CHECK: tensor.extract_slice %{{.*}}[0, %{{.*}}] [4, %{{.*}}] [2, 1] : tensor<8x?xf32> to tensor<4x?xf32>
  // CHECK: linalg.generic
  // CHECK: tensor.extract
  %1 = graph.slice %x starts = [-2, 0] ends = [-9223372036854775808, 9223372036854775807] steps = [-2, 1] : (tensor<8x?xf32>) -> tensor<4x?xf32>
  return %0, %1 : tensor<3x?xf32>, tensor<4x?xf32>
}

// -----

// Gather: a generic over the result reading the index tensor; negative
// indices move by the axis size.
// CHECK-DAG: #[[IDX:.*]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-LABEL: func.func @gather
func.func @gather(%d: tensor<4x?x3xf32>, %i: tensor<5xi64>) -> tensor<4x5x3xf32> {
  // CHECK: linalg.generic {indexing_maps = [#[[IDX]], {{.*}}]
  // CHECK: arith.cmpi slt
  // CHECK: arith.select
  // CHECK: tensor.extract
  %0 = graph.gather %d, %i axis = 1 : (tensor<4x?x3xf32>, tensor<5xi64>) -> tensor<4x5x3xf32>
  return %0 : tensor<4x5x3xf32>
}

// -----

// Pad: constant mode is tensor.pad; edge clamps the read position.
// CHECK-LABEL: func.func @pad
func.func @pad(%x: tensor<?x3xi32>) -> (tensor<?x5xi32>, tensor<?x5xi32>) {
  // CHECK: tensor.pad %{{.*}} low[1, 0] high[0, 2]
  // CHECK: tensor.yield %{{.*}} : i32
  %0 = graph.pad %x pads = [1, 0, 0, 2] mode = constant {value = 7.0 : f64} : (tensor<?x3xi32>) -> tensor<?x5xi32>
  // CHECK: linalg.generic
  // CHECK: arith.minsi
  // CHECK: tensor.extract
  %1 = graph.pad %x pads = [0, 1, 0, 1] mode = edge : (tensor<?x3xi32>) -> tensor<?x5xi32>
  return %0, %1 : tensor<?x5xi32>, tensor<?x5xi32>
}

// -----

// Cumsum: an extra reduction dim along the axis, masked by j <= i.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @cumsum
func.func @cumsum(%x: tensor<2x?xi64>) -> tensor<2x?xi64> {
  // CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["parallel", "parallel", "reduction"]}
  // CHECK: arith.cmpi ule
  %0 = graph.cumsum %x axis = 1 : (tensor<2x?xi64>) -> tensor<2x?xi64>
  return %0 : tensor<2x?xi64>
}

// -----

// Conv: upstream's named NCHW ops; a 1-D conv over a unit height, groups
// through a G dim, pads as tensor.pad, the bias broadcast into the
// accumulator.
// CHECK-LABEL: func.func @conv
func.func @conv(%x: tensor<?x4x8x8xf32>, %w: tensor<6x4x3x3xf32>, %b: tensor<6xf32>,
                %g: tensor<6x2x3x3xf32>, %x1: tensor<1x4x16xf32>, %w1: tensor<2x4x3xf32>)
    -> (tensor<?x6x8x8xf32>, tensor<?x6x6x6xf32>, tensor<1x2x6xf32>) {
  // CHECK: tensor.pad %{{.*}} low[0, 0, 1, 1] high[0, 0, 1, 1]
  // CHECK: linalg.generic
  // CHECK: linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
  %0 = graph.conv %x, %w, %b strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1
      : (tensor<?x4x8x8xf32>, tensor<6x4x3x3xf32>, tensor<6xf32>) -> tensor<?x6x8x8xf32>
  // CHECK: tensor.expand_shape {{.*}} into tensor<?x2x2x8x8xf32>
  // CHECK: tensor.expand_shape {{.*}} into tensor<2x3x2x3x3xf32>
  // CHECK: linalg.conv_2d_ngchw_gfchw
  // CHECK: tensor.collapse_shape {{.*}} into tensor<?x6x6x6xf32>
  %1 = graph.conv %x, %g strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 2
      : (tensor<?x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<?x6x6x6xf32>
  // CHECK: tensor.expand_shape {{.*}} into tensor<1x4x1x16xf32>
  // CHECK: linalg.conv_2d_nchw_fchw {dilations = dense<[1, 2]> : tensor<2xi64>, strides = dense<[1, 2]> : tensor<2xi64>}
  // CHECK: tensor.collapse_shape {{.*}} into tensor<1x2x6xf32>
  %2 = graph.conv %x1, %w1 strides = [2] padding = [0, 0] dilations = [2] groups = 1
      : (tensor<1x4x16xf32>, tensor<2x4x3xf32>) -> tensor<1x2x6xf32>
  return %0, %1, %2 : tensor<?x6x8x8xf32>, tensor<?x6x6x6xf32>, tensor<1x2x6xf32>
}

// -----

// A grouped 3-D conv: groups through a G dim (upstream has no grouped 3-D
// named op), then one generic over (n, g, o, do, ho, wo, c, kd, kh, kw)
// reading the padded input at o * stride + k * dilation.
// CHECK-DAG: #[[IN3:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8, d9) -> (d0, d1, d6, d3 * 2 + d7, d4 + d8 * 2, d5 + d9)>
// CHECK-DAG: #[[W3:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8, d9) -> (d1, d2, d6, d7, d8, d9)>
// CHECK-LABEL: func.func @conv3d
func.func @conv3d(%x: tensor<?x4x5x6x?xf32>, %w: tensor<6x2x2x3x2xf32>, %b: tensor<6xf32>)
    -> tensor<?x6x3x2x?xf32> {
  // CHECK: tensor.pad %{{.*}} low[0, 0, 1, 0, 1] high[0, 0, 0, 0, 1]
  // CHECK: tensor.expand_shape {{.*}} into tensor<?x2x2x6x6x?xf32>
  // CHECK: tensor.expand_shape {{.*}} into tensor<2x3x2x2x3x2xf32>
  // CHECK: linalg.generic {indexing_maps = [#[[IN3]], #[[W3]], {{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]}
  // CHECK: tensor.collapse_shape {{.*}} into tensor<?x6x3x2x?xf32>
  %0 = graph.conv %x, %w, %b strides = [2, 1, 1] padding = [1, 0, 1, 0, 0, 1] dilations = [1, 2, 1] groups = 2
      : (tensor<?x4x5x6x?xf32>, tensor<6x2x2x3x2xf32>, tensor<6xf32>) -> tensor<?x6x3x2x?xf32>
  return %0 : tensor<?x6x3x2x?xf32>
}

// -----

// An ungrouped 3-D conv: one 2-D conv per kernel depth offset, the input's
// depths od * stride + kd * dilation next to the batch, accumulated in
// [N * Do, O, Ho, Wo].
// CHECK-LABEL: func.func @conv3d_2d
func.func @conv3d_2d(%x: tensor<?x4x5x6x7xf32>, %w: tensor<6x4x2x3x2xf32>)
    -> tensor<?x6x2x2x6xf32> {
  // CHECK: linalg.transpose ins(%{{.*}} : tensor<?x6x2x2x6xf32>) outs(%{{.*}} : tensor<?x2x6x2x6xf32>) permutation = [0, 2, 1, 3, 4]
  // CHECK: tensor.collapse_shape {{.*}} into tensor<?x6x2x6xf32>
  // CHECK: tensor.extract_slice %{{.*}}[0, 0, 0, 0, 0] [%{{.*}}, 4, 2, 6, 7] [1, 1, 2, 1, 1]
  // CHECK: linalg.transpose
  // CHECK: tensor.extract_slice %{{.*}}[0, 0, 0, 0, 0] [6, 4, 1, 3, 2] [1, 1, 1, 1, 1]
  // CHECK: %[[FIRST:.*]] = linalg.conv_2d_nchw_fchw {dilations = dense<[2, 1]> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
  // CHECK: tensor.extract_slice %{{.*}}[0, 0, 1, 0, 0] [%{{.*}}, 4, 2, 6, 7] [1, 1, 2, 1, 1]
  // CHECK: linalg.conv_2d_nchw_fchw {{.*}} outs(%[[FIRST]] : tensor<?x6x2x6xf32>)
  // CHECK: tensor.expand_shape {{.*}} into tensor<?x2x6x2x6xf32>
  // CHECK: linalg.transpose {{.*}} permutation = [0, 2, 1, 3, 4]
  %0 = graph.conv %x, %w strides = [2, 1, 1] padding = [0, 0, 0, 0, 0, 0] dilations = [1, 2, 1] groups = 1
      : (tensor<?x4x5x6x7xf32>, tensor<6x4x2x3x2xf32>) -> tensor<?x6x2x2x6xf32>
  return %0 : tensor<?x6x2x2x6xf32>
}

// -----

// Pooling: one generic over (n, c, outputs, window) reading the padded
// input at o * stride + k * dilation.
// CHECK-DAG: #[[WIN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)>
// CHECK-LABEL: func.func @max_pool
func.func @max_pool(%x: tensor<1x3x?x8xf32>) -> tensor<1x3x?x4xf32> {
  // CHECK: tensor.pad
  // CHECK: tensor.yield %{{.*}} : f32
  // CHECK: linalg.generic {indexing_maps = [#[[WIN]], {{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
  // CHECK: arith.maximumf
  %0 = graph.max_pool %x kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1]
      : (tensor<1x3x?x8xf32>) -> tensor<1x3x?x4xf32>
  return %0 : tensor<1x3x?x4xf32>
}

// -----

// Resize: one generic over the output; a dim with scale 1 is a plain
// index, each resized dim computes its input coordinate in f64 and reads
// two clamped taps (linear), four taps in all for two dims.
// CHECK-LABEL: func.func @resize_linear
// CHECK-SAME: (%[[X:.*]]: tensor<?x3x4x4xf32>)
func.func @resize_linear(%x: tensor<?x3x4x4xf32>) -> tensor<?x3x8x8xf32> {
  // CHECK: %[[N:.*]] = tensor.dim %[[X]], %c0
  // CHECK: tensor.empty(%[[N]]) : tensor<?x3x8x8xf32>
  // CHECK: linalg.generic
  // CHECK: %[[I0:.*]] = linalg.index 0
  // CHECK: %[[I1:.*]] = linalg.index 1
  // CHECK: math.floor %{{.*}} : f64
  // CHECK: arith.minsi
  // CHECK: tensor.extract %[[X]][%[[I0]], %[[I1]], %{{.*}}, %{{.*}}]
  // CHECK: arith.extf %{{.*}} : f32 to f64
  // CHECK-COUNT-3: tensor.extract %[[X]]
  // CHECK-NOT: tensor.extract
  // CHECK: arith.truncf %{{.*}} : f64 to f32
  %0 = graph.resize %x scales = [1.0, 1.0, 2.0, 2.0] sizes = [-1, -1, -1, -1] mode = linear
      coordinate_mode = half_pixel nearest_mode = round_prefer_floor
      : (tensor<?x3x4x4xf32>) -> tensor<?x3x8x8xf32>
  return %0 : tensor<?x3x8x8xf32>
}

// -----

// Nearest reads one tap per resized dim, in the element type.
// CHECK-LABEL: func.func @resize_nearest
func.func @resize_nearest(%x: tensor<1x1x2x2xi32>) -> tensor<1x1x4x6xi32> {
  // CHECK: linalg.generic
  // CHECK: arith.cmpf ogt
  // CHECK: tensor.extract %{{.*}} : tensor<1x1x2x2xi32>
  // CHECK-NOT: tensor.extract
  // CHECK: linalg.yield %{{.*}} : i32
  %0 = graph.resize %x scales = [1.0, 1.0, 2.0, 3.0] sizes = [-1, -1, -1, -1] mode = nearest
      coordinate_mode = half_pixel nearest_mode = round_prefer_floor
      : (tensor<1x1x2x2xi32>) -> tensor<1x1x4x6xi32>
  return %0 : tensor<1x1x4x6xi32>
}

// -----

// top_k: each element's rank (a count over the axis), then output j takes
// the element of rank j, values and indices from one generic.
// CHECK-DAG: #[[OUTER:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[ALONG:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @top_k
func.func @top_k(%x: tensor<2x8xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>) {
  // CHECK: %[[RANKS:.*]] = linalg.generic {indexing_maps = [#[[OUTER]], #[[ALONG]], #[[OUTER]]], iterator_types = ["parallel", "parallel", "reduction"]}
  // CHECK: arith.cmpf ogt
  // CHECK: -> tensor<2x8xi64>
  // CHECK: %[[R:.*]]:2 = linalg.generic {indexing_maps = [#[[ALONG]], #[[ALONG]], #[[OUTER]], #[[OUTER]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.*}}, %[[RANKS]] : {{.*}})
  // CHECK: -> (tensor<2x3xf32>, tensor<2x3xi64>)
  // CHECK: return %[[R]]#0, %[[R]]#1
  %v, %i = graph.top_k %x k = 3 axis = 1 : (tensor<2x8xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>)
  return %v, %i : tensor<2x3xf32>, tensor<2x3xi64>
}

// -----

// scatter_elements: a copy of data, a run-time check that every index is
// in range, then a loop nest over the updates that inserts each one (added
// to the element there) at its index, clamped into the dim.
// CHECK-LABEL: func.func @scatter_elements
// CHECK-SAME: (%[[D:.*]]: tensor<3x?xf32>, %[[I:.*]]: tensor<2x?xi64>, %[[U:.*]]: tensor<2x?xf32>)
func.func @scatter_elements(%d: tensor<3x?xf32>, %i: tensor<2x?xi64>, %u: tensor<2x?xf32>) -> tensor<3x?xf32> {
  // CHECK: %[[COPY:.*]] = linalg.copy ins(%[[D]] : tensor<3x?xf32>)
  // CHECK: linalg.generic {{.*}} ins(%[[I]] : tensor<2x?xi64>)
  // CHECK: cf.assert {{.*}} "graph.scatter_elements: an index is out of range for its dim"
  // CHECK: scf.for %[[A:.*]] = {{.*}} iter_args(%{{.*}} = %[[COPY]])
  // CHECK: scf.for %[[B:.*]] = {{.*}} iter_args(%[[ACC:.*]] = %{{.*}})
  // CHECK: %[[V:.*]] = tensor.extract %[[U]][%[[A]], %[[B]]]
  // CHECK: %[[IDX:.*]] = tensor.extract %[[I]][%[[A]], %[[B]]]
  // CHECK: arith.select
  // CHECK: arith.minsi
  // CHECK: %[[POS:.*]] = arith.maxsi
  // CHECK: %[[OLD:.*]] = tensor.extract %[[ACC]][%[[POS]], %[[B]]]
  // CHECK: %[[SUM:.*]] = arith.addf %[[OLD]], %[[V]]
  // CHECK: tensor.insert %[[SUM]] into %[[ACC]][%[[POS]], %[[B]]]
  %0 = graph.scatter_elements %d, %i, %u axis = 0 reduction = add
      : (tensor<3x?xf32>, tensor<2x?xi64>, tensor<2x?xf32>) -> tensor<3x?xf32>
  return %0 : tensor<3x?xf32>
}

// -----

// Ops nested in kernel.fusion regions (from --loom-fusion) are lowered in
// place; a region whose ops all lower to their operand (inference dropout)
// is replaced by what it forwards.
// CHECK-LABEL: func.func @fusion_regions
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK: %[[R:.*]] = kernel.fusion "fusion_0" elementwise(%[[X]])
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<4x8xf32>):
// CHECK: linalg.generic {{.*}} ins(%[[A]] : tensor<4x8xf32>)
// CHECK: math.exp
// CHECK: kernel.yield
// CHECK-NOT: kernel.fusion
// CHECK: return %[[X]], %[[R]]
func.func @fusion_regions(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = kernel.fusion "fusion_0" elementwise (%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %1 = graph.exp %a : tensor<4x8xf32>
    kernel.yield %1 : tensor<4x8xf32>
  }
  %2 = kernel.fusion "fusion_1" elementwise (%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %3 = graph.dropout %a {ratio = 0.25 : f64} : tensor<4x8xf32>
    kernel.yield %3 : tensor<4x8xf32>
  }
  return %2, %0 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// An op without a lowering is an error naming it; the ops around it still
// lower, and the pass fails.
mesh.mesh @mesh(shape = 2)
func.func @no_lowering(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.grad_all_reduce' has no lowering to linalg yet}}
  %0 = graph.grad_all_reduce %x on @mesh axes = [0] : tensor<4xf32>
  %1 = graph.exp %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}
