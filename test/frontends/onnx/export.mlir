// `loomc export` writes ONNX at opset 17; importing it back shows what it
// wrote. Ops with no ONNX op of their own become small subgraphs.
// RUN: split-file %s %t
// RUN: loomc export %t/model.mlir -o %t/model.onnx
// RUN: loomc import %t/model.onnx | FileCheck %s
// RUN: loomc export %t/logic.mlir -o %t/logic.onnx
// RUN: loomc import %t/logic.onnx | FileCheck %s --check-prefix=LOGIC
// RUN: loomc export %t/nonzero.mlir -o %t/nonzero.onnx
// RUN: loomc import %t/nonzero.onnx | FileCheck %s --check-prefix=NONZERO
// RUN: not loomc export %t/scatter-max.mlir -o %t/bad.onnx 2>&1 | FileCheck %s --check-prefix=OPSET
// RUN: not loomc export %t/model.mlir 2>&1 | FileCheck %s --check-prefix=NOOUT
// RUN: not loomc export %t/missing.mlir -o %t/x.onnx 2>&1 | FileCheck %s --check-prefix=MISSING

//--- model.mlir
func.func @forward(%w: tensor<4x8xf32> {graph.param = "fc.weight"},
                   %x: tensor<?x4xf32> {graph.input = "x", graph.dim_names = ["batch", ""]},
                   %m: tensor<?x8xi1> {graph.input = "mask", graph.dim_names = ["batch", ""]})
    -> (tensor<?x8xf32> {graph.output = "y"}, tensor<?x8xf32> {graph.output = "z"}) {
  %0 = graph.matmul %x, %w : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %1 = graph.gelu %0 : tensor<?x8xf32>
  %2 = graph.rsqrt %1 : tensor<?x8xf32>
  %3 = graph.fill_like %m, -1.0 : f32 : (tensor<?x8xi1>) -> tensor<?x8xf32>
  %4 = graph.where %m, %2, %3 : (tensor<?x8xi1>, tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %5 = graph.compare ne, %4, %3 : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xi1>
  %6 = graph.cast %5 to f32 : tensor<?x8xi1>
  %7 = graph.broadcast_to %6 [-1, 8] : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return %4, %7 : tensor<?x8xf32>, tensor<?x8xf32>
}

// The parameter is a graph input named after it; dim names survive.
// CHECK-LABEL: func.func @forward(%arg0: tensor<4x8xf32> {graph.input = "fc.weight"}, %arg1: tensor<?x4xf32> {graph.dim_names = ["batch", ""], graph.input = "x"}, %arg2: tensor<?x8xi1> {graph.dim_names = ["batch", ""], graph.input = "mask"}) -> (tensor<?x8xf32> {graph.output = "y"}, tensor<?x8xf32> {graph.output = "z"})
// CHECK: graph.matmul %arg1, %arg0
// gelu as 0.5 x (1 + erf(x / sqrt(2))).
// CHECK: graph.div
// CHECK: graph.erf
// rsqrt as Reciprocal(Sqrt), imported back as rsqrt.
// CHECK: graph.rsqrt
// fill_like as ConstantOfShape(Shape).
// CHECK: graph.fill_like %arg2, -1.000000e+00 : f32
// CHECK: graph.where
// ne as Not(Equal), imported back as ne.
// CHECK: graph.compare ne
// CHECK: graph.cast
// broadcast_to as Expand, where 1 keeps the operand's dim.
// CHECK: graph.broadcast_to %{{.*}} [-1, 8]
// CHECK: return

//--- scatter-max.mlir
func.func @forward(%d: tensor<3x3xf32> {graph.input = "d"}, %i: tensor<2x3xi64> {graph.input = "i"}, %u: tensor<2x3xf32> {graph.input = "u"}) -> (tensor<3x3xf32> {graph.output = "y"}) {
  %0 = graph.scatter_elements %d, %i, %u axis = 0 reduction = max : (tensor<3x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}
// OPSET: error: reduction 'max' of scatter_elements needs ONNX opset 18; the exporter writes opset 17
// NOOUT: error: export needs an output file (-o MODEL.onnx)
// MISSING: error: {{.*}}missing.mlir

//--- logic.mlir
// ONNX Runtime has no boolean Where: where on i1 goes out as And, Or and
// Not, which import back as where on i1 again.
func.func @logic(%a: tensor<2x3xi1> {graph.input = "a"}, %b: tensor<3xi1> {graph.input = "b"},
                 %c: tensor<2x3xi1> {graph.input = "c"})
    -> (tensor<2x3xi1> {graph.output = "and"}, tensor<2x3xi1> {graph.output = "or"},
        tensor<2x3xi1> {graph.output = "select"}) {
  %f = graph.constant dense<false> : tensor<i1>
  %t = graph.constant dense<true> : tensor<i1>
  %0 = graph.where %a, %b, %f : (tensor<2x3xi1>, tensor<3xi1>, tensor<i1>) -> tensor<2x3xi1>
  %1 = graph.where %a, %t, %b : (tensor<2x3xi1>, tensor<i1>, tensor<3xi1>) -> tensor<2x3xi1>
  %2 = graph.where %a, %b, %c : (tensor<2x3xi1>, tensor<3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  return %0, %1, %2 : tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>
}
// And(a, b):
// LOGIC: %[[F:.*]] = graph.constant dense<false> : tensor<i1>
// LOGIC-NEXT: %[[AND:.*]] = graph.where %arg0, %arg1, %[[F]]
// Or(a, b):
// LOGIC: %[[T:.*]] = graph.constant dense<true> : tensor<i1>
// LOGIC-NEXT: %[[OR:.*]] = graph.where %arg0, %[[T]], %arg1
// Or(And(a, b), And(Not(a), c)):
// LOGIC: %[[AB:.*]] = graph.where %arg0, %arg1, %{{.*}} : (tensor<2x3xi1>, tensor<3xi1>, tensor<i1>)
// LOGIC: %[[NA:.*]] = graph.compare eq, %arg0, %{{.*}} : (tensor<2x3xi1>, tensor<i1>)
// LOGIC: %[[NAC:.*]] = graph.where %[[NA]], %arg2, %{{.*}} : (tensor<2x3xi1>, tensor<2x3xi1>, tensor<i1>)
// LOGIC: %[[SEL:.*]] = graph.where %[[AB]], %{{.*}}, %[[NAC]]
// LOGIC: return %[[AND]], %[[OR]], %[[SEL]]

//--- nonzero.mlir
// graph.nonzero goes out as ONNX NonZero ([rank, count]) and a Transpose;
// NonZero imports back as graph.nonzero and the transpose.
func.func @nonzero(%x: tensor<2x3xi1> {graph.input = "x"})
    -> (tensor<?x2xi64> {graph.output = "y"}) {
  %0 = graph.nonzero %x : (tensor<2x3xi1>) -> tensor<?x2xi64>
  return %0 : tensor<?x2xi64>
}
// NONZERO: %[[NZ:.*]] = graph.nonzero %arg0 : (tensor<2x3xi1>) -> tensor<?x2xi64>
// NONZERO: %[[T:.*]] = graph.transpose %[[NZ]] [1, 0] : (tensor<?x2xi64>) -> tensor<2x?xi64>
// NONZERO: graph.transpose %[[T]] [1, 0] : (tensor<2x?xi64>) -> tensor<?x2xi64>
