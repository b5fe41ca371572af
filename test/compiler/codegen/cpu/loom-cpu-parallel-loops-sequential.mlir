// A linalg.copy splits like any other parallel nest, and so does a gather:
// the table its body reads goes whole to every chunk, after the operands.
// A nest that does not split -- a reduction to a scalar, one that also
// reads a table -- moves whole into @loom_seq_N (its operands, then what
// its body captures that is not a constant) and is called directly, so the
// public function keeps only calls; constants are cloned into the body.
// RUN: loom-opt --loom-cpu-parallel-loops %s | FileCheck %s

#id = affine_map<(d0) -> (d0)>
#scalar = affine_map<(d0) -> ()>

// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[X:.*]]: memref<64xf32>, %[[Y:.*]]: memref<64xf32>, %[[S:.*]]: memref<f32>, %[[T:.*]]: memref<10xf32>, %[[I:.*]]: memref<64xindex>)
// CHECK-NOT: linalg.
// CHECK: call @loom_par_dispatch_0(%{{.*}}, %{{.*}}, %[[X]], %[[Y]])
// CHECK: call @loom_seq_0(%[[X]], %[[S]])
// CHECK: call @loom_par_dispatch_1(%{{.*}}, %{{.*}}, %[[I]], %[[Y]], %[[T]])
// CHECK: call @loom_seq_1(%[[I]], %[[S]], %[[T]])
// CHECK-NEXT: return
func.func @step(%x: memref<64xf32>, %y: memref<64xf32>, %s: memref<f32>,
                %table: memref<10xf32>, %idx: memref<64xindex>) {
  linalg.copy ins(%x : memref<64xf32>) outs(%y : memref<64xf32>)
  %two = arith.constant 2.0 : f32
  linalg.generic {indexing_maps = [#id, #scalar], iterator_types = ["reduction"]}
      ins(%x : memref<64xf32>) outs(%s : memref<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.mulf %a, %two : f32
    %r = arith.addf %m, %acc : f32
    linalg.yield %r : f32
  }
  // A gather: the table is read inside the body; it splits.
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%idx : memref<64xindex>) outs(%y : memref<64xf32>) {
  ^bb0(%i: index, %out: f32):
    %v = memref.load %table[%i] : memref<10xf32>
    linalg.yield %v : f32
  }
  // A sum of gathered values: a reduction to a scalar, with its table.
  linalg.generic {indexing_maps = [#id, #scalar], iterator_types = ["reduction"]}
      ins(%idx : memref<64xindex>) outs(%s : memref<f32>) {
  ^bb0(%i: index, %acc: f32):
    %v = memref.load %table[%i] : memref<10xf32>
    %r = arith.addf %v, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// CHECK-LABEL: func.func private @loom_par_1
// CHECK-SAME: (%[[LO:.*]]: index, %[[HI:.*]]: index, %[[PI:.*]]: memref<64xindex>, %[[PY:.*]]: memref<64xf32>, %[[PT:.*]]: memref<10xf32>)
// CHECK: %[[VI:.*]] = memref.subview %[[PI]][%[[LO]]]
// CHECK: %[[VY:.*]] = memref.subview %[[PY]][%[[LO]]]
// CHECK: linalg.generic {{.*}} ins(%[[VI]] : {{.*}}) outs(%[[VY]] : {{.*}})
// CHECK: memref.load %[[PT]][

// CHECK-LABEL: func.func private @loom_seq_0
// CHECK-SAME: (%[[A:.*]]: memref<64xf32>, %[[B:.*]]: memref<f32>)
// CHECK: %[[TWO:.*]] = arith.constant 2.000000e+00
// CHECK: linalg.generic {{.*}} ins(%[[A]] : memref<64xf32>) outs(%[[B]] : memref<f32>)
// CHECK: arith.mulf %{{.*}}, %[[TWO]]
// CHECK: return

// CHECK-LABEL: func.func private @loom_seq_1
// CHECK-SAME: (%[[IDX:.*]]: memref<64xindex>, %[[OUT:.*]]: memref<f32>, %[[TAB:.*]]: memref<10xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[IDX]] : memref<64xindex>) outs(%[[OUT]] : memref<f32>)
// CHECK: memref.load %[[TAB]][
