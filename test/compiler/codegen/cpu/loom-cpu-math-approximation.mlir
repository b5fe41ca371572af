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

// f32 erf is one rational function on [-4, 4]: clamp, x * P(x^2) (7
// coefficients) over Q(x^2) (5), one divide and no piecewise selects.
// CHECK-LABEL: func.func @erf
// CHECK: %[[LO:.*]] = arith.maximumf %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK: %[[X:.*]] = arith.minimumf %[[LO]], %{{.*}} : vector<8xf32>
// CHECK: %[[X2:.*]] = arith.mulf %[[X]], %[[X]]
// CHECK-COUNT-6: math.fma %{{.*}}, %[[X2]], %{{.*}} : vector<8xf32>
// CHECK: %[[P:.*]] = arith.mulf %[[X]], %{{.*}}
// CHECK-COUNT-4: math.fma %{{.*}}, %[[X2]], %{{.*}} : vector<8xf32>
// CHECK: arith.divf %[[P]], %{{.*}} : vector<8xf32>
// CHECK-NOT: arith.select
// CHECK: return
func.func @erf(%x: vector<8xf32>) -> vector<8xf32> {
  %0 = math.erf %x : vector<8xf32>
  return %0 : vector<8xf32>
}
