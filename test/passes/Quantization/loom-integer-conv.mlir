// RUN: loom-opt --loom-integer-conv --split-input-file %s | FileCheck %s

// ONNX Runtime's static QDQ form of a CNN layer: a u8 activation
// dequantized per tensor, an s8 filter dequantized per output channel
// (axis 0, reshaped [O, 1, 1, 1]) with zero zero points (a splat:
// scalar), an f32 bias. The convolution becomes the integer one with the
// same attributes, widened, scaled once by sx * sw[o] ([O, 1, 1] against
// the result) and the bias added; the dequantized copies go.
// CHECK-LABEL: func.func @per_channel
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x9x9xui8>, %[[W:.*]]: tensor<6x2x3x3xi8>, %[[SX:.*]]: tensor<f32>, %[[ZX:.*]]: tensor<ui8>, %[[SW:.*]]: tensor<6x1x1x1xf32>, %[[B:.*]]: tensor<6xf32>)
// CHECK-DAG: %[[ZW:.*]] = graph.constant dense<0> : tensor<i8>
// CHECK-DAG: %[[SWR:.*]] = graph.reshape %[[SW]] {{.*}} -> tensor<6x1x1xf32>
// CHECK: %[[P:.*]] = graph.conv_integer %[[X]], %[[W]], %[[ZX]], %[[ZW]] strides = [2, 1] padding = [1, 0, 1, 2] dilations = [1, 2] groups = 2 : (tensor<2x4x9x9xui8>, tensor<6x2x3x3xi8>, tensor<ui8>, tensor<i8>) -> tensor<2x6x5x7xi32>
// CHECK: %[[F:.*]] = graph.cast %[[P]] to f32
// CHECK: %[[S:.*]] = graph.mul %[[SX]], %[[SWR]]
// CHECK: %[[Y:.*]] = graph.mul %[[F]], %[[S]]
// CHECK: %[[BR:.*]] = graph.reshape %[[B]] {{.*}} -> tensor<6x1x1xf32>
// CHECK: %[[Z:.*]] = graph.add %[[Y]], %[[BR]]
// CHECK-NOT: graph.dequantize
// CHECK-NOT: graph.conv %
// CHECK: return %[[Z]]
func.func @per_channel(%x: tensor<2x4x9x9xui8>, %w: tensor<6x2x3x3xi8>, %sx: tensor<f32>, %zx: tensor<ui8>, %sw: tensor<6x1x1x1xf32>, %b: tensor<6xf32>) -> tensor<2x6x5x7xf32> {
  %zw = graph.constant dense<0> : tensor<6x1x1x1xi8>
  %xd = graph.dequantize %x, %sx, %zx : (tensor<2x4x9x9xui8>, tensor<f32>, tensor<ui8>) -> tensor<2x4x9x9xf32>
  %wd = graph.dequantize %w, %sw, %zw : (tensor<6x2x3x3xi8>, tensor<6x1x1x1xf32>, tensor<6x1x1x1xi8>) -> tensor<6x2x3x3xf32>
  %y = graph.conv %xd, %wd, %b strides = [2, 1] padding = [1, 0, 1, 2] dilations = [1, 2] groups = 2 : (tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<2x6x5x7xf32>
  return %y : tensor<2x6x5x7xf32>
}

// -----

// Per tensor, an s8 activation, no bias, 1-D; a dequantized activation
// read elsewhere too stays for that reader.
// CHECK-LABEL: func.func @per_tensor_1d
// CHECK: %[[D:.*]] = graph.dequantize %arg0
// CHECK: %[[P:.*]] = graph.conv_integer %arg0, %arg1, %arg2, %arg3 strides = [1] padding = [1, 1] dilations = [1] groups = 1 : (tensor<1x3x8xi8>, tensor<5x3x3xi8>, tensor<i8>, tensor<i8>) -> tensor<1x5x8xi32>
// CHECK: %[[F:.*]] = graph.cast %[[P]] to f32
// CHECK: %[[S:.*]] = graph.mul %arg4, %arg5
// CHECK: %[[Y:.*]] = graph.mul %[[F]], %[[S]]
// CHECK: return %[[Y]], %[[D]]
func.func @per_tensor_1d(%x: tensor<1x3x8xi8>, %w: tensor<5x3x3xi8>, %zx: tensor<i8>, %zw: tensor<i8>, %sx: tensor<f32>, %sw: tensor<f32>) -> (tensor<1x5x8xf32>, tensor<1x3x8xf32>) {
  %xd = graph.dequantize %x, %sx, %zx : (tensor<1x3x8xi8>, tensor<f32>, tensor<i8>) -> tensor<1x3x8xf32>
  %wd = graph.dequantize %w, %sw, %zw : (tensor<5x3x3xi8>, tensor<f32>, tensor<i8>) -> tensor<5x3x3xf32>
  %y = graph.conv %xd, %wd strides = [1] padding = [1, 1] dilations = [1] groups = 1 : (tensor<1x3x8xf32>, tensor<5x3x3xf32>) -> tensor<1x5x8xf32>
  return %y, %xd : tensor<1x5x8xf32>, tensor<1x3x8xf32>
}

// -----

// What does not fit stays: a filter zero point that varies per channel, a
// filter scale along its input channels, an activation scale per channel,
// an input that is not dequantized.
// CHECK-LABEL: func.func @stays
// CHECK-NOT: graph.conv_integer
// CHECK-COUNT-4: graph.conv %
func.func @stays(%x: tensor<1x4x6x6xui8>, %w: tensor<6x4x3x3xi8>, %f: tensor<1x4x6x6xf32>, %sx: tensor<f32>, %zx: tensor<ui8>) -> (tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>) {
  %sw = graph.constant dense<0.5> : tensor<6x1x1x1xf32>
  %zv = graph.constant dense<[[[[0]]], [[[1]]], [[[0]]], [[[0]]], [[[0]]], [[[0]]]]> : tensor<6x1x1x1xi8>
  %zw = graph.constant dense<0> : tensor<6x1x1x1xi8>
  %sc = graph.constant dense<0.5> : tensor<4x1x1xf32>
  %zc = graph.constant dense<0> : tensor<4x1x1xui8>
  %sk = graph.constant dense<0.5> : tensor<1x4x1x1xf32>
  %zk = graph.constant dense<0> : tensor<1x4x1x1xi8>
  %xd = graph.dequantize %x, %sx, %zx : (tensor<1x4x6x6xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x4x6x6xf32>
  %xc = graph.dequantize %x, %sc, %zc : (tensor<1x4x6x6xui8>, tensor<4x1x1xf32>, tensor<4x1x1xui8>) -> tensor<1x4x6x6xf32>
  %w1 = graph.dequantize %w, %sw, %zv : (tensor<6x4x3x3xi8>, tensor<6x1x1x1xf32>, tensor<6x1x1x1xi8>) -> tensor<6x4x3x3xf32>
  %w2 = graph.dequantize %w, %sk, %zk : (tensor<6x4x3x3xi8>, tensor<1x4x1x1xf32>, tensor<1x4x1x1xi8>) -> tensor<6x4x3x3xf32>
  %w3 = graph.dequantize %w, %sw, %zw : (tensor<6x4x3x3xi8>, tensor<6x1x1x1xf32>, tensor<6x1x1x1xi8>) -> tensor<6x4x3x3xf32>
  %y1 = graph.conv %xd, %w1 strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<1x4x6x6xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x4x4xf32>
  %y2 = graph.conv %xd, %w2 strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<1x4x6x6xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x4x4xf32>
  %y3 = graph.conv %xc, %w3 strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<1x4x6x6xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x4x4xf32>
  %y4 = graph.conv %f, %w3 strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<1x4x6x6xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x4x4xf32>
  return %y1, %y2, %y3, %y4 : tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>
}
