// RUN: loom-opt --loom-graph-to-linalg %s | FileCheck %s

// Ops with run-time shape parameters: the sizes are computed from the
// values, a cf.assert checks what ONNX calls an error (the CPU pipeline
// turns it into a run-time status), and the data moves with the sizes
// clamped to zero when the check fails. The numbers are checked by the
// ONNX conformance suite (onnx-node-run) and runtime/runtime-checks.test.

// CHECK-LABEL: func.func @reshape
// CHECK: cf.assert %{{.*}}, "graph.dynamic_reshape: the shape has a negative entry, more than one -1, or another element count than the input"
// CHECK: %[[SHAPE:.*]] = tensor.from_elements %{{.*}}, %{{.*}} : tensor<2xindex>
// CHECK: tensor.reshape %{{.*}}(%[[SHAPE]]) : (tensor<2x3xf32>, tensor<2xindex>) -> tensor<?x?xf32>
func.func @reshape(%x: tensor<2x3xf32>, %s: tensor<2xi64>) -> tensor<?x?xf32> {
  %0 = graph.dynamic_reshape %x, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// A reduction over a run-time axis: one case per possible axis set (a bit
// mask), each the static reduction, cast to the result type.
// CHECK-LABEL: func.func @sum
// CHECK: cf.assert %{{.*}}, "graph.dynamic_reduce_sum: the axes are out of range or repeat one"
// CHECK: scf.index_switch %{{.*}} -> tensor<?xf32>
// CHECK: case 1 {
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]
// CHECK: tensor.cast %{{.*}} : tensor<3xf32> to tensor<?xf32>
// CHECK: case 2 {
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: tensor.cast %{{.*}} : tensor<2xf32> to tensor<?xf32>
// CHECK: default {
// CHECK: tensor.empty(%{{.*}}) : tensor<?xf32>
func.func @sum(%x: tensor<2x3xf32>, %a: tensor<1xi64>) -> tensor<?xf32> {
  %0 = graph.dynamic_reduce_sum %x, %a : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// A slice with run-time bounds reads the input at first + i * step.
// CHECK-LABEL: func.func @slice
// CHECK: cf.assert %{{.*}}, "graph.dynamic_slice: the axes are out of range or repeat one, or a step is 0"
// CHECK: linalg.generic
// CHECK: tensor.extract %{{.*}} : tensor<4x8xf32>
func.func @slice(%x: tensor<4x8xf32>, %b: tensor<1xi64>) -> tensor<?x?xf32> {
  %0 = graph.dynamic_slice %x, %b, %b, %b, %b : (tensor<4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// nonzero: the count of true elements (a sum of the mask as i64), the
// result allocated with that many rows, then one sequential pass over the
// mask that writes each true element's coordinates into the next row.
// CHECK-LABEL: func.func @nonzero
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "reduction"]
// CHECK: %[[COUNT:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK: %[[ROWS:.*]] = tensor.empty(%[[COUNT]]) : tensor<?x2xi64>
// CHECK: scf.for %[[I:[a-z0-9_]+]] = {{.*}} iter_args(%{{.*}} = %[[ROWS]], %{{.*}} = %{{.*}}) -> (tensor<?x2xi64>, index)
// CHECK: scf.for %[[J:[a-z0-9_]+]] = {{.*}} -> (tensor<?x2xi64>, index)
// CHECK: %[[BIT:.*]] = tensor.extract %{{.*}}[%[[I]], %[[J]]] : tensor<2x3xi1>
// CHECK: scf.if %[[BIT]] -> (tensor<?x2xi64>, index)
// CHECK: tensor.insert
// CHECK: tensor.insert
func.func @nonzero(%m: tensor<2x3xi1>) -> tensor<?x2xi64> {
  %0 = graph.nonzero %m : (tensor<2x3xi1>) -> tensor<?x2xi64>
  return %0 : tensor<?x2xi64>
}
