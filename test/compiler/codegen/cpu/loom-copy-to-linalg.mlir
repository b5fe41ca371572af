// Every memref.copy becomes a linalg.copy of the same buffers (a strided one
// too: upstream would lower it to a call of MLIR's runner utilities).
// RUN: loom-opt --loom-copy-to-linalg %s | FileCheck %s

// CHECK-LABEL: func.func @contiguous
// CHECK-SAME: (%[[A:.*]]: memref<4xf32>, %[[B:.*]]: memref<4xf32>)
// CHECK-NEXT: linalg.copy ins(%[[A]] : memref<4xf32>) outs(%[[B]] : memref<4xf32>)
// CHECK-NOT: memref.copy
func.func @contiguous(%a: memref<4xf32>, %b: memref<4xf32>) {
  memref.copy %a, %b : memref<4xf32> to memref<4xf32>
  return
}

// CHECK-LABEL: func.func @strided
// CHECK: linalg.copy ins(%{{.*}} : memref<2x2xf32, strided<[4, 1]>>) outs(%{{.*}} : memref<2x2xf32>)
// CHECK-NOT: memref.copy
func.func @strided(%a: memref<2x2xf32, strided<[4, 1]>>, %b: memref<2x2xf32>) {
  memref.copy %a, %b : memref<2x2xf32, strided<[4, 1]>> to memref<2x2xf32>
  return
}
