// RUN: loom-opt %s -split-input-file -verify-diagnostics

// One case per verifier rule of graph.if and graph.loop, named after the
// rule tag of GraphOps.cpp ("Control flow").

// if_c1: the condition is one boolean.
func.func @if_c1(%c: tensor<2xi1>) {
  // expected-error @+1 {{'graph.if' op condition must be a rank-0 tensor<i1>, got 'tensor<2xi1>' (if_c1)}}
  graph.if %c : tensor<2xi1> {
    graph.yield
  } else {
    graph.yield
  }
  return
}

// -----

// if_c2: each region takes one argument per capture, of its type.
func.func @if_c2(%c: tensor<i1>, %x: tensor<4xf32>) {
  // expected-error @+1 {{'graph.if' op else region argument 0 has type 'tensor<4xf16>', but capture 0 is 'tensor<4xf32>' (if_c2)}}
  graph.if %c captures(%x : tensor<4xf32>) : tensor<i1> {
  ^bb0(%a: tensor<4xf32>):
    graph.yield
  } else {
  ^bb0(%a: tensor<4xf16>):
    graph.yield
  }
  return
}

// -----

// if_c3: each region yields one value per result, cast-compatible with it.
func.func @if_c3(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'graph.if' op then region yields 'tensor<4xf32>' for result 0 of type 'tensor<3xf32>' (if_c3)}}
  %r = graph.if %c captures(%x : tensor<4xf32>) : tensor<i1> -> tensor<3xf32> {
  ^bb0(%a: tensor<4xf32>):
    graph.yield %a : tensor<4xf32>
  } else {
  ^bb0(%a: tensor<4xf32>):
    graph.yield %a : tensor<4xf32>
  }
  return %r : tensor<3xf32>
}

// -----

// loop_c1: the trip count is one i64.
func.func @loop_c1(%n: tensor<1xi64>) {
  // expected-error @+1 {{'graph.loop' op trip count must be a rank-0 tensor<i64>, got 'tensor<1xi64>' (loop_c1)}}
  graph.loop trip_count %n : tensor<1xi64> {
  ^bb0(%i: tensor<i64>, %c: tensor<i1>):
    graph.yield %c : tensor<i1>
  }
  return
}

// -----

// loop_c2: the body takes (iteration, condition, carried..., captures...).
func.func @loop_c2(%x: tensor<2xf32>) {
  // expected-error @+1 {{'graph.loop' op body takes 3 arguments, expected 2 + 1 carried + 1 captures (loop_c2)}}
  graph.loop inits(%x : tensor<2xf32>) captures(%x : tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%i: tensor<i64>, %c: tensor<i1>, %a: tensor<2xf32>):
    graph.yield %c, %a : tensor<i1>, tensor<2xf32>
  }
  return
}

// -----

// loop_c3: an initial value fits its carried argument.
func.func @loop_c3(%x: tensor<3xf32>) {
  // expected-error @+1 {{'graph.loop' op initial value 0 of type 'tensor<3xf32>' does not fit its carried argument of type 'tensor<2xf32>' (loop_c3)}}
  graph.loop inits(%x : tensor<3xf32>) -> tensor<2xf32> {
  ^bb0(%i: tensor<i64>, %c: tensor<i1>, %a: tensor<2xf32>):
    graph.yield %c, %a : tensor<i1>, tensor<2xf32>
  }
  return
}

// -----

// loop_c4: the body yields the next condition first.
func.func @loop_c4(%x: tensor<2xf32>) {
  // expected-error @+1 {{'graph.loop' op body must yield the next condition (tensor<i1>) first, got 'tensor<2xf32>' (loop_c4)}}
  graph.loop inits(%x : tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%i: tensor<i64>, %c: tensor<i1>, %a: tensor<2xf32>):
    graph.yield %a, %a : tensor<2xf32>, tensor<2xf32>
  }
  return
}

// -----

// loop_c5: a scan result stacks the yielded value along a leading dim.
func.func @loop_c5(%x: tensor<2xf32>) {
  // expected-error @+1 {{'graph.loop' op scan result 0 of type 'tensor<?x3xf32>' does not stack the yielded 'tensor<2xf32>' along a leading dim (loop_c5)}}
  graph.loop inits(%x : tensor<2xf32>) -> tensor<2xf32>, tensor<?x3xf32> {
  ^bb0(%i: tensor<i64>, %c: tensor<i1>, %a: tensor<2xf32>):
    graph.yield %c, %a, %a : tensor<i1>, tensor<2xf32>, tensor<2xf32>
  }
  return
}
