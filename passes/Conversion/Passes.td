//===- Passes.td - lowerings out of the graph dialect -----*- tablegen -*-===//

#ifndef LOOM_PASSES_CONVERSION_PASSES_TD
#define LOOM_PASSES_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def GraphToLinalgPass : Pass<"loom-graph-to-linalg", "mlir::func::FuncOp"> {
  let summary = "Lower graph ops to linalg, tensor, arith and math on tensors";
  let description = [{
    The first step of the CPU code path: every graph op of the function,
    those inside `kernel.fusion` regions included, becomes upstream MLIR on
    tensors, built right before it in program order (so each op's operands
    are already lowered):

    * elementwise ops (NumPy broadcasting) are one `linalg.generic` each,
      whose body is the scalar op in arith / math;
    * reductions, matmul, softmax, the norms and the losses are
      `linalg.generic` with reduction iterators;
    * gathers, reversed slices, pad modes and resize read with
      `tensor.extract` inside a generic; `top_k` is a rank count and a
      selection; `scatter_elements` an `scf.for` nest of `tensor.insert`;
    * convolution uses the named NCHW conv ops, pooling one window generic;
      transpose, fill and iota have their linalg forms, reshapes are
      `tensor.reshape`;
    * dynamic dims are read from the operands with `tensor.dim`; run-time
      shape parameters are checked with `cf.assert`;
    * unsigned integer types (`ui8`, ...) select unsigned arithmetic
      (`arith.divui`, `cmpi ult`, `uitofp`, `extui`, `maxui`) and are then
      made signless everywhere in the function, its signature and
      constants included: the bits are the same.

    Each op family has its `populateGraphToLinalg<Family>Patterns`; the
    graph dialect is illegal and every graph op left without a lowering is
    an error naming it. A `kernel.fusion` region whose ops all lowered to
    what they forward (inference dropout) is replaced by what it yields.

    ```mlir
    %y = graph.add %x, %b : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
    // becomes
    %c0 = arith.constant 0 : index
    %n = tensor.dim %x, %c0 : tensor<?x4xf32>
    %e = tensor.empty(%n) : tensor<?x4xf32>
    %y = linalg.generic {...} ins(%x, %b : tensor<?x4xf32>, tensor<4xf32>)
                              outs(%e : tensor<?x4xf32>) {...arith.addf...}
    ```
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::cf::ControlFlowDialect",
    "mlir::linalg::LinalgDialect", "mlir::math::MathDialect",
    "mlir::scf::SCFDialect", "mlir::tensor::TensorDialect",
  ];
}

#endif // LOOM_PASSES_CONVERSION_PASSES_TD
