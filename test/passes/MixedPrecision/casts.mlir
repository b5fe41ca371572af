// --loom-mixed-precision's cast clean-ups, one function each.
// RUN: loom-opt %s --split-input-file --loom-mixed-precision | FileCheck %s
// RUN: loom-opt %s --split-input-file --loom-mixed-precision=policy=conservative | FileCheck %s --check-prefix=CONS

// A weight used by two matmuls is cast once; the first matmul's bf16 result
// feeds the second as it is; the result gets its f32 type back.
// CHECK-LABEL: func.func @shared
// CHECK-NEXT: %[[W:.*]] = graph.cast %arg1 to bf16 : tensor<8x8xf32>
// CHECK-NEXT: %[[X:.*]] = graph.cast %arg0 to bf16 : tensor<2x8xf32>
// CHECK-NEXT: %[[A:.*]] = graph.matmul %[[X]], %[[W]] : (tensor<2x8xbf16>, tensor<8x8xbf16>) -> tensor<2x8xbf16>
// CHECK-NEXT: %[[B:.*]] = graph.matmul %[[A]], %[[W]] : (tensor<2x8xbf16>, tensor<8x8xbf16>) -> tensor<2x8xbf16>
// CHECK-NEXT: %[[Y:.*]] = graph.cast %[[B]] to f32
// CHECK-NEXT: return %[[Y]] : tensor<2x8xf32>
func.func @shared(%x: tensor<2x8xf32> {graph.input = "x"}, %w: tensor<8x8xf32> {graph.param = "w"})
    -> (tensor<2x8xf32> {graph.output = "y"}) {
  %0 = graph.matmul %x, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %1 = graph.matmul %0, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  return %1 : tensor<2x8xf32>
}

// -----

// Conservative: the reshape between two matmuls would run in f32 between
// two casts; the cast down moves above the reshape and cancels the cast up,
// so no cast is left between the matmuls.
// CONS-LABEL: func.func @roundtrip
// CONS: %[[A:.*]] = graph.matmul {{.*}} -> tensor<2x8xbf16>
// CONS-NEXT: %[[R:.*]] = graph.reshape %[[A]] [4, 4] : (tensor<2x8xbf16>) -> tensor<4x4xbf16>
// CONS-NEXT: %[[B:.*]] = graph.matmul %[[R]], %{{.*}} : (tensor<4x4xbf16>, tensor<4x4xbf16>) -> tensor<4x4xbf16>
// CONS-NEXT: graph.cast %[[B]] to f32
// CONS-NEXT: return
func.func @roundtrip(%x: tensor<2x8xf32> {graph.input = "x"}, %w: tensor<8x8xf32> {graph.param = "w"},
                     %v: tensor<4x4xf32> {graph.param = "v"}) -> (tensor<4x4xf32> {graph.output = "y"}) {
  %0 = graph.matmul %x, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %1 = graph.reshape %0 [4, 4] : (tensor<2x8xf32>) -> tensor<4x4xf32>
  %2 = graph.matmul %1, %v : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %2 : tensor<4x4xf32>
}

// -----

// A broadcast bias is cast before the broadcast (8 elements, not 16); an
// embedding's rows are cast after the gather (the table is larger).
// CHECK-LABEL: func.func @sides
// CHECK: %[[B:.*]] = graph.cast %arg2 to bf16 : tensor<8xf32>
// CHECK: %[[E:.*]] = graph.gather %arg3, %arg4 {{.*}} -> tensor<2x8xf32>
// CHECK-NEXT: %[[E16:.*]] = graph.cast %[[E]] to bf16 : tensor<2x8xf32>
// CHECK-NEXT: graph.matmul %[[E16]]
// CHECK-NEXT: %[[BB:.*]] = graph.broadcast_to %[[B]] [2, 8] : (tensor<8xbf16>) -> tensor<2x8xbf16>
// CHECK-NEXT: graph.add %{{.*}}, %[[BB]] : (tensor<2x8xbf16>, tensor<2x8xbf16>) -> tensor<2x8xbf16>
func.func @sides(%x: tensor<2x8xf32> {graph.input = "x"}, %w: tensor<8x8xf32> {graph.param = "w"},
                 %b: tensor<8xf32> {graph.param = "b"}, %table: tensor<100x8xf32> {graph.param = "table"},
                 %ids: tensor<2xi64> {graph.input = "ids"}) -> (tensor<2x8xf32> {graph.output = "y"}) {
  %e = graph.gather %table, %ids axis = 0 : (tensor<100x8xf32>, tensor<2xi64>) -> tensor<2x8xf32>
  %0 = graph.matmul %e, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %bb = graph.broadcast_to %b [2, 8] : (tensor<8xf32>) -> tensor<2x8xf32>
  %1 = graph.add %0, %bb : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %1 : tensor<2x8xf32>
}

// -----

// The model's own cast to f64 takes the bf16 value as it is (exact); the
// f64 op is left alone.
// CHECK-LABEL: func.func @wide
// CHECK: %[[A:.*]] = graph.matmul {{.*}} -> tensor<2x2xbf16>
// CHECK-NEXT: %[[D:.*]] = graph.cast %[[A]] to f64 : tensor<2x2xbf16>
// CHECK-NEXT: graph.add %[[D]], %[[D]] : (tensor<2x2xf64>, tensor<2x2xf64>) -> tensor<2x2xf64>
func.func @wide(%x: tensor<2x2xf32> {graph.input = "x"}, %w: tensor<2x2xf32> {graph.param = "w"})
    -> (tensor<2x2xf64> {graph.output = "y"}) {
  %0 = graph.matmul %x, %w : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %1 = graph.cast %0 to f64 : tensor<2x2xf32>
  %2 = graph.add %1, %1 : (tensor<2x2xf64>, tensor<2x2xf64>) -> tensor<2x2xf64>
  return %2 : tensor<2x2xf64>
}
