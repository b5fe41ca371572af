// RUN: loom-opt --loom-cpu-expand-float-casts %s | FileCheck %s
// RUN: loom-opt --loom-cpu-expand-float-casts=soft-f16 %s | FileCheck %s --check-prefix=SOFT

// bf16 <-> f32 becomes bit arithmetic (round to nearest even, NaN kept);
// f64 -> bf16 goes through f32 rounded to odd; f16 <-> f32 is left to LLVM
// (F16C) unless soft-f16.
// CHECK-LABEL: func.func @bf16
// CHECK-NOT: arith.truncf {{.*}} to bf16
// CHECK-NOT: arith.extf {{.*}} bf16 to
// CHECK: return
func.func @bf16(%x: f32, %d: f64, %b: bf16) -> (bf16, bf16, f32, f64) {
  %0 = arith.truncf %x : f32 to bf16
  %1 = arith.truncf %d : f64 to bf16
  %2 = arith.extf %b : bf16 to f32
  %3 = arith.extf %b : bf16 to f64
  return %0, %1, %2, %3 : bf16, bf16, f32, f64
}

// CHECK-LABEL: func.func @f16
// CHECK: %[[ODD:.*]] = arith.bitcast %{{.*}} : i32 to f32
// CHECK: arith.truncf %[[ODD]] : f32 to f16
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: arith.extf %{{.*}} : f16 to f32
// SOFT-LABEL: func.func @f16
// SOFT-NOT: arith.truncf {{.*}} to f16
// SOFT-NOT: arith.extf {{.*}} f16 to
// SOFT: return
func.func @f16(%x: f32, %d: f64, %h: f16) -> (f16, f16, f32) {
  %0 = arith.truncf %d : f64 to f16
  %1 = arith.truncf %x : f32 to f16
  %2 = arith.extf %h : f16 to f32
  return %0, %1, %2 : f16, f16, f32
}

// Integers convert through f64 (i32: exact) or f32 (i8); 16-bit floats to
// integers through f32; arithmetic left on bf16 is done in f32.
// CHECK-LABEL: func.func @other
// CHECK: arith.sitofp %{{.*}} : i32 to f64
// CHECK: arith.sitofp %{{.*}} : i8 to f32
// CHECK: arith.fptosi %{{.*}} : f32 to i32
// CHECK: arith.addf %{{.*}} : f32
// CHECK-NOT: bf16 to
// CHECK: return
func.func @other(%i: i32, %j: i8, %b: bf16) -> (bf16, bf16, i32, bf16) {
  %0 = arith.sitofp %i : i32 to bf16
  %1 = arith.sitofp %j : i8 to bf16
  %2 = arith.fptosi %b : bf16 to i32
  %3 = arith.addf %b, %b : bf16
  return %0, %1, %2, %3 : bf16, bf16, i32, bf16
}
