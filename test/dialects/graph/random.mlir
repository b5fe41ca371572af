// RUN: loom-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// The random ops (GraphOps.td, "Random ops"): their assembly round trips,
// and each verifier rule (GraphRandom.cpp) has a case named after its tag.

// CHECK-LABEL: func.func @ops
// CHECK: graph.random_uniform %{{.*}}, %{{.*}} {high = 3.000000e+00 : f64, low = -1.000000e+00 : f64, seed = 5 : i64} : (tensor<i64>, tensor<i64>) -> tensor<2x3xf32>
// CHECK: graph.random_normal %{{.*}}, %{{.*}} {mean = 0.000000e+00 : f64, scale = 2.000000e+00 : f64, stream = 1 : i64} : (tensor<i64>, tensor<i64>) -> tensor<4xf64>
// CHECK: graph.bernoulli %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x4xf32>, tensor<i64>, tensor<i64>) -> tensor<?x4xi1>
// CHECK: graph.multinomial %{{.*}}, %{{.*}}, %{{.*}} {sample_size = 5 : i64} : (tensor<2x3xf32>, tensor<i64>, tensor<i64>) -> tensor<2x5xi32>
// CHECK: graph.random_dropout %{{.*}}, %{{.*}}, %{{.*}} {ratio = 1.000000e-01 : f64, seed = 7 : i64} : (tensor<?x4xf32>, tensor<i64>, tensor<i64>) -> tensor<?x4xf32>
func.func @ops(%k: tensor<i64>, %n: tensor<i64>, %p: tensor<?x4xf32>,
               %l: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<4xf64>,
               tensor<?x4xi1>, tensor<2x5xi32>, tensor<?x4xf32>) {
  %u = graph.random_uniform %k, %n {low = -1.0 : f64, high = 3.0 : f64, seed = 5 : i64} : (tensor<i64>, tensor<i64>) -> tensor<2x3xf32>
  %g = graph.random_normal %k, %n {mean = 0.0 : f64, scale = 2.0 : f64, stream = 1 : i64} : (tensor<i64>, tensor<i64>) -> tensor<4xf64>
  %b = graph.bernoulli %p, %k, %n : (tensor<?x4xf32>, tensor<i64>, tensor<i64>) -> tensor<?x4xi1>
  %m = graph.multinomial %l, %k, %n {sample_size = 5 : i64} : (tensor<2x3xf32>, tensor<i64>, tensor<i64>) -> tensor<2x5xi32>
  %d = graph.random_dropout %p, %k, %n {ratio = 0.1 : f64, seed = 7 : i64} : (tensor<?x4xf32>, tensor<i64>, tensor<i64>) -> tensor<?x4xf32>
  return %u, %g, %b, %m, %d : tensor<2x3xf32>, tensor<4xf64>, tensor<?x4xi1>, tensor<2x5xi32>, tensor<?x4xf32>
}

// -----

func.func @random_uniform_c1(%k: tensor<i64>, %n: tensor<i64>) -> tensor<2xf32> {
  // expected-error @+1 {{low 2.000000e+00 is greater than high 1.000000e+00}}
  %u = graph.random_uniform %k, %n {low = 2.0 : f64, high = 1.0 : f64} : (tensor<i64>, tensor<i64>) -> tensor<2xf32>
  return %u : tensor<2xf32>
}

// -----

func.func @random_uniform_static(%k: tensor<i64>, %n: tensor<i64>) -> tensor<?xf32> {
  // expected-error @+1 {{needs a static result shape, not 'tensor<?xf32>'}}
  %u = graph.random_uniform %k, %n {low = 0.0 : f64, high = 1.0 : f64} : (tensor<i64>, tensor<i64>) -> tensor<?xf32>
  return %u : tensor<?xf32>
}

// -----

func.func @random_normal_c1(%k: tensor<i64>, %n: tensor<i64>) -> tensor<2xf32> {
  // expected-error @+1 {{scale -1.000000e+00 must be >= 0}}
  %u = graph.random_normal %k, %n {mean = 0.0 : f64, scale = -1.0 : f64} : (tensor<i64>, tensor<i64>) -> tensor<2xf32>
  return %u : tensor<2xf32>
}

// -----

func.func @rng_scalar(%k: tensor<2xi64>, %n: tensor<i64>) -> tensor<2xf32> {
  // expected-error @+1 {{operand #0 must be 0D tensor of 64-bit signless integer values}}
  %u = graph.random_normal %k, %n {mean = 0.0 : f64, scale = 1.0 : f64} : (tensor<2xi64>, tensor<i64>) -> tensor<2xf32>
  return %u : tensor<2xf32>
}

// -----

func.func @bernoulli_c1(%p: tensor<3xf32>, %k: tensor<i64>, %n: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{result 'tensor<4xf32>' must have the shape of probs 'tensor<3xf32>'}}
  %b = graph.bernoulli %p, %k, %n : (tensor<3xf32>, tensor<i64>, tensor<i64>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

// -----

func.func @multinomial_c1(%l: tensor<2x3xf32>, %k: tensor<i64>, %n: tensor<i64>) -> tensor<2x4xi64> {
  // expected-error @+1 {{result 'tensor<2x4xi64>' must be [batch, sample_size] = [2, 5]}}
  %m = graph.multinomial %l, %k, %n {sample_size = 5 : i64} : (tensor<2x3xf32>, tensor<i64>, tensor<i64>) -> tensor<2x4xi64>
  return %m : tensor<2x4xi64>
}

// -----

func.func @random_dropout_c1(%x: tensor<3xf32>, %k: tensor<i64>, %n: tensor<i64>) -> tensor<3xf32> {
  // expected-error @+1 {{ratio 1.000000e+00 must be in [0, 1)}}
  %d = graph.random_dropout %x, %k, %n {ratio = 1.0 : f64} : (tensor<3xf32>, tensor<i64>, tensor<i64>) -> tensor<3xf32>
  return %d : tensor<3xf32>
}
