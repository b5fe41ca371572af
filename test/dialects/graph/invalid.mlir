// RUN: loom-opt %s -split-input-file -verify-diagnostics

// One case per verifier rule of the graph dialect; each function is named
// after the rule tag used in GraphOps.cpp. Rules checked by result-type
// inference on an op whose format spells its result type report our message
// and then "failed to infer returned types"; ops whose format has no result
// type (unary ops, cast, iota, constant) infer it while parsing and report
// only our message.

//===----------------------------------------------------------------------===//
// ODS-level constraints
//===----------------------------------------------------------------------===//

// ods_float_operand: exp takes float tensors only.
func.func @ods_float_operand(%x: tensor<4xi32>) {
  // expected-error @+1 {{'graph.exp' op operand #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<4xi32>'}}
  %0 = graph.exp %x : tensor<4xi32>
  return
}

// -----

// ods_numeric_operand: neg does not take i1.
func.func @ods_numeric_operand(%x: tensor<4xi1>) {
  // expected-error @+1 {{'graph.neg' op operand #0 must be ranked tensor of}}
  %0 = graph.neg %x : tensor<4xi1>
  return
}

// -----

// ods_not_graph_element_type: i4 is not a graph element type.
func.func @ods_not_graph_element_type(%x: tensor<4xi4>) {
  // expected-error @+1 {{'graph.relu' op operand #0 must be ranked tensor of}}
  %0 = graph.relu %x : tensor<4xi4>
  return
}

// -----

// ods_unranked: graph ops take ranked tensors only (generic form: the custom
// parser already rejects an unranked type).
func.func @ods_unranked(%x: tensor<*xf32>) {
  // expected-error @+1 {{'graph.tanh' op operand #0 must be ranked tensor of}}
  %0 = "graph.tanh"(%x) : (tensor<*xf32>) -> tensor<*xf32>
  return
}

// -----

// ods_unranked_custom: the custom parser rejects an unranked operand type.
func.func @ods_unranked_custom(%x: tensor<*xf32>) {
  // expected-error @+1 {{invalid kind of type specified}}
  %0 = graph.tanh %x : tensor<*xf32>
  return
}

// -----

