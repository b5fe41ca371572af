// RUN: loom-opt %s -split-input-file -verify-diagnostics

// One case per verifier rule of kernel.fusion (KernelDialect.cpp), named
// after the rule's tag.

// fusion_args: one block argument per operand.
func.func @fusion_args_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kernel.fusion' op has 1 operands but its body has 0 arguments}}
  %0 = kernel.fusion "f" elementwise (%x) : (tensor<4xf32>) -> tensor<4xf32> {
    %c = graph.constant dense<1.0> : tensor<4xf32>
    kernel.yield %c : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// fusion_args: each block argument has its operand's type.
func.func @fusion_args_type(%x: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{'kernel.fusion' op body argument #0 has type 'tensor<4xf16>' but operand #0 has type 'tensor<4xf32>'}}
  %0 = kernel.fusion "f" elementwise (%x) : (tensor<4xf32>) -> tensor<4xf16> {
  ^bb0(%a: tensor<4xf16>):
    %1 = graph.exp %a : tensor<4xf16>
    kernel.yield %1 : tensor<4xf16>
  }
  return %0 : tensor<4xf16>
}

// -----

// fusion_yield: the body yields one value per result.
func.func @fusion_yield_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kernel.fusion' op has 1 results but its body yields 2 values}}
  %0 = kernel.fusion "f" elementwise (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %1 = graph.exp %a : tensor<4xf32>
    kernel.yield %1, %1 : tensor<4xf32>, tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// fusion_yield: each yielded value has its result's type.
func.func @fusion_yield_type(%x: tensor<4xf32>) -> tensor<4xi1> {
  // expected-error @+1 {{'kernel.fusion' op result #0 has type 'tensor<4xi1>' but the body yields 'tensor<4xf32>'}}
  %0 = kernel.fusion "f" elementwise (%x) : (tensor<4xf32>) -> tensor<4xi1> {
  ^bb0(%a: tensor<4xf32>):
    %1 = graph.exp %a : tensor<4xf32>
    kernel.yield %1 : tensor<4xf32>
  }
  return %0 : tensor<4xi1>
}

// -----

// fusion_nonempty: a region computes something.
func.func @fusion_nonempty(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kernel.fusion' op body must hold at least one op before 'kernel.yield'}}
  %0 = kernel.fusion "f" elementwise (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    kernel.yield %a : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// fusion_pure: no op of the body has side effects.
func.func @fusion_pure(%x: tensor<4xf32>, %m: memref<4xf32>) -> tensor<4xf32> {
  %0 = kernel.fusion "f" elementwise (%x, %m) : (tensor<4xf32>, memref<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>, %b: memref<4xf32>):
    // expected-error @+1 {{'bufferization.materialize_in_destination' op has side effects and cannot be in a 'kernel.fusion' body}}
    bufferization.materialize_in_destination %a in writable %b : (tensor<4xf32>, memref<4xf32>) -> ()
    kernel.yield %a : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// fusion_isolated: the body sees only its arguments.
func.func @fusion_isolated(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-note @+1 {{required by region isolation constraints}}
  %0 = kernel.fusion "f" elementwise () : () -> tensor<4xf32> {
    // expected-error @+1 {{using value defined outside the region}}
    %1 = graph.exp %x : tensor<4xf32>
    kernel.yield %1 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// yield_parent: kernel.yield ends a kernel.fusion only.
func.func @yield_parent(%x: tensor<4xf32>) {
  // expected-error @+1 {{'kernel.yield' op expects parent op 'kernel.fusion'}}
  kernel.yield %x : tensor<4xf32>
}

// -----

// ods_kind: the kind is one of the enum's cases.
func.func @ods_kind(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [elementwise, reduction, softmax, norm, matmul, other]}}
  %0 = kernel.fusion "f" fancy (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %1 = graph.exp %a : tensor<4xf32>
    kernel.yield %1 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}
