//===- Passes.td - mixed precision -------------------------*- tablegen -*-===//

#ifndef LOOM_PASSES_MIXEDPRECISION_PASSES_TD
#define LOOM_PASSES_MIXEDPRECISION_PASSES_TD

include "mlir/Pass/PassBase.td"

def MixedPrecisionPass : Pass<"loom-mixed-precision", "mlir::ModuleOp"> {
  let summary = "Run matmuls and convolutions in bf16 or f16 (autocast)";
  let description = [{
    Rewrites one f32 function (a model with its loss, before
    `--loom-autodiff`) so that its matrix products run in `dtype` and the
    numerically sensitive ops stay in f32, inserting the casts this needs
    and then removing every cast it can. Run before autodiff, the backward
    inherits the precision of the forward (the gradient of a cast is the
    opposite cast) and uses the same low-precision weight copies; the
    parameters themselves (the optimizer's master weights) stay f32.

    Each op gets one of three rules:

    * **low**: `matmul`, `conv` run in `dtype` (a backend accumulates in
      f32 and rounds the result once);
    * **f32**: softmax, log_softmax, layer_norm, batch_norm, the sum and
      mean reductions, cumsum, global and average pooling, exp, log, pow,
      sqrt, rsqrt and the losses run in f32 under every policy;
    * **follow** (every other op): by `policy` —
      `conservative`: f32; `default` (PyTorch autocast's promotion, with
      parameters and constants taking the precision of the activations
      they meet, as `Linear`'s bias does inside the matmul): `dtype` when
      every float activation operand is already in `dtype`, f32 when one is
      f32; `aggressive`: `dtype` when any float activation operand is.
      An op whose float operands are all parameters or constants stays as
      it was.

    Casts are then minimized: one cast per value and type (a weight is cast
    once per step, right after it is available, however often it is used),
    a round trip through f32 from `dtype` back to `dtype` is removed, and a
    cast next to a reshape, transpose, broadcast, slice or gather moves to
    the side with fewer elements. The function's results keep their types.

    `report=FILE` writes every remaining cast with its reason (the op and
    the rule that needed it) and the counts per rule as JSON; `summary`
    prints the same on stderr.
  }];
  let options = [
    Option<"funcName", "func", "std::string", /*default=*/"",
           "the function (default: the only public one)">,
    Option<"dtype", "dtype", "std::string", /*default=*/"\"bf16\"",
           "bf16 or f16">,
    Option<"policy", "policy", "std::string", /*default=*/"\"default\"",
           "conservative, default or aggressive">,
    Option<"report", "report", "std::string", /*default=*/"",
           "write the casts and their reasons to this JSON file">,
    Option<"summary", "summary", "bool", /*default=*/"false",
           "print the casts and their reasons to stderr">,
  ];
}

def SaveNarrowPass : Pass<"loom-save-narrow", "mlir::ModuleOp"> {
  let summary = "Keep 16-bit activations for the backward, not their f32 "
                "copies";
  let description = [{
    In a function with a `graph.output = "loss"` result and its backward
    (a training step or a gradient function): a forward value that the
    backward uses and that is an exact widening cast of a narrower float
    (`graph.cast` bf16/f16 -> f32, as `--loom-mixed-precision` makes before
    layer norm, softmax or the loss) is cast again right before its first
    use in the backward, from the narrow value. The backward then keeps
    the 16-bit value alive instead of the f32 copy: half the bytes, the
    same numbers (the widening is exact), one elementwise cast more.
    The forward is what the loss depends on; everything else is the
    backward (and the optimizer).
  }];
  let options = [
    Option<"funcName", "func", "std::string", /*default=*/"",
           "the function (default: the only public one)">,
  ];
}

#endif // LOOM_PASSES_MIXEDPRECISION_PASSES_TD
