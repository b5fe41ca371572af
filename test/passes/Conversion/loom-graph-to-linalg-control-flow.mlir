// RUN: loom-opt --loom-graph-to-linalg %s | FileCheck %s

// graph.if and graph.loop become scf.if, and scf.for or scf.while, on
// tensors (GraphToLinalg/ControlFlow.cpp); the ops of their regions are lowered
// first, in place, and the captures replace the regions' arguments. The
// numbers are checked by test/frontends/onnx/control-flow.onnxtext.

// CHECK-LABEL: func.func @if
// CHECK-SAME: (%[[C:.*]]: tensor<i1>, %[[X:.*]]: tensor<4xf32>)
// CHECK: %[[B:.*]] = tensor.extract %[[C]][] : tensor<i1>
// CHECK: scf.if %[[B]] -> (tensor<?xf32>) {
// CHECK: linalg.generic {{.*}} ins(%[[X]] : tensor<4xf32>)
// CHECK: arith.negf
// CHECK: %[[T:.*]] = tensor.cast %{{.*}} : tensor<4xf32> to tensor<?xf32>
// CHECK: scf.yield %[[T]] : tensor<?xf32>
// CHECK: } else {
// CHECK: %[[E:.*]] = tensor.cast %[[X]] : tensor<4xf32> to tensor<?xf32>
// CHECK: scf.yield %[[E]] : tensor<?xf32>
func.func @if(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<?xf32> {
  %r = graph.if %c captures(%x : tensor<4xf32>) : tensor<i1> -> tensor<?xf32> {
  ^bb0(%a: tensor<4xf32>):
    %n = graph.neg %a : tensor<4xf32>
    graph.yield %n : tensor<4xf32>
  } else {
  ^bb0(%a: tensor<4xf32>):
    graph.yield %a : tensor<4xf32>
  }
  return %r : tensor<?xf32>
}

// The stack of a scan value has trip_count rows; the loop runs while
// i < trip_count and cond; the result is the rows written.
// CHECK-LABEL: func.func @loop
// CHECK-SAME: (%[[N:.*]]: tensor<i64>, %[[C:.*]]: tensor<i1>, %[[Y0:.*]]: tensor<2xf32>, %[[D:.*]]: tensor<2xf32>)
// CHECK: %[[M:.*]] = tensor.extract %[[N]][] : tensor<i64>
// CHECK: %[[POS:.*]] = arith.maxsi %[[M]], %{{.*}} : i64
// CHECK: %[[ROWS:.*]] = arith.index_cast %[[POS]] : i64 to index
// CHECK: %[[STACK:.*]] = tensor.empty(%[[ROWS]]) : tensor<?x2xf32>
// CHECK: %[[C0:.*]] = tensor.extract %[[C]][] : tensor<i1>
// CHECK: %[[W:.*]]:4 = scf.while (%[[I:.*]] = %{{.*}}, %[[CI:.*]] = %[[C0]], %[[Y:.*]] = %[[Y0]], %[[S:.*]] = %[[STACK]])
// CHECK: %[[LT:.*]] = arith.cmpi slt, %[[I]], %[[M]] : i64
// CHECK: %[[GO:.*]] = arith.andi %[[LT]], %[[CI]] : i1
// CHECK: scf.condition(%[[GO]])
// CHECK: } do {
// CHECK: ^bb0(%[[I2:.*]]: i64, %[[C2:.*]]: i1, %[[Y2:.*]]: tensor<2xf32>, %[[S2:.*]]: tensor<?x2xf32>):
// CHECK: %[[NEXT:.*]] = linalg.generic {{.*}} ins(%[[Y2]], %[[D]] : tensor<2xf32>, tensor<2xf32>)
// CHECK: %[[ROW:.*]] = arith.index_cast %[[I2]] : i64 to index
// CHECK: %[[S3:.*]] = tensor.insert_slice %[[Y2]] into %[[S2]][%[[ROW]], 0] [1, 2] [1, 1] : tensor<2xf32> into tensor<?x2xf32>
// CHECK: %[[I3:.*]] = arith.addi %[[I2]], %{{.*}} : i64
// CHECK: scf.yield %[[I3]], %{{.*}}, %[[NEXT]], %[[S3]] : i64, i1, tensor<2xf32>, tensor<?x2xf32>
// CHECK: %[[RAN:.*]] = arith.index_cast %[[W]]#0 : i64 to index
// CHECK: %[[SCAN:.*]] = tensor.extract_slice %[[W]]#3[0, 0] [%[[RAN]], 2] [1, 1]
// CHECK: return %[[W]]#2, %[[SCAN]]
func.func @loop(%n: tensor<i64>, %c: tensor<i1>, %y0: tensor<2xf32>,
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

// Nothing can stop this loop early (no condition; the body yields its
// own): an scf.for over [0, trip_count), whose stack is the result. A
// yielded dynamic dim cast to the static one is checked when the code runs.
// CHECK-LABEL: func.func @loop_static
// CHECK: %[[TRIPS:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK: %[[STACK:.*]] = tensor.empty() : tensor<3x2xf32>
// CHECK: %[[R:.*]] = scf.for %[[I:.*]] = %{{.*}} to %[[TRIPS]] step %{{.*}} iter_args(%[[S:.*]] = %[[STACK]]) -> (tensor<3x2xf32>) {
// CHECK: cf.assert %{{.*}}, "graph.loop: a yielded scan value has dim 0 of another size than 2"
// CHECK: %[[V:.*]] = tensor.cast %{{.*}} : tensor<?xf32> to tensor<2xf32>
// CHECK: %[[S2:.*]] = tensor.insert_slice %[[V]] into %[[S]][%{{.*}}, 0] [1, 2] [1, 1]
// CHECK: scf.yield %[[S2]] : tensor<3x2xf32>
// CHECK: return %[[R]] : tensor<3x2xf32>
func.func @loop_static(%x: tensor<?xf32>) -> tensor<3x2xf32> {
  %n = graph.constant dense<3> : tensor<i64>
  %ys = graph.loop trip_count %n : tensor<i64> captures(%x : tensor<?xf32>)
      -> tensor<3x2xf32> {
  ^bb0(%i: tensor<i64>, %c: tensor<i1>, %xx: tensor<?xf32>):
    graph.yield %c, %xx : tensor<i1>, tensor<?xf32>
  }
  return %ys : tensor<3x2xf32>
}

// A condition operand that is a constant true stops nothing either.
// CHECK-LABEL: func.func @loop_true_cond
// CHECK-NOT: scf.while
// CHECK: scf.for
func.func @loop_true_cond(%n: tensor<i64>, %y0: tensor<2xf32>) -> tensor<2xf32> {
  %t = graph.constant dense<true> : tensor<i1>
  %y = graph.loop trip_count %n : tensor<i64> cond %t : tensor<i1>
      inits(%y0 : tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%i: tensor<i64>, %c: tensor<i1>, %yy: tensor<2xf32>):
    %e = graph.exp %yy : tensor<2xf32>
    graph.yield %c, %e : tensor<i1>, tensor<2xf32>
  }
  return %y : tensor<2xf32>
}
