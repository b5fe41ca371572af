// RUN: loom-opt --loom-cpu-widen-floats %s | FileCheck %s

// An op on bf16 computes in f32 between casts; a value it uses twice is
// cast once.
// CHECK-LABEL: func.func @elementwise
// CHECK-SAME: (%[[X:.*]]: tensor<4xbf16>)
// CHECK: %[[W:.*]] = graph.cast %[[X]] to f32 : tensor<4xbf16>
// CHECK: %[[M:.*]] = graph.mul %[[W]], %[[W]] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK: %[[MB:.*]] = graph.cast %[[M]] to bf16 : tensor<4xf32>
// CHECK: %[[MW:.*]] = graph.cast %[[MB]] to f32 : tensor<4xbf16>
// CHECK: %[[T:.*]] = graph.tanh %[[MW]] : tensor<4xf32>
// CHECK: %[[TB:.*]] = graph.cast %[[T]] to bf16 : tensor<4xf32>
// CHECK: return %[[TB]]
func.func @elementwise(%x: tensor<4xbf16>) -> tensor<4xbf16> {
  %m = graph.mul %x, %x : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
  %t = graph.tanh %m : tensor<4xbf16>
  return %t : tensor<4xbf16>
}

// Matmul accumulates in f32; its result is rounded once, to f16.
// CHECK-LABEL: func.func @matmul
// CHECK-DAG: %[[A:.*]] = graph.cast %{{.*}} to f32 : tensor<2x8xf16>
// CHECK-DAG: %[[B:.*]] = graph.cast %{{.*}} to f32 : tensor<8x3xf16>
// CHECK: %[[M:.*]] = graph.matmul %[[A]], %[[B]] : (tensor<2x8xf32>, tensor<8x3xf32>) -> tensor<2x3xf32>
// CHECK: graph.cast %[[M]] to f16 : tensor<2x3xf32>
func.func @matmul(%a: tensor<2x8xf16>, %b: tensor<8x3xf16>) -> tensor<2x3xf16> {
  %m = graph.matmul %a, %b : (tensor<2x8xf16>, tensor<8x3xf16>) -> tensor<2x3xf16>
  return %m : tensor<2x3xf16>
}

// Mixed results keep their types: a compare gives i1, arg_max i64, with no
// cast back; a loss over bf16 logits and i64 labels widens the logits only.
// Each user casts for itself, so that fusion can put the cast in its
// kernel.
// CHECK-LABEL: func.func @mixed
// CHECK-DAG: %[[X:.*]] = graph.cast %arg0 to f32 : tensor<4x8xbf16>
// CHECK-DAG: %[[Y:.*]] = graph.cast %arg1 to f32 : tensor<4x8xbf16>
// CHECK: %[[C:.*]] = graph.compare gt, %[[X]], %[[Y]] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
// CHECK: %[[X2:.*]] = graph.cast %arg0 to f32 : tensor<4x8xbf16>
// CHECK: %[[I:.*]] = graph.arg_max %[[X2]] axis = 1 : (tensor<4x8xf32>) -> tensor<4xi64>
// CHECK: %[[X3:.*]] = graph.cast %arg0 to f32 : tensor<4x8xbf16>
// CHECK: %[[L:.*]] = graph.cross_entropy %[[X3]], %{{.*}} reduction = mean : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
// CHECK: %[[LB:.*]] = graph.cast %[[L]] to bf16 : tensor<f32>
// CHECK: return %[[C]], %[[I]], %[[LB]]
func.func @mixed(%x: tensor<4x8xbf16>, %y: tensor<4x8xbf16>, %labels: tensor<4xi64>)
    -> (tensor<4x8xi1>, tensor<4xi64>, tensor<bf16>) {
  %c = graph.compare gt, %x, %y : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xi1>
  %i = graph.arg_max %x axis = 1 : (tensor<4x8xbf16>) -> tensor<4xi64>
  %l = graph.cross_entropy %x, %labels reduction = mean : (tensor<4x8xbf16>, tensor<4xi64>) -> tensor<bf16>
  return %c, %i, %l : tensor<4x8xi1>, tensor<4xi64>, tensor<bf16>
}

// Data movement, casts and constants stay in 16 bits.
// CHECK-LABEL: func.func @data_movement
// CHECK-NOT: to f32
// CHECK: graph.transpose %{{.*}} [1, 0] : (tensor<2x3xbf16>) -> tensor<3x2xbf16>
// CHECK: graph.concat {{.*}} -> tensor<6x2xbf16>
// CHECK: graph.where {{.*}} -> tensor<6x2xbf16>
// CHECK: graph.reshape {{.*}} -> tensor<12xbf16>
// CHECK: graph.cast %{{.*}} to f16 : tensor<12xbf16>
// CHECK-NOT: to f32
// CHECK: return
func.func @data_movement(%x: tensor<2x3xbf16>, %m: tensor<6x2xi1>) -> tensor<12xf16> {
  %c = graph.constant dense<1.5> : tensor<3x2xbf16>
  %t = graph.transpose %x [1, 0] : (tensor<2x3xbf16>) -> tensor<3x2xbf16>
  %j = graph.concat %t, %c axis = 0 : (tensor<3x2xbf16>, tensor<3x2xbf16>) -> tensor<6x2xbf16>
  %z = graph.fill_like %j, 0.0 : bf16 : (tensor<6x2xbf16>) -> tensor<6x2xbf16>
  %w = graph.where %m, %j, %z : (tensor<6x2xi1>, tensor<6x2xbf16>, tensor<6x2xbf16>) -> tensor<6x2xbf16>
  %r = graph.reshape %w [12] : (tensor<6x2xbf16>) -> tensor<12xbf16>
  %h = graph.cast %r to f16 : tensor<12xbf16>
  return %h : tensor<12xf16>
}

// A 16-bit element type in an attribute is widened too: an iota of bf16
// counts in f32.
// CHECK-LABEL: func.func @iota
// CHECK: %[[I:.*]] = graph.iota [300] axis = 0 : f32
// CHECK: graph.cast %[[I]] to bf16 : tensor<300xf32>
func.func @iota() -> tensor<300xbf16> {
  %i = graph.iota [300] axis = 0 : bf16
  return %i : tensor<300xbf16>
}

// f32, f64 and integer ops are left as they are.
// CHECK-LABEL: func.func @untouched
// CHECK-NEXT: graph.add
// CHECK-NEXT: graph.exp
// CHECK-NEXT: graph.mul
// CHECK-NEXT: return
func.func @untouched(%x: tensor<4xf32>, %d: tensor<4xf64>, %i: tensor<4xi32>)
    -> (tensor<4xf32>, tensor<4xf64>, tensor<4xi32>) {
  %a = graph.add %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %e = graph.exp %d : tensor<4xf64>
  %m = graph.mul %i, %i : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %a, %e, %m : tensor<4xf32>, tensor<4xf64>, tensor<4xi32>
}
