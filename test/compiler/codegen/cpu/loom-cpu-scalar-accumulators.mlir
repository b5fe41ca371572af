// RUN: loom-opt --loom-cpu-scalar-accumulators --split-input-file %s | FileCheck %s

// A full reduction into a rank-0 buffer (here a view of the arena, like
// the gradient norm of a training step) accumulates in an alloca at the top
// of the function: its value copied in before, out after.
// CHECK-LABEL: func.func @sum_squares
// CHECK-NEXT: %[[ACC:.*]] = memref.alloca() : memref<f32>
// CHECK: %[[OUT:.*]] = memref.view
// CHECK: %[[IN:.*]] = memref.load %[[OUT]][] : memref<f32>
// CHECK-NEXT: memref.store %[[IN]], %[[ACC]][] : memref<f32>
// CHECK-NEXT: linalg.generic
// CHECK-SAME: outs(%[[ACC]] : memref<f32>)
// CHECK: %[[SUM:.*]] = memref.load %[[ACC]][] : memref<f32>
// CHECK-NEXT: memref.store %[[SUM]], %[[OUT]][] : memref<f32>
// CHECK-NEXT: return
func.func @sum_squares(%x: memref<1024x784xf32>, %arena: memref<?xi8>) {
  %c0 = arith.constant 0 : index
  %out = memref.view %arena[%c0][] : memref<?xi8> to memref<f32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                   affine_map<(d0, d1) -> ()>],
                  iterator_types = ["reduction", "reduction"]}
      ins(%x : memref<1024x784xf32>) outs(%out : memref<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %m = arith.mulf %v, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A row reduction (a rank-1 output) and a rank-0 elementwise op are left
// as they are.
// CHECK-LABEL: func.func @others
// CHECK-NOT: memref.alloca
func.func @others(%x: memref<4x8xf32>, %rows: memref<4xf32>, %s: memref<f32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                   affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x8xf32>) outs(%rows : memref<4xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %acc, %v : f32
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [affine_map<() -> ()>],
                  iterator_types = []} outs(%s : memref<f32>) {
  ^bb0(%acc: f32):
    %r = math.sqrt %acc : f32
    linalg.yield %r : f32
  }
  return
}
