// RUN: loom-opt %s | loom-opt | FileCheck %s
// RUN: loom-opt %s --mlir-print-op-generic | loom-opt | FileCheck %s

// Round trip of the region ops (ONNX If, Loop, Scan): graph.if,
// graph.loop and graph.yield, with and without their optional parts.

// CHECK-LABEL: func.func @if_captures
// CHECK: %[[R:.*]] = graph.if %{{.*}} captures(%{{.*}} : tensor<4xf32>) : tensor<i1> -> tensor<4xf32> {
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<4xf32>):
// CHECK-NEXT: %[[N:.*]] = graph.neg %[[A]] : tensor<4xf32>
// CHECK-NEXT: graph.yield %[[N]] : tensor<4xf32>
// CHECK-NEXT: } else {
// CHECK-NEXT: ^bb0(%[[B:.*]]: tensor<4xf32>):
// CHECK-NEXT: graph.yield %[[B]] : tensor<4xf32>
func.func @if_captures(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.if %c captures(%x : tensor<4xf32>) : tensor<i1> -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %n = graph.neg %a : tensor<4xf32>
    graph.yield %n : tensor<4xf32>
  } else {
  ^bb0(%a: tensor<4xf32>):
    graph.yield %a : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// A branch may yield a more static type than the result (if_c3).
// CHECK-LABEL: func.func @if_no_captures
// CHECK: graph.if %{{.*}} : tensor<i1> -> tensor<?xf32> {
// CHECK: graph.yield %{{.*}} : tensor<2xf32>
// CHECK: } else {
// CHECK: graph.yield %{{.*}} : tensor<3xf32>
func.func @if_no_captures(%c: tensor<i1>) -> tensor<?xf32> {
  %r = graph.if %c : tensor<i1> -> tensor<?xf32> {
    %a = graph.constant dense<1.0> : tensor<2xf32>
    graph.yield %a : tensor<2xf32>
  } else {
    %b = graph.constant dense<2.0> : tensor<3xf32>
    graph.yield %b : tensor<3xf32>
  }
  return %r : tensor<?xf32>
}

// CHECK-LABEL: func.func @loop_full
// CHECK: %{{.*}}:2 = graph.loop trip_count %{{.*}} : tensor<i64> cond %{{.*}} : tensor<i1> inits(%{{.*}} : tensor<2xf32>) captures(%{{.*}} : tensor<2xf32>) -> tensor<2xf32>, tensor<?x2xf32> {
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<i64>, %{{.*}}: tensor<i1>, %{{.*}}: tensor<2xf32>, %{{.*}}: tensor<2xf32>):
// CHECK: graph.yield %{{.*}}, %{{.*}}, %{{.*}} : tensor<i1>, tensor<2xf32>, tensor<2xf32>
func.func @loop_full(%n: tensor<i64>, %c: tensor<i1>, %y0: tensor<2xf32>,
                     %d: tensor<2xf32>) -> (tensor<2xf32>, tensor<?x2xf32>) {
  %y, %ys = graph.loop trip_count %n : tensor<i64> cond %c : tensor<i1>
      inits(%y0 : tensor<2xf32>) captures(%d : tensor<2xf32>)
      -> tensor<2xf32>, tensor<?x2xf32> {
  ^bb0(%i: tensor<i64>, %ci: tensor<i1>, %yy: tensor<2xf32>, %dd: tensor<2xf32>):
    %next = graph.add %yy, %dd : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    graph.yield %ci, %next, %yy : tensor<i1>, tensor<2xf32>, tensor<2xf32>
  }
  return %y, %ys : tensor<2xf32>, tensor<?x2xf32>
}

// Neither bound nor condition, no carried value: the body decides alone.
// CHECK-LABEL: func.func @loop_bare
// CHECK: graph.loop {
// CHECK-NEXT: ^bb0(%{{.*}}: tensor<i64>, %[[C:.*]]: tensor<i1>):
// CHECK-NEXT: graph.yield %[[C]] : tensor<i1>
func.func @loop_bare() {
  graph.loop {
  ^bb0(%i: tensor<i64>, %c: tensor<i1>):
    graph.yield %c : tensor<i1>
  }
  return
}
