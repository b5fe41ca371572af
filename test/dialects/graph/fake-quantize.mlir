// RUN: loom-opt --split-input-file --verify-diagnostics %s | FileCheck %s

// graph.fake_quantize round trip: per tensor, per channel, learned.
// CHECK-LABEL: func.func @fake_quantize
// CHECK: graph.fake_quantize %arg0, %arg1, %arg2 {qmax = 255 : i64, qmin = 0 : i64} : (tensor<2x3xf32>, tensor<f32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK: graph.fake_quantize %arg0, %arg3, %arg3 {learned, qmax = 127 : i64, qmin = -127 : i64} : (tensor<2x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
func.func @fake_quantize(%x: tensor<2x3xf32>, %s: tensor<f32>, %z: tensor<f32>, %c: tensor<1x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = graph.fake_quantize %x, %s, %z {qmin = 0 : i64, qmax = 255 : i64} : (tensor<2x3xf32>, tensor<f32>, tensor<f32>) -> tensor<2x3xf32>
  %1 = graph.fake_quantize %x, %c, %c {qmin = -127 : i64, qmax = 127 : i64, learned} : (tensor<2x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

func.func @fake_quantize_c1(%x: tensor<2x3xf32>, %s: tensor<f32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{'graph.fake_quantize' op qmin (5) must be below qmax (5)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.fake_quantize %x, %s, %s {qmin = 5 : i64, qmax = 5 : i64} : (tensor<2x3xf32>, tensor<f32>, tensor<f32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @fake_quantize_c2(%x: tensor<2x3xf32>, %s: tensor<f32>, %z: tensor<3xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{'graph.fake_quantize' op scale and zero_point have different shapes}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.fake_quantize %x, %s, %z {qmin = 0 : i64, qmax = 255 : i64} : (tensor<2x3xf32>, tensor<f32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @fake_quantize_c3(%x: tensor<2x3xf32>, %s: tensor<1x4xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{'graph.fake_quantize' op scale has 4 channels where x has 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.fake_quantize %x, %s, %s {qmin = 0 : i64, qmax = 255 : i64} : (tensor<2x3xf32>, tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @fake_quantize_c3_rank(%x: tensor<3xf32>, %s: tensor<1x3xf32>) -> tensor<3xf32> {
  // expected-error @+2 {{'graph.fake_quantize' op scale has a higher rank than x}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.fake_quantize %x, %s, %s {qmin = 0 : i64, qmax = 255 : i64} : (tensor<3xf32>, tensor<1x3xf32>, tensor<1x3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @fake_quantize_c4(%x: tensor<2x3xf32>, %s: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{'graph.fake_quantize' op scale must be a scalar or vary along one dim}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.fake_quantize %x, %s, %s {qmin = 0 : i64, qmax = 255 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
