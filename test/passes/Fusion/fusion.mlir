// RUN: loom-opt %s --loom-fusion | FileCheck %s
// RUN: loom-opt %s --loom-fusion=max-ops=2 | FileCheck %s --check-prefix=MAXOPS

// One function per fusion rule of --loom-fusion (passes/Fusion/Fusion.cpp),
// the must-not-fuse cases included.

// An elementwise chain whose producers each have one user is one region.
// CHECK-LABEL: func.func @elementwise_chain
// With max-ops=2 the chain splits after two ops.
// MAXOPS-LABEL: func.func @elementwise_chain
// MAXOPS: %[[R:.*]] = kernel.fusion "fusion_0" elementwise
// MAXOPS-NEXT: ^bb0
// MAXOPS-NEXT: graph.exp
// MAXOPS-NEXT: graph.add
// MAXOPS-NEXT: kernel.yield
// MAXOPS: kernel.fusion "fusion_1" elementwise(%[[R]])
// MAXOPS-NEXT: ^bb0
// MAXOPS-NEXT: graph.neg
// CHECK: %[[R:.*]] = kernel.fusion "fusion_0" elementwise(%{{.*}}, %{{.*}})
// CHECK-NEXT: ^bb0
// CHECK-NEXT: graph.exp
// CHECK-NEXT: graph.add
// CHECK-NEXT: graph.neg
// CHECK-NEXT: kernel.yield
// CHECK-NOT: kernel.fusion
// CHECK: return %[[R]]
func.func @elementwise_chain(%x: tensor<4x8xf32>, %y: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = graph.exp %x : tensor<4x8xf32>
  %1 = graph.add %0, %y : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = graph.neg %1 : tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// A producer whose users are all in one region fuses into it (GELU-like:
// x feeds two muls of one chain).
// CHECK-LABEL: func.func @users_in_one_region
// CHECK: kernel.fusion "fusion_0" elementwise
// CHECK-NEXT: ^bb0
// CHECK-NEXT: graph.exp
// CHECK-NEXT: graph.tanh
// CHECK-NEXT: graph.mul
// CHECK-NOT: kernel.fusion
func.func @users_in_one_region(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = graph.exp %x : tensor<8xf32>
  %1 = graph.tanh %0 : tensor<8xf32>
  %2 = graph.mul %0, %1 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %2 : tensor<8xf32>
}

// Must not fuse: a producer with users in two regions is computed once.
// CHECK-LABEL: func.func @producer_two_regions
// CHECK: %[[E:.*]] = kernel.fusion "fusion_0" elementwise
// CHECK: graph.exp
// CHECK: kernel.fusion "fusion_1" elementwise(%[[E]])
// CHECK: graph.neg
// CHECK: kernel.fusion "fusion_2" reduction(%[[E]])
// CHECK: graph.reduce_max
func.func @producer_two_regions(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>) {
  %0 = graph.exp %x : tensor<4x8xf32>
  %1 = graph.neg %0 : tensor<4x8xf32>
  %2 = graph.reduce_max %0 axes = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
  return %1, %2 : tensor<4x8xf32>, tensor<4xf32>
}

// A reduction takes its elementwise producers (prologue) and an
// elementwise user of its result (epilogue).
// CHECK-LABEL: func.func @reduction_prologue_epilogue
// CHECK: kernel.fusion "fusion_0" reduction
// CHECK-NEXT: ^bb0
// CHECK-NEXT: graph.mul
// CHECK-NEXT: graph.reduce_sum
// CHECK-NEXT: graph.sqrt
// CHECK-NOT: kernel.fusion
func.func @reduction_prologue_epilogue(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = graph.mul %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = graph.reduce_sum %0 axes = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
  %2 = graph.sqrt %1 : tensor<4xf32>
  return %2 : tensor<4xf32>
}

// matmul + bias + relu: a contraction with its elementwise epilogue.
// CHECK-LABEL: func.func @matmul_epilogue
// CHECK: kernel.fusion "fusion_0" matmul
// CHECK-NEXT: ^bb0
// CHECK-NEXT: graph.matmul
// CHECK-NEXT: graph.add
// CHECK-NEXT: graph.relu
// CHECK-NOT: kernel.fusion
func.func @matmul_epilogue(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = graph.add %0, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %2 = graph.relu %1 : tensor<4x16xf32>
  return %2 : tensor<4x16xf32>
}

// Must not fuse: nothing fuses into a matmul's operands (no prologue).
// CHECK-LABEL: func.func @matmul_no_prologue
// CHECK: %[[R:.*]] = kernel.fusion "fusion_0" elementwise
// CHECK: graph.relu
// CHECK: kernel.fusion "fusion_1" matmul(%[[R]], %{{.*}})
// CHECK-NEXT: ^bb0
// CHECK-NEXT: graph.matmul
// CHECK-NEXT: kernel.yield
func.func @matmul_no_prologue(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %0 = graph.relu %x : tensor<4x8xf32>
  %1 = graph.matmul %0, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}

// Must not fuse: a matmul is not a reduction's prologue.
// CHECK-LABEL: func.func @matmul_into_reduction
// CHECK: %[[M:.*]] = kernel.fusion "fusion_0" matmul
// CHECK: kernel.fusion "fusion_1" reduction(%[[M]])
func.func @matmul_into_reduction(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4xf32> {
  %0 = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = graph.reduce_sum %0 axes = [1] : (tensor<4x16xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// Must not fuse: a region holds one root; the second reduction stays apart.
// CHECK-LABEL: func.func @two_roots
// CHECK: %[[MAX:.*]] = kernel.fusion "fusion_1" reduction
// CHECK-NEXT: ^bb0
// CHECK-NEXT: graph.reduce_max
// CHECK-NEXT: kernel.yield
// CHECK: kernel.fusion "fusion_0" reduction(%{{.*}}, %[[MAX]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT: graph.reduce_sum
// CHECK-NEXT: graph.sub
func.func @two_roots(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = graph.reduce_sum %x axes = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
  %1 = graph.reduce_max %x axes = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
  %2 = graph.sub %0, %1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}

// Softmax and layer norm take a prologue and an epilogue.
// CHECK-LABEL: func.func @softmax_norm
// CHECK: kernel.fusion "fusion_0" softmax
// CHECK-NEXT: ^bb0
// CHECK-NEXT: graph.constant dense<1.250000e-01>
// CHECK-NEXT: graph.mul
// CHECK-NEXT: graph.softmax
// CHECK-NEXT: kernel.yield
// CHECK: kernel.fusion "fusion_1" norm
// CHECK-NEXT: ^bb0
// CHECK-NEXT: graph.layer_norm
// CHECK-NEXT: graph.relu
// CHECK-NEXT: kernel.yield
func.func @softmax_norm(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  %c = graph.constant dense<0.125> : tensor<f32>
  %0 = graph.mul %x, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = graph.softmax %0 {axis = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = graph.layer_norm %1, %g {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %3 = graph.relu %2 : tensor<4x8xf32>
  return %3 : tensor<4x8xf32>
}

// Must not fuse: an op of kind other (a transpose) is a region of its own,
// and elementwise producers do not fuse into it. exp also feeds the add
// through the transpose, outside the add's region: fusing exp and add would
// make a cycle between regions.
// CHECK-LABEL: func.func @other_alone
// CHECK: %[[E:.*]] = kernel.fusion "fusion_0" elementwise
// CHECK: %[[T1:.*]] = kernel.fusion "fusion_1" other(%[[E]])
// CHECK: %[[T2:.*]] = kernel.fusion "fusion_2" other(%[[T1]])
// CHECK: %[[A:.*]] = kernel.fusion "fusion_3" elementwise(%[[E]], %[[T2]])
// CHECK: kernel.fusion "fusion_4" other(%[[A]])
func.func @other_alone(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %0 = graph.exp %x : tensor<4x8xf32>
  %1 = graph.transpose %0 [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %2 = graph.transpose %1 [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %3 = graph.add %0, %2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = graph.transpose %3 [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return %4 : tensor<8x4xf32>
}

// Small constants (< 1 KiB, or splats) are cloned into each region that
// uses them; a large one stays outside and is passed in. A value that is
// also a function result (%1) fuses all the same: its region yields it.
// CHECK-LABEL: func.func @constants
// CHECK-SAME: (%[[X:.*]]: tensor<300xf32>)
// CHECK: %[[BIG:.*]] = graph.constant dense<"0x
// CHECK-NOT: graph.constant
// CHECK: %[[R:.*]]:2 = kernel.fusion "fusion_0" reduction(%[[X]], %[[BIG]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT: graph.constant dense<2.000000e+00> : tensor<f32>
// CHECK: kernel.yield %{{.*}}, %{{.*}} : tensor<300xf32>, tensor<300xf32>
// CHECK: return %[[R]]#1, %[[R]]#0
func.func @constants(%x: tensor<300xf32>) -> (tensor<300xf32>, tensor<300xf32>) {
  %s = graph.constant dense<2.0> : tensor<f32>
  %big = graph.constant dense<"0x000000000000803F0000004000004040000080400000A0400000C0400000E0400000004100001041000020410000304100004041000050410000604100007041000080410000884100009041000098410000A0410000A8410000B0410000B8410000C0410000C8410000D0410000D8410000E0410000E8410000F0410000F84100000042000004420000084200000C4200001042000014420000184200001C4200002042000024420000284200002C4200003042000034420000384200003C4200004042000044420000484200004C4200005042000054420000584200005C4200006042000064420000684200006C4200007042000074420000784200007C42000080420000824200008442000086420000884200008A4200008C4200008E42000090420000924200009442000096420000984200009A4200009C4200009E420000A0420000A2420000A4420000A6420000A8420000AA420000AC420000AE420000B0420000B2420000B4420000B6420000B8420000BA420000BC420000BE420000C0420000C2420000C4420000C6420000C8420000CA420000CC420000CE420000D0420000D2420000D4420000D6420000D8420000DA420000DC420000DE420000E0420000E2420000E4420000E6420000E8420000EA420000EC420000EE420000F0420000F2420000F4420000F6420000F8420000FA420000FC420000FE420000004300000143000002430000034300000443000005430000064300000743000008430000094300000A4300000B4300000C4300000D4300000E4300000F430000104300001143000012430000134300001443000015430000164300001743000018430000194300001A4300001B4300001C4300001D4300001E4300001F430000204300002143000022430000234300002443000025430000264300002743000028430000294300002A4300002B4300002C4300002D4300002E4300002F430000304300003143000032430000334300003443000035430000364300003743000038430000394300003A4300003B4300003C4300003D4300003E4300003F430000404300004143000042430000434300004443000045430000464300004743000048430000494300004A4300004B4300004C4300004D4300004E4300004F430000504300005143000052430000534300005443000055430000564300005743000058430000594300005A4300005B4300005C4300005D4300005E4300005F430000604300006143000062430000634300006443000065430000664300006743000068430000694300006A4300006B4300006C4300006D4300006E4300006F430000704300007143000072430000734300007443000075430000764300007743000078430000794300007A4300007B4300007C4300007D4300007E4300007F43000080430080804300008143008081430000824300808243000083430080834300008443008084430000854300808543000086430080864300008743008087430000884300808843000089430080894300008A4300808A4300008B4300808B4300008C4300808C4300008D4300808D4300008E4300808E4300008F4300808F43000090430080904300009143008091430000924300809243000093430080934300009443008094430000954300809543"> : tensor<300xf32>
  %0 = graph.mul %x, %s : (tensor<300xf32>, tensor<f32>) -> tensor<300xf32>
  %1 = graph.add %0, %big : (tensor<300xf32>, tensor<300xf32>) -> tensor<300xf32>
  %2 = graph.reduce_max %1 axes = [0] keepdims : (tensor<300xf32>) -> tensor<1xf32>
  %3 = graph.sub %1, %2 : (tensor<300xf32>, tensor<1xf32>) -> tensor<300xf32>
  %4 = graph.mul %3, %s : (tensor<300xf32>, tensor<f32>) -> tensor<300xf32>
  return %4, %1 : tensor<300xf32>, tensor<300xf32>
}

// Multi-tensor: the per-parameter updates of a training step (ops located
// at "optimizer/<param>" by --loom-optimizer) are one region for all
// parameters, however their shapes differ.
// CHECK-LABEL: func.func @optimizer_update
// CHECK: kernel.fusion "fusion_{{[0-9]+}}" elementwise
// CHECK-COUNT-2: graph.sub
// CHECK: kernel.yield
// CHECK-NOT: kernel.fusion
// CHECK: return
func.func @optimizer_update(%w: tensor<4x8xf32>, %gw: tensor<4x8xf32>,
                            %b: tensor<8xf32>, %gb: tensor<8xf32>,
                            %lr: tensor<f32>) -> (tensor<4x8xf32>, tensor<8xf32>) {
  %0 = graph.mul %gw, %lr : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32> loc("optimizer/w")
  %1 = graph.sub %w, %0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("optimizer/w")
  %2 = graph.mul %gb, %lr : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32> loc("optimizer/b")
  %3 = graph.sub %b, %2 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32> loc("optimizer/b")
  return %1, %3 : tensor<4x8xf32>, tensor<8xf32>
}