// ods_embedding_ids: embedding ids are integer tensors.
func.func @ods_embedding_ids(%t: tensor<10x4xf32>, %ids: tensor<3xf32>) {
  // expected-error @+1 {{'graph.embedding' op operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<3xf32>'}}
  %0 = graph.embedding %t, %ids : (tensor<10x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  return
}

// -----

// ods_gather_indices: gather indices are i32 or i64.
func.func @ods_gather_indices(%d: tensor<10x4xf32>, %idx: tensor<3xi8>) {
  // expected-error @+1 {{'graph.gather' op operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<3xi8>'}}
  %0 = graph.gather %d, %idx axis = 0 : (tensor<10x4xf32>, tensor<3xi8>) -> tensor<3x4xf32>
  return
}

// -----

// ods_where_cond: the condition of where is i1.
func.func @ods_where_cond(%c: tensor<4xf32>, %x: tensor<4xf32>) {
  // expected-error @+1 {{'graph.where' op operand #0 must be ranked tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = graph.where %c, %x, %x : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// ods_cross_entropy_labels: labels are integer class ids.
func.func @ods_cross_entropy_labels(%l: tensor<2x10xf32>, %y: tensor<2xf32>) {
  // expected-error @+1 {{'graph.cross_entropy' op operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2xf32>'}}
  %0 = graph.cross_entropy %l, %y reduction = mean : (tensor<2x10xf32>, tensor<2xf32>) -> tensor<f32>
  return
}

// -----

// ods_iota_element_type: iota produces numeric tensors, not i1.
func.func @ods_iota_element_type() {
  // expected-error @+1 {{'graph.iota' op result #0 must be ranked tensor of}}
  %0 = graph.iota [4] axis = 0 : i1
  return
}

// -----

// ods_compare_result: compare produces i1.
func.func @ods_compare_result(%a: tensor<4xf32>) {
  // expected-error @+1 {{'graph.compare' op result #0 must be ranked tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = graph.compare lt, %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// ods_same_element_type: binary operands share an element type.
func.func @ods_same_element_type(%a: tensor<2x3xf32>, %b: tensor<2x3xf16>) {
  // expected-error @+1 {{'graph.add' op requires the same element type for all operands}}
  %0 = graph.add %a, %b : (tensor<2x3xf32>, tensor<2x3xf16>) -> tensor<2x3xf32>
  return
}

// -----

// ods_same_element_type_matmul: matmul operands share an element type.
func.func @ods_same_element_type_matmul(%a: tensor<2x3xf32>, %b: tensor<3x4xbf16>) {
  // expected-error @+1 {{'graph.matmul' op requires the same element type for all operands}}
  %0 = graph.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xbf16>) -> tensor<2x4xf32>
  return
}

// -----

// ods_same_element_type_concat: concat inputs share an element type.
func.func @ods_same_element_type_concat(%a: tensor<2xi32>, %b: tensor<2xi64>) {
  // expected-error @+1 {{'graph.concat' op requires the same element type for all operands}}
  %0 = graph.concat %a, %b axis = 0 : (tensor<2xi32>, tensor<2xi64>) -> tensor<4xi32>
  return
}

// -----

// ods_same_element_type_compare: compare operands share an element type.
func.func @ods_same_element_type_compare(%a: tensor<4xi32>, %b: tensor<4xi64>) {
  // expected-error @+1 {{'graph.compare' op requires the same element type for all operands}}
  %0 = graph.compare eq, %a, %b : (tensor<4xi32>, tensor<4xi64>) -> tensor<4xi1>
  return
}

// -----

// ods_same_element_type_norm: layer_norm operands share an element type.
func.func @ods_same_element_type_norm(%x: tensor<2x8xf32>, %g: tensor<8xf16>) {
  // expected-error @+1 {{'graph.layer_norm' op requires the same element type for all operands}}
  %0 = graph.layer_norm %x, %g {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x8xf32>, tensor<8xf16>) -> tensor<2x8xf32>
  return
}

// -----

// ods_result_shape: the written result type is checked against the inferred one.
func.func @ods_result_shape(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{'graph.add' op inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<2x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.add %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x4xf32>
  return
}

// -----

// ods_result_dynamic: a dynamic result dim where a static one is inferred is
// a mismatch too (the result type must equal the inferred one).
func.func @ods_result_dynamic(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'graph.reduce_sum' op inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<?xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reduce_sum %x axes = [1] : (tensor<4x8xf32>) -> tensor<?xf32>
  return
}

// -----

// ods_result_element_type: the result element type is the operands'.
func.func @ods_result_element_type(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{'graph.matmul' op inferred type(s) 'tensor<3x5xf32>' are incompatible with return type(s) of operation 'tensor<3x5xf16>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.matmul %a, %b : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf16>
  return
}

// -----

// ods_result_keepdims: without keepdims the reduced dims are removed.
func.func @ods_result_keepdims(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'graph.reduce_max' op inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<4x1xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reduce_max %x axes = [1] : (tensor<4x8xf32>) -> tensor<4x1xf32>
  return
}

// -----

// ods_result_generic: the generic form of an op with a format-inferred result
// type is checked too.
func.func @ods_result_generic(%x: tensor<4xf32>) {
  // expected-error @+2 {{'graph.cast' op inferred type(s) 'tensor<4xf16>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "graph.cast"(%x) {to = f16} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// ods_unary_result: a unary op's result has the operand's shape and type
// (Elementwise reports it before SameOperandsAndResultType).
func.func @ods_unary_result(%x: tensor<4xf32>) {
  // expected-error @+1 {{'graph.sqrt' op all non-scalar operands/results must have the same shape and base type}}
  %0 = "graph.sqrt"(%x) : (tensor<4xf32>) -> tensor<2x2xf32>
  return
}

//===----------------------------------------------------------------------===//
// Constants and generators
//===----------------------------------------------------------------------===//

// -----

// constant_c1: the value is a ranked tensor.
func.func @constant_c1() {
  // expected-error @+1 {{'graph.constant' op value must be a ranked tensor}}
  %0 = graph.constant dense<1.0> : vector<2xf32>
  return
}

// -----

// iota_c1: the shape is static and non-negative.
func.func @iota_c1() {
  // expected-error @+1 {{'graph.iota' op shape [2, -1] must be static and non-negative}}
  %0 = graph.iota [2, -1] axis = 0 : i64
  return
}

// -----

// iota_c2: the axis is a dim of the shape.
func.func @iota_c2() {
  // expected-error @+1 {{'graph.iota' op axis 2 is out of range for rank 2}}
  %0 = graph.iota [2, 3] axis = 2 : i32
  return
}

// -----

// iota_c2: a negative axis is out of range too (axes are normalized).
func.func @iota_c2_negative() {
  // expected-error @+1 {{'graph.iota' op axis -1 is out of range for rank 2}}
  %0 = graph.iota [2, 3] axis = -1 : i32
  return
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

// -----

// clamp_c1: at least one bound.
func.func @clamp_c1(%x: tensor<4xf32>) {
  // expected-error @+1 {{'graph.clamp' op needs a min or a max bound}}
  %0 = graph.clamp %x : tensor<4xf32>
  return
}

// -----

// clamp_c2: min <= max.
func.func @clamp_c2(%x: tensor<4xf32>) {
  // expected-error @+1 {{'graph.clamp' op min 6.000000e+00 is greater than max 0.000000e+00}}
  %0 = graph.clamp %x {min = 6.0 : f64, max = 0.0 : f64} : tensor<4xf32>
  return
}

// -----

// dropout_c1: the ratio is below 1.
func.func @dropout_c1(%x: tensor<4xf32>) {
  // expected-error @+1 {{'graph.dropout' op ratio 1.000000e+00 must be in [0, 1)}}
  %0 = graph.dropout %x {ratio = 1.0 : f64, training} : tensor<4xf32>
  return
}

// -----

// dropout_c1: the ratio is not negative.
func.func @dropout_c1_negative(%x: tensor<4xf32>) {
  // expected-error @+1 {{'graph.dropout' op ratio -5.000000e-01 must be in [0, 1)}}
  %0 = graph.dropout %x {ratio = -0.5 : f64} : tensor<4xf32>
  return
}

// -----

// cast_c1: the target is a graph element type.
func.func @cast_c1(%x: tensor<4xi32>) {
  // expected-error @+1 {{'graph.cast' op cannot cast to 'i4': not a graph element type}}
  %0 = graph.cast %x to i4 : tensor<4xi32>
  return
}

// -----

// cast_c1: index is not a graph element type either.
func.func @cast_c1_index(%x: tensor<4xi32>) {
  // expected-error @+1 {{'graph.cast' op cannot cast to 'index': not a graph element type}}
  %0 = graph.cast %x to index : tensor<4xi32>
  return
}

// -----

// bcast_c1: operands broadcast together.
func.func @bcast_c1(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+2 {{'graph.add' op shapes [2, 3] and [4, 3] are not broadcast-compatible (2 vs 4)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.add %a, %b : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// bcast_c1: trailing dims are aligned, so [3] does not broadcast with [3, 2].
func.func @bcast_c1_rank(%a: tensor<3x2xi32>, %b: tensor<3xi32>) {
  // expected-error @+2 {{'graph.max' op shapes [3, 2] and [3] are not broadcast-compatible (2 vs 3)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.max %a, %b : (tensor<3x2xi32>, tensor<3xi32>) -> tensor<3x2xi32>
  return
}

// -----

// bcast_c1: compare broadcasts its operands too.
func.func @bcast_c1_compare(%a: tensor<4xf32>, %b: tensor<5xf32>) {
  // expected-error @+2 {{'graph.compare' op shapes [4] and [5] are not broadcast-compatible (4 vs 5)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.compare gt, %a, %b : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xi1>
  return
}

// -----

// bcast_c1: where broadcasts the condition with both branches.
func.func @bcast_c1_where(%c: tensor<3xi1>, %a: tensor<4xf32>) {
  // expected-error @+2 {{'graph.where' op shapes [3] and [4] are not broadcast-compatible (3 vs 4)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.where %c, %a, %a : (tensor<3xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// where_c1: both branches share an element type.
func.func @where_c1(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+2 {{'graph.where' op branches have different element types}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.where %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

//===----------------------------------------------------------------------===//
// Linear algebra, convolution, pooling
//===----------------------------------------------------------------------===//

// -----

// matmul_c1: no scalar operands.
func.func @matmul_c1(%a: tensor<f32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{'graph.matmul' op operands must have rank 1 or more}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.matmul %a, %b : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// matmul_c2: a transpose flag needs a matrix operand.
func.func @matmul_c2(%a: tensor<4xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+2 {{'graph.matmul' op a transpose flag needs an operand of rank 2 or more}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.matmul %a, %b {transpose_lhs} : (tensor<4xf32>, tensor<4x3xf32>) -> tensor<3xf32>
  return
}

// -----

// matmul_c2: the same for transpose_rhs.
func.func @matmul_c2_rhs(%a: tensor<3x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{'graph.matmul' op a transpose flag needs an operand of rank 2 or more}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.matmul %a, %b {transpose_rhs} : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
  return
}

// -----

// matmul_c3: contracting dims agree.
func.func @matmul_c3(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{'graph.matmul' op contracting dimensions differ (3 vs 4)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return
}

// -----

// matmul_c3: contracting dims are taken after the transposes.
func.func @matmul_c3_transposed(%a: tensor<8x16x64xf32>, %b: tensor<64x32xf32>) {
  // expected-error @+2 {{'graph.matmul' op contracting dimensions differ (64 vs 32)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.matmul %a, %b {transpose_rhs} : (tensor<8x16x64xf32>, tensor<64x32xf32>) -> tensor<8x16x64xf32>
  return
}

// -----

// matmul_c4: batch dims broadcast.
func.func @matmul_c4(%a: tensor<2x3x4xf32>, %b: tensor<3x4x5xf32>) {
  // expected-error @+2 {{'graph.matmul' op batch dimensions: shapes [2] and [3] are not broadcast-compatible (2 vs 3)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.matmul %a, %b : (tensor<2x3x4xf32>, tensor<3x4x5xf32>) -> tensor<2x3x5xf32>
  return
}

// -----

// conv_c1: 1-D, 2-D or 3-D convolution only.
func.func @conv_c1(%x: tensor<1x3x8x8x8x8xf32>, %w: tensor<4x3x3x3x3x3xf32>) {
  // expected-error @+2 {{'graph.conv' op input must have rank 3 (1-D), 4 (2-D) or 5 (3-D), got 6}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv %x, %w strides = [1, 1, 1, 1] padding = [0, 0, 0, 0, 0, 0, 0, 0] dilations = [1, 1, 1, 1] groups = 1
      : (tensor<1x3x8x8x8x8xf32>, tensor<4x3x3x3x3x3xf32>) -> tensor<1x4x6x6x6x6xf32>
  return
}

// -----

// conv_c2: the filter has the input's rank.
func.func @conv_c2(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+2 {{'graph.conv' op filter rank 3 differs from input rank 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<1x3x8x8xf32>, tensor<4x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// conv_c3: groups are positive.
func.func @conv_c3_groups(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{'graph.conv' op groups must be positive}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 0
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// conv_c3: groups divide the output channels.
func.func @conv_c3(%x: tensor<1x4x8x8xf32>, %w: tensor<6x1x3x3xf32>) {
  // expected-error @+2 {{'graph.conv' op output channels 6 are not divisible by groups 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 4
      : (tensor<1x4x8x8xf32>, tensor<6x1x3x3xf32>) -> tensor<1x6x6x6xf32>
  return
}

// -----

// conv_c3: input channels are filter channels times groups.
func.func @conv_c3_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+2 {{'graph.conv' op input channels 3 do not match filter channels 4 x groups 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<1x3x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// conv_c4: the bias is [O].
func.func @conv_c4(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{'graph.conv' op bias must have shape [4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv %x, %w, %b strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// conv_c4: the bias has rank 1.
func.func @conv_c4_rank(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<1x4xf32>) {
  // expected-error @+2 {{'graph.conv' op bias must have shape [4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv %x, %w, %b strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<1x4xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// conv_c4: with a dynamic output channel count the message should say [?].
func.func @conv_c4_dynamic(%x: tensor<1x3x8x8xf32>, %w: tensor<?x3x3x3xf32>, %b: tensor<2x2xf32>) {
  // expected-error @+2 {{'graph.conv' op bias must have shape [?]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv %x, %w, %b strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<1x3x8x8xf32>, tensor<?x3x3x3xf32>, tensor<2x2xf32>) -> tensor<1x?x6x6xf32>
  return
}

// -----

// window_c1: one stride and dilation per spatial dim, two pads.
func.func @window_c1(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{'graph.conv' op expects 2 kernel/stride/dilation values and 4 padding values for 2 spatial dims}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv %x, %w strides = [1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// window_c1: the padding count is checked too (pooling).
func.func @window_c1_padding(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{'graph.max_pool' op expects 2 kernel/stride/dilation values and 4 padding values for 2 spatial dims}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.max_pool %x kernel = [2, 2] strides = [2, 2] padding = [0, 0] dilations = [1, 1]
      : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  return
}

// -----

// window_c1: dilations are checked too (pooling).
func.func @window_c1_dilations(%x: tensor<1x3x8xf32>) {
  // expected-error @+2 {{'graph.max_pool' op expects 1 kernel/stride/dilation values and 2 padding values for 1 spatial dims}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.max_pool %x kernel = [2] strides = [2] padding = [0, 0] dilations = [1, 1]
      : (tensor<1x3x8xf32>) -> tensor<1x3x4xf32>
  return
}

// -----

// pool_c3: one kernel size per spatial dim.
func.func @pool_c3(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{'graph.avg_pool' op expects 2 kernel sizes, got 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.avg_pool %x kernel = [2] strides = [2, 2] padding = [0, 0, 0, 0]
      : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  return
}

// -----

// window_c2: strides are positive.
func.func @window_c2(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{'graph.conv' op strides, dilations and kernel sizes must be positive and padding non-negative}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv %x, %w strides = [1, 0] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// window_c2: padding is non-negative.
func.func @window_c2_padding(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{'graph.conv' op strides, dilations and kernel sizes must be positive and padding non-negative}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv %x, %w strides = [1, 1] padding = [0, -1, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// window_c2: dilations are positive.
func.func @window_c2_dilation(%x: tensor<1x3x8xf32>) {
  // expected-error @+2 {{'graph.max_pool' op strides, dilations and kernel sizes must be positive and padding non-negative}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.max_pool %x kernel = [2] strides = [1] padding = [0, 0] dilations = [0]
      : (tensor<1x3x8xf32>) -> tensor<1x3x7xf32>
  return
}

// -----

// window_c2: kernel sizes are positive (pooling).
func.func @window_c2_kernel(%x: tensor<1x3x8xf32>) {
  // expected-error @+2 {{'graph.avg_pool' op strides, dilations and kernel sizes must be positive and padding non-negative}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.avg_pool %x kernel = [0] strides = [1] padding = [0, 0]
      : (tensor<1x3x8xf32>) -> tensor<1x3x9xf32>
  return
}

// -----

// window_c2: kernel sizes are positive (convolution: the filter's spatial dims).
func.func @window_c2_conv_kernel(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x0x1xf32>) {
  // expected-error @+2 {{'graph.conv' op strides, dilations and kernel sizes must be positive and padding non-negative}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<1x3x8x8xf32>, tensor<4x3x0x1xf32>) -> tensor<1x4x9x8xf32>
  return
}

// -----

// window_c3: the (dilated) window fits the padded input (convolution).
func.func @window_c3(%x: tensor<1x3x4x4xf32>, %w: tensor<4x3x5x5xf32>) {
  // expected-error @+2 {{'graph.conv' op window of size 5 does not fit spatial dim 0 of size 4 with its padding}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<1x3x4x4xf32>, tensor<4x3x5x5xf32>) -> tensor<1x4x0x0xf32>
  return
}

// -----

// window_c3: dilation enlarges the window (pooling, second spatial dim).
func.func @window_c3_dilated(%x: tensor<1x3x8x4xf32>) {
  // expected-error @+2 {{'graph.max_pool' op window of size 2 does not fit spatial dim 1 of size 4 with its padding}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.max_pool %x kernel = [2, 2] strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 4]
      : (tensor<1x3x8x4xf32>) -> tensor<1x3x7x0xf32>
  return
}

// -----

// pool_c1: 1-D, 2-D or 3-D pooling only.
func.func @pool_c1(%x: tensor<3x8xf32>) {
  // expected-error @+2 {{'graph.max_pool' op input must have rank 3 (1-D), 4 (2-D) or 5 (3-D), got 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.max_pool %x kernel = [2] strides = [2] padding = [0, 0] dilations = [1]
      : (tensor<3x8xf32>) -> tensor<3x4xf32>
  return
}

// -----

// pool_c1: the same for average pooling.
func.func @pool_c1_avg(%x: tensor<1x3x8x8x8x8xf32>) {
  // expected-error @+2 {{'graph.avg_pool' op input must have rank 3 (1-D), 4 (2-D) or 5 (3-D), got 6}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.avg_pool %x kernel = [2, 2, 2, 2] strides = [2, 2, 2, 2] padding = [0, 0, 0, 0, 0, 0, 0, 0]
      : (tensor<1x3x8x8x8x8xf32>) -> tensor<1x3x4x4x4x4xf32>
  return
}

// -----

// pool_c2: a pad is smaller than the dilated kernel, so that every window
// holds a real element.
func.func @pool_c2(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{'graph.avg_pool' op padding of spatial dim 1 is not smaller than the dilated kernel size 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.avg_pool %x kernel = [3, 3] strides = [1, 1] padding = [1, 1, 1, 3]
      : (tensor<1x3x8x8xf32>) -> tensor<1x3x8x10xf32>
  return
}

// -----

// gap_c1: the input is [N, C, spatial...].
func.func @gap_c1(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'graph.global_avg_pool' op input must have rank 3 or more ([N, C, spatial...])}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.global_avg_pool %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// Normalization and softmax
//===----------------------------------------------------------------------===//

// -----

// bn_c1: the input is [N, C, ...].
func.func @bn_c1(%x: tensor<16xf32>, %p: tensor<16xf32>) {
  // expected-error @+2 {{'graph.batch_norm' op input must have rank 2 or more ([N, C, ...])}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.batch_norm %x, %p, %p, %p, %p {epsilon = 1.0e-05 : f64}
      : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  return
}

// -----

// bn_c2: statistics and affine parameters are [C].
func.func @bn_c2(%x: tensor<1x16x8x8xf32>, %p: tensor<16xf32>, %v: tensor<8xf32>) {
  // expected-error @+2 {{'graph.batch_norm' op scale, bias, mean and variance must have shape [16], got [8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.batch_norm %x, %p, %p, %p, %v {epsilon = 1.0e-05 : f64}
      : (tensor<1x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<8xf32>) -> tensor<1x16x8x8xf32>
  return
}

// -----

// bn_c2: the parameters have rank 1.
func.func @bn_c2_rank(%x: tensor<1x16x8x8xf32>, %p: tensor<16xf32>, %s: tensor<1x16xf32>) {
  // expected-error @+2 {{'graph.batch_norm' op scale, bias, mean and variance must have shape [16], got [1, 16]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.batch_norm %x, %s, %p, %p, %p {epsilon = 1.0e-05 : f64}
      : (tensor<1x16x8x8xf32>, tensor<1x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  return
}

// -----

// bn_c2: with a dynamic channel count the message should say [?].
func.func @bn_c2_dynamic(%x: tensor<2x?xf32>, %p: tensor<4x4xf32>) {
  // expected-error @+2 {{'graph.batch_norm' op scale, bias, mean and variance must have shape [?], got [4, 4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.batch_norm %x, %p, %p, %p, %p {epsilon = 1.0e-05 : f64}
      : (tensor<2x?xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<2x?xf32>
  return
}

// -----

// ln_c1: 0 <= axis < rank.
func.func @ln_c1(%x: tensor<2x16x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+2 {{'graph.layer_norm' op axis 3 is out of range for rank 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.layer_norm %x, %g {axis = 3 : i64, epsilon = 1.0e-05 : f64}
      : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  return
}

// -----

// ln_c1: a negative axis is out of range (axes are normalized).
func.func @ln_c1_negative(%x: tensor<2x16x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+2 {{'graph.layer_norm' op axis -1 is out of range for rank 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.layer_norm %x, %g {axis = -1 : i64, epsilon = 1.0e-05 : f64}
      : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  return
}

// -----

// ln_c2: the scale has the normalized shape.
func.func @ln_c2(%x: tensor<2x16x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+2 {{'graph.layer_norm' op scale and bias must have the normalized shape [16, 64], got [64]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.layer_norm %x, %g {axis = 1 : i64, epsilon = 1.0e-05 : f64}
      : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  return
}

// -----

// ln_c2: the optional bias has the normalized shape too.
func.func @ln_c2_bias(%x: tensor<2x16x64xf32>, %g: tensor<64xf32>, %b: tensor<32xf32>) {
  // expected-error @+2 {{'graph.layer_norm' op scale and bias must have the normalized shape [64], got [32]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.layer_norm %x, %g, %b {axis = 2 : i64, epsilon = 1.0e-05 : f64}
      : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<32xf32>) -> tensor<2x16x64xf32>
  return
}

// -----

// softmax_c1: 0 <= axis < rank.
func.func @softmax_c1(%x: tensor<2x10xf32>) {
  // expected-error @+2 {{'graph.softmax' op axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.softmax %x {axis = 2 : i64} : (tensor<2x10xf32>) -> tensor<2x10xf32>
  return
}

// -----

// softmax_c1: the same rule for log_softmax.
func.func @softmax_c1_log(%x: tensor<2x10xf32>) {
  // expected-error @+2 {{'graph.log_softmax' op axis -1 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.log_softmax %x {axis = -1 : i64} : (tensor<2x10xf32>) -> tensor<2x10xf32>
  return
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

// -----

// reduce_c1: at least one axis.
func.func @reduce_c1(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'graph.reduce_sum' op needs at least one axis to reduce}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reduce_sum %x axes = [] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// reduce_c2: axes are in range.
func.func @reduce_c2(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'graph.reduce_mean' op axes [2] must be sorted, unique and in [0, 2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reduce_mean %x axes = [2] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// reduce_c2: axes are sorted.
func.func @reduce_c2_sorted(%x: tensor<4x8xi32>) {
  // expected-error @+2 {{'graph.reduce_max' op axes [1, 0] must be sorted, unique and in [0, 2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reduce_max %x axes = [1, 0] : (tensor<4x8xi32>) -> tensor<i32>
  return
}

// -----

// reduce_c2: axes are unique.
func.func @reduce_c2_unique(%x: tensor<4x8xi32>) {
  // expected-error @+2 {{'graph.reduce_min' op axes [0, 0] must be sorted, unique and in [0, 2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reduce_min %x axes = [0, 0] : (tensor<4x8xi32>) -> tensor<8xi32>
  return
}

// -----

// reduce_c2: axes are not negative (axes are normalized).
func.func @reduce_c2_negative(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'graph.reduce_sum' op axes [-1] must be sorted, unique and in [0, 2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reduce_sum %x axes = [-1] : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

// -----

// reshape_c1: a 0 copies an existing input dim.
func.func @reshape_c1(%x: tensor<2x12xf32>) {
  // expected-error @+2 {{'graph.reshape' op shape entry 0 at position 2 has no input dim to copy (input rank 2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reshape %x [2, 12, 0] : (tensor<2x12xf32>) -> tensor<2x12x1xf32>
  return
}

// -----

// reshape_c2: at most one -1.
func.func @reshape_c2(%x: tensor<2x12xf32>) {
  // expected-error @+2 {{'graph.reshape' op shape [-1, 4, -1] has more than one -1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reshape %x [-1, 4, -1] : (tensor<2x12xf32>) -> tensor<2x4x3xf32>
  return
}

// -----

// reshape_c3: entries are -1, 0 or positive.
func.func @reshape_c3(%x: tensor<2x12xf32>) {
  // expected-error @+2 {{'graph.reshape' op shape entry -2 must be -1, 0 or positive}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reshape %x [-2, 12] : (tensor<2x12xf32>) -> tensor<2x12xf32>
  return
}

// -----

// reshape_c4: the inferred dim divides evenly.
func.func @reshape_c4(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'graph.reshape' op cannot reshape [2, 3] to [-1, 4]: 6 elements do not divide into 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reshape %x [-1, 4] : (tensor<2x3xf32>) -> tensor<1x4xf32>
  return
}

// -----

// reshape_c4: dims copied with 0 are left out of the count.
func.func @reshape_c4_copied(%x: tensor<?x16x768xf32>) {
  // expected-error @+2 {{'graph.reshape' op cannot reshape [?, 16, 768] to [0, 0, 5, -1]: 768 elements do not divide into 5}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reshape %x [0, 0, 5, -1] : (tensor<?x16x768xf32>) -> tensor<?x16x5x153xf32>
  return
}

// -----

// reshape_c5: element counts agree.
func.func @reshape_c5(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'graph.reshape' op cannot reshape [2, 3] to [4, 2]: element counts differ (6 vs 8)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reshape %x [4, 2] : (tensor<2x3xf32>) -> tensor<4x2xf32>
  return
}

// -----

// reshape_c5: with a dim copied by 0, the remaining counts still agree.
func.func @reshape_c5_copied(%x: tensor<?x16x768xf32>) {
  // expected-error @+2 {{'graph.reshape' op cannot reshape [?, 16, 768] to [0, 16, 12, 32]: element counts differ (12288 vs 6144)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reshape %x [0, 16, 12, 32] : (tensor<?x16x768xf32>) -> tensor<?x16x12x32xf32>
  return
}

// -----

// transpose_c1: perm is a permutation of [0, rank).
func.func @transpose_c1(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{'graph.transpose' op perm [0, 0, 1] is not a permutation of [0, 3)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.transpose %x [0, 0, 1] : (tensor<2x3x4xf32>) -> tensor<2x2x3xf32>
  return
}

// -----

// transpose_c1: perm has one entry per dim.
func.func @transpose_c1_length(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{'graph.transpose' op perm [1, 0] is not a permutation of [0, 3)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.transpose %x [1, 0] : (tensor<2x3x4xf32>) -> tensor<3x2xf32>
  return
}

// -----

// bto_c1: the target has at least the operand's rank.
func.func @bto_c1(%x: tensor<2x4xf32>) {
  // expected-error @+2 {{'graph.broadcast_to' op target shape [4] has lower rank than [2, 4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.broadcast_to %x [4] : (tensor<2x4xf32>) -> tensor<4xf32>
  return
}

// -----

// bto_c2: -1 keeps an operand dim, so it needs one.
func.func @bto_c2(%x: tensor<2x4xf32>) {
  // expected-error @+2 {{'graph.broadcast_to' op -1 at position 0 has no operand dim to keep}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.broadcast_to %x [-1, 2, 4] : (tensor<2x4xf32>) -> tensor<1x2x4xf32>
  return
}

// -----

// bto_c3: each operand dim is 1 or equal to the target.
func.func @bto_c3(%x: tensor<2x4xf32>) {
  // expected-error @+2 {{'graph.broadcast_to' op cannot broadcast [2, 4] to [3, 4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.broadcast_to %x [3, 4] : (tensor<2x4xf32>) -> tensor<3x4xf32>
  return
}

// -----

// bto_c3: target entries other than -1 are non-negative.
func.func @bto_c3_negative(%x: tensor<1x4xf32>) {
  // expected-error @+2 {{'graph.broadcast_to' op cannot broadcast [1, 4] to [-2, 4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.broadcast_to %x [-2, 4] : (tensor<1x4xf32>) -> tensor<1x4xf32>
  return
}

// -----

// concat_c1: at least one input.
func.func @concat_c1() {
  // SameOperandsElementType rejects an empty operand list before inference
  // runs; the tagged message reaches C++ callers (see GraphDialectTest).
  // expected-error @+1 {{'graph.concat' op expected 1 or more operands, but found 0}}
  %0 = graph.concat axis = 0 : () -> tensor<2xf32>
  return
}

// -----

// concat_c2: 0 <= axis < rank.
func.func @concat_c2(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{'graph.concat' op axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.concat %a, %a axis = 2 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

// concat_c3: inputs have the same rank.
func.func @concat_c3(%a: tensor<2x3xf32>, %b: tensor<2x3x1xf32>) {
  // expected-error @+2 {{'graph.concat' op inputs have different ranks}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.concat %a, %b axis = 1 : (tensor<2x3xf32>, tensor<2x3x1xf32>) -> tensor<2x6xf32>
  return
}

// -----

// concat_c3: inputs agree on every dim but the axis.
func.func @concat_c3_dims(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+2 {{'graph.concat' op inputs differ in dim 0 ([2, 3] vs [4, 3])}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.concat %a, %b axis = 1 : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

// slice_c1: one start, end and step per dim.
func.func @slice_c1(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'graph.slice' op starts, ends and steps need 2 entries each}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.slice %x starts = [0] ends = [4, 8] steps = [1, 1] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// slice_c2: steps are non-zero.
func.func @slice_c2(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'graph.slice' op step of dim 1 is zero}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.slice %x starts = [0, 0] ends = [4, 8] steps = [1, 0] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// gather_c1: 0 <= axis < rank(data).
func.func @gather_c1(%d: tensor<10x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+2 {{'graph.gather' op axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.gather %d, %i axis = 2 : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<10x4x3xf32>
  return
}

// -----

// squeeze_c1: axes are sorted, unique, in range.
func.func @squeeze_c1(%x: tensor<1x4x1xf32>) {
  // expected-error @+2 {{'graph.squeeze' op axes [2, 0] must be sorted, unique and in [0, 3)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.squeeze %x axes = [2, 0] : (tensor<1x4x1xf32>) -> tensor<4xf32>
  return
}

// -----

// squeeze_c1: out of range.
func.func @squeeze_c1_range(%x: tensor<1x4x1xf32>) {
  // expected-error @+2 {{'graph.squeeze' op axes [3] must be sorted, unique and in [0, 3)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.squeeze %x axes = [3] : (tensor<1x4x1xf32>) -> tensor<1x4x1xf32>
  return
}

// -----

// squeeze_c2: only size-1 dims are removed.
func.func @squeeze_c2(%x: tensor<1x4x1xf32>) {
  // expected-error @+2 {{'graph.squeeze' op cannot squeeze dim 1 of size 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.squeeze %x axes = [1] : (tensor<1x4x1xf32>) -> tensor<1x1xf32>
  return
}

// -----

// unsqueeze_c1: axes are positions in the result.
func.func @unsqueeze_c1(%x: tensor<4xf32>) {
  // expected-error @+2 {{'graph.unsqueeze' op axes [2] must be non-empty, sorted, unique and in [0, 2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.unsqueeze %x axes = [2] : (tensor<4xf32>) -> tensor<4x1xf32>
  return
}

// -----

// unsqueeze_c1: axes are non-empty.
func.func @unsqueeze_c1_empty(%x: tensor<4xf32>) {
  // expected-error @+2 {{'graph.unsqueeze' op axes [] must be non-empty, sorted, unique and in [0, 1)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.unsqueeze %x axes = [] : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// unsqueeze_c1: axes are unique.
func.func @unsqueeze_c1_unique(%x: tensor<4xf32>) {
  // expected-error @+2 {{'graph.unsqueeze' op axes [0, 0] must be non-empty, sorted, unique and in [0, 3)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.unsqueeze %x axes = [0, 0] : (tensor<4xf32>) -> tensor<1x1x4xf32>
  return
}

// -----

// flatten_c1: 0 <= axis <= rank.
func.func @flatten_c1(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{'graph.flatten' op axis 4 is out of range [0, 3]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.flatten %x axis = 4 : (tensor<2x3x4xf32>) -> tensor<24x1xf32>
  return
}

// -----

// flatten_c1: a negative axis is out of range (axes are normalized).
func.func @flatten_c1_negative(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{'graph.flatten' op axis -1 is out of range [0, 3]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.flatten %x axis = -1 : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  return
}

// -----

// pad_c1: begin and end pads for every dim.
func.func @pad_c1(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'graph.pad' op pads need 4 entries, got 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.pad %x pads = [1, 1] mode = constant : (tensor<2x3xf32>) -> tensor<4x3xf32>
  return
}

// -----

// pad_c2: pads are non-negative.
func.func @pad_c2(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'graph.pad' op pads [0, -1, 0, 0] must be non-negative}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.pad %x pads = [0, -1, 0, 0] mode = edge : (tensor<2x3xf32>) -> tensor<2x2xf32>
  return
}

// -----

// pad_c3: reflect pads are smaller than the dim.
func.func @pad_c3(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'graph.pad' op reflect pads of dim 1 must be smaller than its size 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.pad %x pads = [0, 0, 0, 3] mode = reflect : (tensor<2x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

// emb_c1: the table is [vocab, dim].
func.func @emb_c1(%t: tensor<10xf32>, %ids: tensor<3xi64>) {
  // expected-error @+2 {{'graph.embedding' op table must have rank 2 ([vocab, dim]), got [10]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.embedding %t, %ids : (tensor<10xf32>, tensor<3xi64>) -> tensor<3xf32>
  return
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

// -----

// ce_c1: logits have a class dim.
func.func @ce_c1(%l: tensor<f32>, %y: tensor<i64>) {
  // expected-error @+2 {{'graph.cross_entropy' op logits must have rank 1 or more ([..., classes])}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.cross_entropy %l, %y reduction = mean : (tensor<f32>, tensor<i64>) -> tensor<f32>
  return
}

// -----

// ce_c2: labels are the logits' shape without the class dim.
func.func @ce_c2(%l: tensor<2x16x100xf32>, %y: tensor<2x8xi64>) {
  // expected-error @+2 {{'graph.cross_entropy' op labels shape [2, 8] must be the logits shape without its class dim [2, 16]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.cross_entropy %l, %y reduction = none : (tensor<2x16x100xf32>, tensor<2x8xi64>) -> tensor<2x16xf32>
  return
}

// -----

// ce_c2: labels have one dim less than the logits.
func.func @ce_c2_rank(%l: tensor<2x10xf32>, %y: tensor<2x10xi64>) {
  // expected-error @+2 {{'graph.cross_entropy' op labels shape [2, 10] must be the logits shape without its class dim [2]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.cross_entropy %l, %y reduction = mean : (tensor<2x10xf32>, tensor<2x10xi64>) -> tensor<f32>
  return
}

// -----

// mse_c1: pred and target have the same shape.
func.func @mse_c1(%p: tensor<8x1xf32>, %t: tensor<8xf32>) {
  // expected-error @+2 {{'graph.mse_loss' op pred [8, 1] and target [8] differ in shape}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.mse_loss %p, %t reduction = mean : (tensor<8x1xf32>, tensor<8xf32>) -> tensor<f32>
  return
}

// -----

// mse_c1: no broadcasting between pred and target.
func.func @mse_c1_broadcast(%p: tensor<8x4xf32>, %t: tensor<8x1xf32>) {
  // expected-error @+2 {{'graph.mse_loss' op pred [8, 4] and target [8, 1] differ in shape}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.mse_loss %p, %t reduction = none : (tensor<8x4xf32>, tensor<8x1xf32>) -> tensor<8x4xf32>
  return
}

// -----

// argreduce_c1: 0 <= axis < rank.
func.func @argreduce_c1(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'graph.arg_max' op axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.arg_max %x axis = 2 : (tensor<4x8xf32>) -> tensor<4xi64>
  return
}

// -----

// The result is an i64 index tensor.
func.func @argreduce_result_type(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'graph.arg_min' op inferred type(s) 'tensor<4xi64>' are incompatible with return type(s) of operation 'tensor<4xi32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.arg_min %x axis = 1 : (tensor<4x8xf32>) -> tensor<4xi32>
  return
}

// -----

// fill_like_c1: the value is a scalar of a graph element type.
func.func @fill_like_c1(%m: tensor<4xf32>) {
  // expected-error @+2 {{'graph.fill_like' op value must be a float or integer scalar of a graph element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.fill_like %m, dense<1.0> : tensor<2xf32> : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// cumsum_c1: 0 <= axis < rank.
func.func @cumsum_c1(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'graph.cumsum' op axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.cumsum %x axis = 2 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// top_k_c1: 0 <= axis < rank.
func.func @top_k_c1(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'graph.top_k' op axis 3 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = graph.top_k %x k = 1 axis = 3 : (tensor<4x8xf32>) -> (tensor<4x1xf32>, tensor<4x1xi64>)
  return
}

// -----

// top_k_c2: k >= 0.
func.func @top_k_c2(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'graph.top_k' op k -1 is negative}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = graph.top_k %x k = -1 axis = 1 : (tensor<4x8xf32>) -> (tensor<4x1xf32>, tensor<4x1xi64>)
  return
}

// -----

// top_k_c3: k <= the axis dim.
func.func @top_k_c3(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'graph.top_k' op k 9 exceeds dim 1 (8)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = graph.top_k %x k = 9 axis = 1 : (tensor<4x8xf32>) -> (tensor<4x9xf32>, tensor<4x9xi64>)
  return
}

// -----

// gather_elements_c1: indices have data's rank.
func.func @gather_elements_c1(%d: tensor<4x8xf32>, %i: tensor<4xi64>) {
  // expected-error @+2 {{'graph.gather_elements' op indices have rank 1 but data has rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.gather_elements %d, %i axis = 0 : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<4xf32>
  return
}

// -----

// gather_elements_c2: 0 <= axis < rank.
func.func @gather_elements_c2(%d: tensor<4x8xf32>, %i: tensor<4x1xi64>) {
  // expected-error @+2 {{'graph.gather_elements' op axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.gather_elements %d, %i axis = 2 : (tensor<4x8xf32>, tensor<4x1xi64>) -> tensor<4x1xf32>
  return
}

// -----

// gather_elements_c3: off the axis, index dims do not exceed data dims.
func.func @gather_elements_c3(%d: tensor<4x8xf32>, %i: tensor<5x1xi64>) {
  // expected-error @+2 {{'graph.gather_elements' op indices [5, 1] exceed data [4, 8] in dim 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.gather_elements %d, %i axis = 1 : (tensor<4x8xf32>, tensor<5x1xi64>) -> tensor<5x1xf32>
  return
}

// -----

// scatter_elements_c1: indices and updates have one shape, of data's rank.
func.func @scatter_elements_c1(%d: tensor<3x3xf32>, %i: tensor<2x3xi64>, %u: tensor<2x2xf32>) {
  // expected-error @+2 {{'graph.scatter_elements' op indices [2, 3] and updates [2, 2] must have one shape, of the rank of data [3, 3]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.scatter_elements %d, %i, %u axis = 0 reduction = none : (tensor<3x3xf32>, tensor<2x3xi64>, tensor<2x2xf32>) -> tensor<3x3xf32>
  return
}

// -----

// scatter_elements_c2: 0 <= axis < rank.
func.func @scatter_elements_c2(%d: tensor<3x3xf32>, %i: tensor<2x3xi64>, %u: tensor<2x3xf32>) {
  // expected-error @+2 {{'graph.scatter_elements' op axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.scatter_elements %d, %i, %u axis = 2 reduction = none : (tensor<3x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<3x3xf32>
  return
}

// -----

// scatter_elements_c3: updates have data's element type.
func.func @scatter_elements_c3(%d: tensor<3x3xf32>, %i: tensor<2x3xi64>, %u: tensor<2x3xf16>) {
  // expected-error @+2 {{'graph.scatter_elements' op updates and data have different element types}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.scatter_elements %d, %i, %u axis = 0 reduction = none : (tensor<3x3xf32>, tensor<2x3xi64>, tensor<2x3xf16>) -> tensor<3x3xf32>
  return
}

// -----

// trilu_c1: rank >= 2.
func.func @trilu_c1(%x: tensor<4xf32>) {
  // expected-error @+2 {{'graph.trilu' op needs rank 2 or more, got 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.trilu %x k = 0 : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// resize_c1: one scale and one size per dim.
func.func @resize_c1(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{'graph.resize' op needs one scale and one size per dim of rank 4, got 2 scales and 4 sizes}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.resize %x scales = [2.0, 2.0] sizes = [-1, -1, -1, -1] mode = nearest coordinate_mode = asymmetric nearest_mode = floor : (tensor<1x3x8x8xf32>) -> tensor<1x3x16x16xf32>
  return
}

// -----

// resize_c2: a size of -1 needs a positive scale.
func.func @resize_c2(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{'graph.resize' op dim 2 has size -1 and scale 0.000000: needs a size >= 0, or size -1 and a scale > 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.resize %x scales = [1.0, 1.0, 0.0, 2.0] sizes = [-1, -1, -1, -1] mode = nearest coordinate_mode = asymmetric nearest_mode = floor : (tensor<1x3x8x8xf32>) -> tensor<1x3x16x16xf32>
  return
}

// -----

// dynamic_reshape_c1: the shape is 1-D of static length.
func.func @dynamic_reshape_c1(%x: tensor<2x3xf32>, %s: tensor<?xi64>) {
  // expected-error @+2 {{'graph.dynamic_reshape' op shape must have a static length}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.dynamic_reshape %x, %s : (tensor<2x3xf32>, tensor<?xi64>) -> tensor<?xf32>
  return
}

// -----

// dynamic_unsqueeze_c1: the axes are 1-D.
func.func @dynamic_unsqueeze_c1(%x: tensor<2x3xf32>, %a: tensor<1x1xi64>) {
  // expected-error @+2 {{'graph.dynamic_unsqueeze' op axes must be a 1-D tensor, got rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.dynamic_unsqueeze %x, %a : (tensor<2x3xf32>, tensor<1x1xi64>) -> tensor<?x?x?xf32>
  return
}

// -----

// dynamic_squeeze_c2: no more axes than dims.
func.func @dynamic_squeeze_c2(%x: tensor<1xf32>, %a: tensor<2xi64>) {
  // expected-error @+2 {{'graph.dynamic_squeeze' op 2 axes for a tensor of rank 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.dynamic_squeeze %x, %a : (tensor<1xf32>, tensor<2xi64>) -> tensor<f32>
  return
}

// -----

// dynamic_slice_c1: starts, ends, axes and steps have one length.
func.func @dynamic_slice_c1(%x: tensor<4x8xf32>, %a: tensor<1xi64>, %b: tensor<2xi64>) {
  // expected-error @+2 {{'graph.dynamic_slice' op axes has 2 entries but starts has 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.dynamic_slice %x, %a, %a, %b, %a : (tensor<4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<2xi64>, tensor<1xi64>) -> tensor<?x?xf32>
  return
}

// -----

// dynamic_reduce_sum_c2: no more axes than dims.
func.func @dynamic_reduce_sum_c2(%x: tensor<4xf32>, %a: tensor<2xi64>) {
  // expected-error @+2 {{'graph.dynamic_reduce_sum' op 2 axes for a tensor of rank 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.dynamic_reduce_sum %x, %a keepdims : (tensor<4xf32>, tensor<2xi64>) -> tensor<?xf32>
  return
}

// -----

// dynamic_cumsum_c1: the axis is one integer.
func.func @dynamic_cumsum_c1(%x: tensor<4xf32>, %a: tensor<2xi64>) {
  // expected-error @+2 {{'graph.dynamic_cumsum' op axis must hold exactly one integer}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.dynamic_cumsum %x, %a : (tensor<4xf32>, tensor<2xi64>) -> tensor<4xf32>
  return
}

// -----

// dynamic_cumsum_c2: the operand is not a scalar.
func.func @dynamic_cumsum_c2(%x: tensor<f32>, %a: tensor<i64>) {
  // expected-error @+2 {{'graph.dynamic_cumsum' op operand must have rank >= 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.dynamic_cumsum %x, %a : (tensor<f32>, tensor<i64>) -> tensor<f32>
  return
}

// -----

// dynamic_fill_c2: the value is a scalar of a graph element type.
func.func @dynamic_fill_c2(%s: tensor<2xi64>) {
  // expected-error @+2 {{'graph.dynamic_fill' op value must be a float or integer scalar of a graph element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.dynamic_fill %s {value = 1 : i4} : (tensor<2xi64>) -> tensor<?x?xf32>
  return
}

// -----

// dynamic_broadcast_c1: the shape is 1-D.
func.func @dynamic_broadcast_c1(%x: tensor<3xf32>, %s: tensor<i64>) {
  // expected-error @+2 {{'graph.dynamic_broadcast' op shape must be a 1-D tensor, got rank 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.dynamic_broadcast %x, %s : (tensor<3xf32>, tensor<i64>) -> tensor<3xf32>
  return
}

// -----

// range_c1: start, limit and delta are scalars.
func.func @range_c1(%a: tensor<1xf32>, %b: tensor<f32>) {
  // expected-error @+2 {{'graph.range' op start, limit and delta must be scalars (rank 0)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.range %a, %b, %b : (tensor<1xf32>, tensor<f32>, tensor<f32>) -> tensor<?xf32>
  return
}

// -----

// dynamic_tile_c1: one repeat per dim.
func.func @dynamic_tile_c1(%x: tensor<2x3xf32>, %r: tensor<3xi64>) {
  // expected-error @+2 {{'graph.dynamic_tile' op repeats has 3 entries for a tensor of rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.dynamic_tile %x, %r : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<?x?xf32>
  return
}

// -----

// dynamic_pad_c1: two pads per dim.
func.func @dynamic_pad_c1(%x: tensor<2x3xf32>, %p: tensor<2xi64>, %v: tensor<f32>) {
  // expected-error @+2 {{'graph.dynamic_pad' op pads has 2 entries for a tensor of rank 2 (2 per dim)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.dynamic_pad %x, %p, %v mode = constant : (tensor<2x3xf32>, tensor<2xi64>, tensor<f32>) -> tensor<?x?xf32>
  return
}

// -----

// dynamic_pad_c2: the value is a scalar of the operand's element type.
func.func @dynamic_pad_c2(%x: tensor<2x3xf32>, %p: tensor<4xi64>, %v: tensor<i32>) {
  // expected-error @+2 {{'graph.dynamic_pad' op value must be a scalar of the operand's element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.dynamic_pad %x, %p, %v mode = constant : (tensor<2x3xf32>, tensor<4xi64>, tensor<i32>) -> tensor<?x?xf32>
  return
}

// -----

// dynamic_resize_c1: one scale or size per dim.
func.func @dynamic_resize_c1(%x: tensor<1x1x2x2xf32>, %s: tensor<2xf32>) {
  // expected-error @+2 {{'graph.dynamic_resize' op the scales or sizes has 2 entries for a tensor of rank 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.dynamic_resize %x, %s mode = nearest coordinate_mode = asymmetric nearest_mode = floor : (tensor<1x1x2x2xf32>, tensor<2xf32>) -> tensor<?x?x?x?xf32>
  return
}

// -----

// dynamic_resize_c2: sizes are i64.
func.func @dynamic_resize_c2(%x: tensor<1x1x2x2xf32>, %s: tensor<4xi32>) {
  // expected-error @+2 {{'graph.dynamic_resize' op sizes must be i64}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.dynamic_resize %x, %s mode = nearest coordinate_mode = asymmetric nearest_mode = floor : (tensor<1x1x2x2xf32>, tensor<4xi32>) -> tensor<?x?x?x?xf32>
  return
}

// -----

// dynamic_top_k_c1: 0 <= axis < rank.
func.func @dynamic_top_k_c1(%x: tensor<3x4xf32>, %k: tensor<1xi64>) {
  // expected-error @+2 {{'graph.dynamic_top_k' op axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %v, %i = graph.dynamic_top_k %x, %k axis = 2 : (tensor<3x4xf32>, tensor<1xi64>) -> (tensor<3x?xf32>, tensor<3x?xi64>)
  return
}

// -----

// dynamic_top_k_c2: k is one integer.
func.func @dynamic_top_k_c2(%x: tensor<3x4xf32>, %k: tensor<2xi64>) {
  // expected-error @+2 {{'graph.dynamic_top_k' op k must hold exactly one integer}}
  // expected-error @+1 {{failed to infer returned types}}
  %v, %i = graph.dynamic_top_k %x, %k axis = 1 : (tensor<3x4xf32>, tensor<2xi64>) -> (tensor<3x?xf32>, tensor<3x?xi64>)
  return
}

// -----

// quantize: the zero point is an integer of 8 to 32 bits.
func.func @quantize_zero_type(%x: tensor<4xf32>, %s: tensor<f32>, %z: tensor<f32>) {
  // expected-error @+2 {{'graph.quantize' op zero_point must be an integer of 8 to 32 bits}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.quantize %x, %s, %z : (tensor<4xf32>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

// quantize: scale and zero point share a shape.
func.func @quantize_param_shapes(%x: tensor<2x3xf32>, %s: tensor<1x3xf32>, %z: tensor<ui8>) {
  // expected-error @+2 {{'graph.quantize' op scale and zero_point have different shapes}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.quantize %x, %s, %z : (tensor<2x3xf32>, tensor<1x3xf32>, tensor<ui8>) -> tensor<2x3xui8>
  return
}

// -----

// quantize: a per-channel scale has x's size along its dim.
func.func @quantize_channels(%x: tensor<2x3xf32>, %s: tensor<1x4xf32>, %z: tensor<1x4xui8>) {
  // expected-error @+2 {{'graph.quantize' op scale has 4 channels where x has 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.quantize %x, %s, %z : (tensor<2x3xf32>, tensor<1x4xf32>, tensor<1x4xui8>) -> tensor<2x3xui8>
  return
}

// -----

// quantize: the scale varies along one dim at most.
func.func @quantize_two_axes(%x: tensor<2x3xf32>, %s: tensor<2x3xf32>, %z: tensor<2x3xui8>) {
  // expected-error @+2 {{'graph.quantize' op scale must be a scalar or vary along one dim}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.quantize %x, %s, %z : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xui8>) -> tensor<2x3xui8>
  return
}

// -----

// quantize: to 8- or 16-bit integers.
func.func @quantize_wide(%x: tensor<4xf32>, %s: tensor<f32>, %z: tensor<i32>) {
  // expected-error @+2 {{'graph.quantize' op quantizes to 8- or 16-bit integers only}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.quantize %x, %s, %z : (tensor<4xf32>, tensor<f32>, tensor<i32>) -> tensor<4xi32>
  return
}

// -----

// dequantize: x and the zero point share an element type.
func.func @dequantize_types(%x: tensor<4xui8>, %s: tensor<f32>, %z: tensor<i8>) {
  // expected-error @+2 {{'graph.dequantize' op x and zero_point have different element types}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.dequantize %x, %s, %z : (tensor<4xui8>, tensor<f32>, tensor<i8>) -> tensor<4xf32>
  return
}

// -----

// Bitwise ops take integers.
func.func @bit_and_float(%x: tensor<4xf32>) {
  // expected-error @+1 {{'graph.bit_and' op operand #0 must be ranked tensor of}}
  %0 = graph.bit_and %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// matmul_integer_c1: 8-bit operands.
func.func @matmul_integer_wide(%a: tensor<4x8xi32>, %b: tensor<8x2xi8>, %za: tensor<i32>, %zb: tensor<i8>) {
  // expected-error @+2 {{'graph.matmul_integer' op lhs must hold 8-bit integers}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.matmul_integer %a, %b, %za, %zb : (tensor<4x8xi32>, tensor<8x2xi8>, tensor<i32>, tensor<i8>) -> tensor<4x2xi32>
  return
}

// -----

// matmul_integer_c1: a scalar zero point of the operand's type.
func.func @matmul_integer_zero(%a: tensor<4x8xui8>, %b: tensor<8x2xi8>, %za: tensor<ui8>, %zb: tensor<2xi8>) {
  // expected-error @+2 {{'graph.matmul_integer' op rhs_zero must be a scalar of rhs's element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.matmul_integer %a, %b, %za, %zb : (tensor<4x8xui8>, tensor<8x2xi8>, tensor<ui8>, tensor<2xi8>) -> tensor<4x2xi32>
  return
}

// -----

// matmul_integer: matmul's shape rules.
func.func @matmul_integer_contracting(%a: tensor<4x8xui8>, %b: tensor<7x2xi8>, %za: tensor<ui8>, %zb: tensor<i8>) {
  // expected-error @+2 {{'graph.matmul_integer' op contracting dimensions differ (8 vs 7)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.matmul_integer %a, %b, %za, %zb : (tensor<4x8xui8>, tensor<7x2xi8>, tensor<ui8>, tensor<i8>) -> tensor<4x2xi32>
  return
}

// -----

// conv_integer_c1: 8-bit operands.
func.func @conv_integer_c1_wide(%x: tensor<1x2x5x5xi16>, %w: tensor<3x2x3x3xi8>, %zx: tensor<i16>, %zw: tensor<i8>) {
  // expected-error @+2 {{'graph.conv_integer' op input must hold 8-bit integers}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv_integer %x, %w, %zx, %zw strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<1x2x5x5xi16>, tensor<3x2x3x3xi8>, tensor<i16>, tensor<i8>) -> tensor<1x3x3x3xi32>
  return
}

// -----

// conv_integer_c1: a scalar zero point of the operand's type.
func.func @conv_integer_c1_zero(%x: tensor<1x2x5x5xui8>, %w: tensor<3x2x3x3xi8>, %zx: tensor<ui8>, %zw: tensor<3xi8>) {
  // expected-error @+2 {{'graph.conv_integer' op filter_zero must be a scalar of filter's element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv_integer %x, %w, %zx, %zw strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<1x2x5x5xui8>, tensor<3x2x3x3xi8>, tensor<ui8>, tensor<3xi8>) -> tensor<1x3x3x3xi32>
  return
}

// -----

// conv_integer_c2: conv's shape rules (conv_c3: groups divide channels).
func.func @conv_integer_c2_groups(%x: tensor<1x4x5x5xui8>, %w: tensor<3x2x3x3xi8>, %zx: tensor<ui8>, %zw: tensor<i8>) {
  // expected-error @+2 {{'graph.conv_integer' op output channels 3 are not divisible by groups 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv_integer %x, %w, %zx, %zw strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 2 : (tensor<1x4x5x5xui8>, tensor<3x2x3x3xi8>, tensor<ui8>, tensor<i8>) -> tensor<1x3x3x3xi32>
  return
}

// -----

// nonzero: the mask is boolean.
func.func @nonzero_mask(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'graph.nonzero' op operand #0 must be ranked tensor of 1-bit signless integer values}}
  %0 = graph.nonzero %x : (tensor<2x3xf32>) -> tensor<?x2xi64>
  return
}

// -----

// nonzero: one column per dim of the mask; the row count is the data's.
func.func @nonzero_result(%m: tensor<2x3xi1>) {
  // expected-error @+2 {{'graph.nonzero' op inferred type(s) 'tensor<?x2xi64>' are incompatible with return type(s) of operation 'tensor<6x2xi64>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.nonzero %m : (tensor<2x3xi1>) -> tensor<6x2xi64>
  return
}
