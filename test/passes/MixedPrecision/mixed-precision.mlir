// --loom-mixed-precision: the three policies on one model, f16, and the
// cast clean-ups (one cast per value and type, no round trips, casts moved
// to the side of a data movement op with fewer elements).
// RUN: loom-opt %s --loom-mixed-precision | FileCheck %s --check-prefix=DEFAULT
// RUN: loom-opt %s --loom-mixed-precision | grep -c graph.cast | FileCheck %s --check-prefix=COUNT
// RUN: loom-opt %s --loom-mixed-precision=policy=conservative | FileCheck %s --check-prefix=CONS
// RUN: loom-opt %s --loom-mixed-precision=policy=aggressive | FileCheck %s --check-prefix=AGGR
// RUN: loom-opt %s --loom-mixed-precision="dtype=f16 summary report=%t.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SUMMARY
// RUN: FileCheck %s --check-prefix=JSON < %t.json
// RUN: not loom-opt %s --loom-mixed-precision=dtype=f8 2>&1 | FileCheck %s --check-prefix=BAD-DTYPE
// RUN: not loom-opt %s --loom-mixed-precision=policy=wild 2>&1 | FileCheck %s --check-prefix=BAD-POLICY

func.func @mlp(%x: tensor<4x16xf32> {graph.input = "x"}, %labels: tensor<4xi64> {graph.input = "labels"},
               %w1: tensor<32x16xf32> {graph.param = "w1"}, %b1: tensor<32xf32> {graph.param = "b1"},
               %g: tensor<32xf32> {graph.param = "g"},
               %w2: tensor<10x32xf32> {graph.param = "w2"}, %b2: tensor<10xf32> {graph.param = "b2"})
    -> (tensor<f32> {graph.output = "loss"}) {
  %0 = graph.matmul %x, %w1 {transpose_rhs} : (tensor<4x16xf32>, tensor<32x16xf32>) -> tensor<4x32xf32>
  %1 = graph.add %0, %b1 : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %2 = graph.gelu %1 : tensor<4x32xf32>
  %n = graph.layer_norm %2, %g, %b1 {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<4x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %r = graph.add %n, %2 : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %t = graph.transpose %w2 [1, 0] : (tensor<10x32xf32>) -> tensor<32x10xf32>
  %3 = graph.matmul %r, %t : (tensor<4x32xf32>, tensor<32x10xf32>) -> tensor<4x10xf32>
  %4 = graph.add %3, %b2 : (tensor<4x10xf32>, tensor<10xf32>) -> tensor<4x10xf32>
  %5 = graph.cross_entropy %4, %labels reduction = mean : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return %5 : tensor<f32>
}

// Default: the matmuls in bf16, the bias adds and gelu follow them (the
// biases are parameters: cast to the activations' type), layer norm and the
// loss stay f32, the residual add has an f32 operand so it is f32. w2 is
// cast once, before its transpose (as many elements, next to the value).
// DEFAULT-LABEL: func.func @mlp
// DEFAULT-DAG: %[[W2:.*]] = graph.cast %arg5 to bf16 : tensor<10x32xf32>
// DEFAULT-DAG: %[[B2:.*]] = graph.cast %arg6 to bf16 : tensor<10xf32>
// DEFAULT-DAG: %[[B1:.*]] = graph.cast %arg3 to bf16 : tensor<32xf32>
// DEFAULT-DAG: %[[W1:.*]] = graph.cast %arg2 to bf16 : tensor<32x16xf32>
// DEFAULT-DAG: %[[X:.*]] = graph.cast %arg0 to bf16 : tensor<4x16xf32>
// DEFAULT: %[[M1:.*]] = graph.matmul %[[X]], %[[W1]] {transpose_rhs} : (tensor<4x16xbf16>, tensor<32x16xbf16>) -> tensor<4x32xbf16>
// DEFAULT-NEXT: %[[A1:.*]] = graph.add %[[M1]], %[[B1]] : (tensor<4x32xbf16>, tensor<32xbf16>) -> tensor<4x32xbf16>
// DEFAULT-NEXT: %[[G:.*]] = graph.gelu %[[A1]] : tensor<4x32xbf16>
// DEFAULT-NEXT: %[[G32:.*]] = graph.cast %[[G]] to f32 : tensor<4x32xbf16>
// DEFAULT-NEXT: %[[N:.*]] = graph.layer_norm %[[G32]], %arg4, %arg3 {{.*}} -> tensor<4x32xf32>
// DEFAULT-NEXT: %[[R:.*]] = graph.add %[[N]], %[[G32]] : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
// DEFAULT-NEXT: %[[R16:.*]] = graph.cast %[[R]] to bf16
// DEFAULT-NEXT: %[[T:.*]] = graph.transpose %[[W2]] [1, 0] : (tensor<10x32xbf16>) -> tensor<32x10xbf16>
// DEFAULT-NEXT: %[[M2:.*]] = graph.matmul %[[R16]], %[[T]]
// DEFAULT-NEXT: %[[A2:.*]] = graph.add %[[M2]], %[[B2]] : (tensor<4x10xbf16>, tensor<10xbf16>) -> tensor<4x10xbf16>
// DEFAULT-NEXT: %[[L:.*]] = graph.cast %[[A2]] to f32
// DEFAULT-NEXT: %[[CE:.*]] = graph.cross_entropy %[[L]], %arg1 {{.*}} (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
// DEFAULT-NEXT: return %[[CE]] : tensor<f32>
// COUNT: 8

// Conservative: only the matmuls; their results go back to f32 at once.
// CONS-LABEL: func.func @mlp
// CONS: %[[M1:.*]] = graph.matmul {{.*}} -> tensor<4x32xbf16>
// CONS-NEXT: %[[M132:.*]] = graph.cast %[[M1]] to f32
// CONS-NEXT: graph.add %[[M132]], %arg3 : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
// CONS-NEXT: graph.gelu %{{.*}} : tensor<4x32xf32>
// CONS: graph.matmul {{.*}} -> tensor<4x10xbf16>
// CONS-NEXT: graph.cast %{{.*}} to f32
// CONS-NEXT: graph.add %{{.*}}, %arg6 : (tensor<4x10xf32>, tensor<10xf32>) -> tensor<4x10xf32>

// Aggressive: the residual add goes to bf16 too (one bf16 operand is
// enough), so the layer norm's result is cast down instead.
// AGGR-LABEL: func.func @mlp
// AGGR: %[[G:.*]] = graph.gelu %{{.*}} : tensor<4x32xbf16>
// AGGR-NEXT: %[[G32:.*]] = graph.cast %[[G]] to f32
// AGGR-NEXT: %[[N:.*]] = graph.layer_norm %[[G32]]
// AGGR-NEXT: %[[N16:.*]] = graph.cast %[[N]] to bf16
// AGGR-NEXT: graph.add %[[N16]], %[[G]] : (tensor<4x32xbf16>, tensor<4x32xbf16>) -> tensor<4x32xbf16>

// SUMMARY: mixed precision of 'mlp' (f16, default policy): 5 ops in f16 (2 matmul/conv, 3 following them), 3 in f32; 8 casts (4 of parameters and constants, once per step), 9 inserted and 1 removed
// SUMMARY: parameter w2 f32 -> f16: operand of graph.matmul @{{.*}}mixed-precision.mlir:{{[0-9]+}}:{{[0-9]+}} runs in f16 (matmul/conv rule); moved above graph.transpose
// SUMMARY: graph.gelu @{{.*}} f16 -> f32: operand of graph.layer_norm @{{.*}} stays f32 (softmax, normalization, reduction, exp/log, loss rule)
// SUMMARY: graph.add @{{.*}} f16 -> f32: operand of graph.cross_entropy

// JSON: "casts": [
// JSON: "elements": 320,
// JSON-NEXT: "from": "f32",
// JSON-NEXT: "reason": "operand of graph.matmul
// JSON-NEXT: "to": "f16",
// JSON-NEXT: "value": "parameter w2"
// JSON: "casts_inserted": 9,
// JSON-NEXT: "casts_removed": 1,
// JSON-NEXT: "dtype": "f16",
// JSON: "ops_f32": 3,
// JSON-NEXT: "ops_following_low": 3,
// JSON-NEXT: "ops_low": 2,
// JSON-NEXT: "policy": "default"

// BAD-DTYPE: error: loom-mixed-precision: dtype must be bf16 or f16, not 'f8'
// BAD-POLICY: error: loom-mixed-precision: unknown policy 'wild' (conservative, default, aggressive)
