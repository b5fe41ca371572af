//===- KernelOps.td - kernel dialect operations ------------*- tablegen -*-===//

#ifndef LOOM_DIALECTS_KERNEL_KERNELOPS_TD
#define LOOM_DIALECTS_KERNEL_KERNELOPS_TD

include "dialects/kernel/KernelBase.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Kernel_FusionOp : Kernel_Op<"fusion", [IsolatedFromAbove,
    RecursiveMemoryEffects, SingleBlock]> {
  let summary = "a fused region of ops, compiled as one kernel";
  let description = [{
    A region of ops that a backend compiles as one unit. The operands are
    the values the region reads; the entry block has one argument per
    operand, of the same type, and the body sees nothing else
    (`IsolatedFromAbove`). The region ends with `kernel.yield`, whose
    operands become the op's results. No op of the body touches memory, so
    a region may be moved or erased like the ops it holds.

    `name` names the region in reports and profiles; `kind` says what it
    computes: `elementwise` (a chain of elementwise ops), `reduction` (a
    reduction or pooling with its elementwise prologue and epilogue),
    `softmax`, `norm` (layer or batch norm), `matmul` (a contraction with
    an elementwise epilogue), or `other` (one op that fuses with nothing).

    The verifier checks that the block arguments match the operands in
    number and type (`fusion_args`), that `kernel.yield` matches the
    results (`fusion_yield`), that the body holds at least one op
    (`fusion_nonempty`) and that none touches memory (`fusion_pure`: no
    allocation, no read or write of a buffer, no undeclared effects; a
    run-time check such as `cf.assert`, which lowerings emit inside
    regions, is allowed). A
    body that folded away to its terminator canonicalizes to the operands
    it forwards.

    ```mlir
    // matmul + bias + relu as one region: the library call's epilogue.
    %y = kernel.fusion "fusion_0" matmul (%x, %w, %b)
        : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32> {
    ^bb0(%a: tensor<4x8xf32>, %bw: tensor<8x16xf32>, %bb: tensor<16xf32>):
      %0 = graph.matmul %a, %bw : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
      %1 = graph.add %0, %bb : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
      %2 = graph.relu %1 : tensor<4x16xf32>
      kernel.yield %2 : tensor<4x16xf32>
    }
    ```
  }];
  let arguments = (ins StrAttr:$name, Kernel_FusionKind:$kind,
                       Variadic<AnyType>:$inputs);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $name $kind `(` $inputs `)` attr-dict `:` functional-type($inputs, results)
    $body
  }];
  let hasVerifier = 1;
  // A body that folded away to its terminator forwards operands.
  let hasCanonicalizeMethod = 1;
  let extraClassDeclaration = [{
    /// The `kernel.yield` that ends the body.
    YieldOp getYield();
  }];
}

def Kernel_YieldOp : Kernel_Op<"yield", [Pure, ReturnLike, Terminator,
    HasParent<"FusionOp">]> {
  let summary = "the values a kernel.fusion region produces";
  let description = [{
    Ends a `kernel.fusion` body; its operands become the results of the
    enclosing `kernel.fusion`, in order and of the same types.

    ```mlir
    kernel.yield %0, %1 : tensor<4xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

#endif // LOOM_DIALECTS_KERNEL_KERNELOPS_TD
