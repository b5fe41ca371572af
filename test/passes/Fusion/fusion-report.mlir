// RUN: loom-opt %s --loom-fusion="report=%t.json summary=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SUMMARY
// RUN: FileCheck %s < %t.json
// RUN: %python -c "import json; r = json.load(open('%t.json')); print(len(r['functions'][0]['regions']), 'regions')" | FileCheck %s --check-prefix=JSON

// --loom-fusion's report: each region (name, kind, ops with their source
// locations, here ONNX node names) and each producer -> consumer decision
// with its reason, as JSON (report=FILE) and for people (summary).

// SUMMARY: loom-fusion: @mlp: 2 regions
// SUMMARY-NEXT: fusion_0 (elementwise): graph.relu @relu_in
// SUMMARY-NEXT: fusion_1 (matmul): graph.matmul @fc graph.add @fc_bias graph.gelu @act
// SUMMARY-NEXT: not fused: graph.relu @relu_in -> graph.matmul @fc: matmul does not fuse its operands' producers (no prologue)

// JSON: 2 regions
// CHECK: "functions": [
// CHECK: "decisions": [
// CHECK: "consumer": {
// CHECK-NEXT: "loc": "fc",
// CHECK-NEXT: "op": "graph.matmul"
// CHECK-NEXT: },
// CHECK-NEXT: "fused": false,
// CHECK-NEXT: "producer": {
// CHECK-NEXT: "loc": "relu_in",
// CHECK-NEXT: "op": "graph.relu"
// CHECK-NEXT: },
// CHECK-NEXT: "reason": "matmul does not fuse its operands' producers (no prologue)"
// CHECK: "fused": true,
// CHECK: "reason": "epilogue"
// CHECK: "fused": true,
// CHECK: "reason": "elementwise chain"
// CHECK: "function": "mlp",
// CHECK-NEXT: "regions": [
// CHECK-NEXT: {
// CHECK-NEXT: "kind": "elementwise",
// CHECK-NEXT: "name": "fusion_0",
// CHECK-NEXT: "ops": [
// CHECK-NEXT: {
// CHECK-NEXT: "loc": "relu_in",
// CHECK-NEXT: "op": "graph.relu"
// CHECK: "kind": "matmul",
// CHECK-NEXT: "name": "fusion_1",
// CHECK-NEXT: "ops": [
// CHECK-NEXT: {
// CHECK-NEXT: "loc": "fc",
// CHECK-NEXT: "op": "graph.matmul"
// CHECK: "loc": "fc_bias",
// CHECK: "loc": "act",
func.func @mlp(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = graph.relu %x : tensor<4x8xf32> loc("relu_in")
  %1 = graph.matmul %0, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc("fc")
  %2 = graph.add %1, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32> loc("fc_bias")
  %3 = graph.gelu %2 : tensor<4x16xf32> loc("act")
  return %3 : tensor<4x16xf32>
}
