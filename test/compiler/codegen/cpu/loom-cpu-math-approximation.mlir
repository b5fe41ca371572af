// RUN: loom-opt --loom-cpu-math-approximation %s | FileCheck %s

// tanh, exp and erf become inline polynomials (no libm call later); sqrt,
// which has an LLVM intrinsic, stays.
// CHECK-LABEL: func.func @f
// CHECK-NOT: math.tanh
// CHECK-NOT: math.exp
// CHECK-NOT: math.erf
// CHECK: math.sqrt
func.func @f(%x: f32) -> (f32, f32, f32, f32) {
  %0 = math.tanh %x : f32
  %1 = math.exp %x : f32
  %2 = math.erf %x : f32
  %3 = math.sqrt %x : f32
  return %0, %1, %2, %3 : f32, f32, f32, f32
}
