// RUN: loom-opt %s --split-input-file --loom-fuse-attention="summary=true" 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=SUMMARY < %t.err
// RUN: loom-opt %s --split-input-file --loom-fuse-attention="report=%t.json" -o /dev/null
// RUN: loom-opt %s --split-input-file --loom-fuse-attention="summary=true min-scores=4096" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SMALL
// RUN: %python -c "import json; r = json.load(open('%t.json')); print(len(r['fused']), 'fused', r['not_fused'][0]['reason'] if r['not_fused'] else '')" | FileCheck %s --check-prefix=JSON

// --loom-fuse-attention: softmax attention written op by op becomes one
// graph.attention. The scale is folded from the exporter's
// 1 / pow(cast(8), 0.5); a constant "key after query" mask (here written
// as compare eq false of a constant, as torch.onnx writes GPT-2's) with
// fill -inf becomes `causal`.

// CHECK-LABEL: func.func @causal
// CHECK-NOT: graph.softmax
// CHECK: %{{.*}}, %{{.*}} = graph.attention %arg0, %arg1, %arg2 {causal, fill = 0xFFF0000000000000 : f64, scale = 0.35355339059327373 : f64}
// CHECK-SAME: -> (tensor<2x4x16x8xf32>, tensor<2x4x16xf32>)
// SUMMARY: fused attention at graph.softmax @{{.*}}: 8 heads x 16 queries x 16 keys, head size 8, causal
// SMALL: attention at graph.softmax @{{.*}} not fused: 2048 scores, fewer than 4096: the unfused matmuls and softmax are faster at this size
func.func @causal(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>, %v: tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32> {
  %s = graph.matmul %q, %k {transpose_rhs} : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x16xf32>
  %eight = graph.constant dense<8> : tensor<i64>
  %f8 = graph.cast %eight to f32 : tensor<i64>
  %half = graph.constant dense<5.000000e-01> : tensor<f32>
  %root = graph.pow %f8, %half : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %scaled = graph.div %s, %root : (tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16x16xf32>
  %tril = graph.constant dense<"0x0100030007000F001F003F007F00FF00FF01FF03FF07FF0FFF1FFF3FFF7FFFFF"> : tensor<16x16xi1>
  %no = graph.constant dense<false> : tensor<i1>
  %after = graph.compare eq, %tril, %no : (tensor<16x16xi1>, tensor<i1>) -> tensor<16x16xi1>
  %ninf = graph.constant dense<0xFF800000> : tensor<f32>
  %masked = graph.where %after, %ninf, %scaled : (tensor<16x16xi1>, tensor<f32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %p = graph.softmax %masked {axis = 3 : i64} : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %o = graph.matmul %p, %v : (tensor<2x4x16x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32>
  return %o : tensor<2x4x16x8xf32>
}

// -----

// A mask computed at run time is an operand; `where(keep, s, fill)` keeps
// where true, so the pass negates it; k^T given as a transpose is read
// back as k.
// CHECK-LABEL: func.func @masked
// CHECK: %[[K:.*]] = graph.transpose %arg1 [0, 2, 1]
// CHECK: %[[NOT:.*]] = graph.where %arg3
// CHECK: graph.attention %arg0, %[[K]], %arg2 mask %[[NOT]] {fill = -1.000000e+04 : f64, scale = 1.000000e+00 : f64}
// SUMMARY: fused attention at graph.softmax @{{.*}}: 3 heads x 5 queries x 7 keys, head size 4, masked
func.func @masked(%q: tensor<3x5x4xf32>, %kt: tensor<3x4x7xf32>, %v: tensor<3x7x6xf32>, %keep: tensor<5x7xi1>) -> tensor<3x5x6xf32> {
  %s = graph.matmul %q, %kt : (tensor<3x5x4xf32>, tensor<3x4x7xf32>) -> tensor<3x5x7xf32>
  %fill = graph.constant dense<-1.0e4> : tensor<f32>
  %m = graph.where %keep, %s, %fill : (tensor<5x7xi1>, tensor<3x5x7xf32>, tensor<f32>) -> tensor<3x5x7xf32>
  %p = graph.softmax %m {axis = 2 : i64} : (tensor<3x5x7xf32>) -> tensor<3x5x7xf32>
  %o = graph.matmul %p, %v : (tensor<3x5x7xf32>, tensor<3x7x6xf32>) -> tensor<3x5x6xf32>
  return %o : tensor<3x5x6xf32>
}

// -----

// Left alone, with the reason: the probabilities are also returned.
// CHECK-LABEL: func.func @used_twice
// CHECK: graph.softmax
// CHECK-NOT: graph.attention
// SUMMARY: attention at graph.softmax @{{.*}} not fused: the probabilities have other users than one matmul
// JSON: 0 fused the probabilities have other users than one matmul
func.func @used_twice(%q: tensor<2x5x4xf32>, %k: tensor<2x5x4xf32>, %v: tensor<2x5x4xf32>) -> (tensor<2x5x4xf32>, tensor<2x5x5xf32>) {
  %s = graph.matmul %q, %k {transpose_rhs} : (tensor<2x5x4xf32>, tensor<2x5x4xf32>) -> tensor<2x5x5xf32>
  %p = graph.softmax %s {axis = 2 : i64} : (tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
  %o = graph.matmul %p, %v : (tensor<2x5x5xf32>, tensor<2x5x4xf32>) -> tensor<2x5x4xf32>
  return %o, %p : tensor<2x5x4xf32>, tensor<2x5x5xf32>
}
