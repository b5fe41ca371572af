// RUN: loom-opt %s --loom-recompute=strategy=none | FileCheck %s --check-prefix=NONE
// RUN: loom-opt %s --loom-recompute=strategy=all | FileCheck %s --check-prefix=ALL
// RUN: loom-opt %s --loom-recompute=strategy=sqrt | FileCheck %s --check-prefix=SQRT
// RUN: loom-opt %s --loom-recompute="strategy=optimal budget=512 summary report=%t.json" 2>%t.summary | FileCheck %s --check-prefix=OPT
// RUN: FileCheck %s --check-prefix=SUMMARY < %t.summary
// RUN: FileCheck %s --check-prefix=JSON < %t.json

// Three tanh layers and a hand-written backward (loss = sum(tanh(...))).
// The backward reads a1, a2 and a3 (saved values); x is an argument.
// Buffers are 128 bytes: without recomputation the plan peaks at 640 (a
// matmul fused with its tanh writes its product into a buffer of its own
// first, which lives while the region runs).

// NONE-LABEL: func.func @step
// NONE-NOT: loom.recompute

// all: every backward op recomputes what it reads from the arguments.
// ALL-LABEL: func.func @step
// ALL: %[[LOSS:.*]] = graph.reduce_sum
// ALL: %[[H1:.*]] = graph.matmul %arg0, %arg1 {loom.recompute}
// ALL: %[[A1:.*]] = graph.tanh %[[H1]] {loom.recompute}
// ALL: %[[H2:.*]] = graph.matmul %[[A1]], %arg2 {loom.recompute}
// ALL: %[[A2:.*]] = graph.tanh %[[H2]] {loom.recompute}
// ALL: %[[H3:.*]] = graph.matmul %[[A2]], %arg3 {loom.recompute}
// ALL: %[[A3:.*]] = graph.tanh %[[H3]] {loom.recompute}
// ALL: graph.mul %[[A3]], %[[A3]]
// The next backward ops recompute their a's again, from x each time.
// ALL-COUNT-4: graph.matmul %arg0, %arg1 {loom.recompute}
// The last one reads only x and the gradient: nothing recomputed.
// ALL: graph.matmul %arg0, %{{.*}} {transpose_lhs}
// ALL-NEXT: return

// sqrt: of the 6 cut values (h1 a1 h2 a2 h3 a3) every 3rd is kept: h2 and
// a3. a2 = tanh(h2) is cheap: recomputed before each use. a1 needs h1, a
// matmul: recomputed once, before the first backward op that reads it.
// SQRT-LABEL: func.func @step
// SQRT: %[[H2:.*]] = graph.matmul %{{.*}}, %arg2 :
// SQRT: graph.reduce_sum
// SQRT: %[[A2:.*]] = graph.tanh %[[H2]] {loom.recompute}
// SQRT-NEXT: graph.matmul %[[A2]], %{{.*}} {transpose_lhs}
// SQRT: %[[A2B:.*]] = graph.tanh %[[H2]] {loom.recompute}
// SQRT-NEXT: graph.mul %[[A2B]], %[[A2B]]
// SQRT: %[[H1:.*]] = graph.matmul %arg0, %arg1 {loom.recompute}
// SQRT-NEXT: %[[A1:.*]] = graph.tanh %[[H1]] {loom.recompute}
// SQRT-NEXT: graph.matmul %[[A1]], %{{.*}} {transpose_lhs}
// SQRT: %[[A1B:.*]] = graph.tanh %[[H1]] {loom.recompute}
// SQRT-NEXT: graph.mul %[[A1B]], %[[A1B]]
// SQRT-NOT: loom.recompute

// optimal at sqrt's peak (512 bytes) keeps a2 too: only a1 is recomputed,
// fewer FLOPs than sqrt's.
// OPT-LABEL: func.func @step
// OPT: graph.reduce_sum
// OPT-NOT: loom.recompute
// OPT: %[[H1:.*]] = graph.matmul %arg0, %arg1 {loom.recompute}
// OPT-NEXT: %[[A1:.*]] = graph.tanh %[[H1]] {loom.recompute}
// OPT-NEXT: graph.matmul %[[A1]], %{{.*}} {transpose_lhs}
// OPT: graph.tanh %[[H1]] {loom.recompute}
// OPT-NOT: loom.recompute

// SUMMARY: loom-recompute: step, strategy optimal (chose {{.*}}), budget 512 bytes
// SUMMARY-NEXT: planned peak: 640 -> 512 bytes
// SUMMARY-NEXT: saved values: 3, recomputed 1
// SUMMARY-NEXT: extra FLOPs: 576 (forward: 1664), 3 ops cloned
// SUMMARY: recomputed saved,cut 128 B  tensor<4x8xf32>  graph.tanh
// SUMMARY-SAME: 576 FLOPs

// JSON-DAG: "planned_peak_before": 640
// JSON-DAG: "planned_peak_after": 512
// JSON-DAG: "extra_flops": 576
// JSON-DAG: "strategy": "optimal"
// JSON-DAG: "solve_ms":

func.func @step(%x: tensor<4x8xf32> {graph.input = "x"}, %w1: tensor<8x8xf32>, %w2: tensor<8x8xf32>, %w3: tensor<8x8xf32>) -> (tensor<f32> {graph.output = "loss"}, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) {
  %one = graph.constant dense<1.0> : tensor<4x8xf32>
  %h1 = graph.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %a1 = graph.tanh %h1 : tensor<4x8xf32>
  %h2 = graph.matmul %a1, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %a2 = graph.tanh %h2 : tensor<4x8xf32>
  %h3 = graph.matmul %a2, %w3 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %a3 = graph.tanh %h3 : tensor<4x8xf32>
  %loss = graph.reduce_sum %a3 axes = [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  %s3 = graph.mul %a3, %a3 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %d3 = graph.sub %one, %s3 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %g3 = graph.matmul %a2, %d3 {transpose_lhs} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %da2 = graph.matmul %d3, %w3 {transpose_rhs} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %s2 = graph.mul %a2, %a2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t2 = graph.sub %one, %s2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %d2 = graph.mul %da2, %t2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %g2 = graph.matmul %a1, %d2 {transpose_lhs} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %da1 = graph.matmul %d2, %w2 {transpose_rhs} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %s1 = graph.mul %a1, %a1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t1 = graph.sub %one, %s1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %d1 = graph.mul %da1, %t1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %g1 = graph.matmul %x, %d1 {transpose_lhs} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  return %loss, %g1, %g2, %g3 : tensor<f32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
}
