//===- Passes.td - reverse-mode autodiff -------------------*- tablegen -*-===//

#ifndef LOOM_PASSES_AUTODIFF_PASSES_TD
#define LOOM_PASSES_AUTODIFF_PASSES_TD

include "mlir/Pass/PassBase.td"

def AutodiffPass : Pass<"loom-autodiff", "mlir::ModuleOp"> {
  let summary = "Build the gradient function of a scalar loss";
  let description = [{
    For the function `F(args) -> (loss, ...)` it adds `F_grad(args) ->
    (loss, d loss / d arg...)`: F's ops, then the backward graph built from
    each op's VJP rule (`VjpOpInterface`, dialects/graph/GraphVjp.cpp) in
    reverse order. `F` stays as it was.

    * The gradients are taken with respect to the `graph.param` arguments
      (`wrt=params`) or every float argument (`wrt=all`). Parameters whose
      name matches the `freeze` regex (POSIX extended, searched anywhere in
      the name) get none.
    * Only active ops are differentiated: those between a differentiated
      argument and the loss. Integer and boolean values (indices, masks,
      labels) carry no gradient; an op's non-differentiable operands
      (batch norm's running statistics) neither.
    * A gradient flowing into a broadcast operand is summed back to its
      shape; a value used several times accumulates the gradients of its
      uses.
    * Each gradient result is named `<arg>.grad` (`graph.output`) and
      carries `graph.grad_of = "<arg>"`. An argument the loss does not
      depend on gets zeros and a warning.

    Shapes must be static (`loomc train --batch` fixes a dynamic batch).
    An active op without a VJP rule is an error naming the op and where it
    came from. `summary` prints what each argument gets.

    With `loss-scale` the gradient function takes one more argument, a
    `tensor<f32>` marked `graph.loss_scale`, and seeds the backward with it
    instead of 1: it returns the loss and the gradients of `loss * scale`
    (loss scaling for f16, which `--loom-optimizer` then unscales).
  }];
  let options = [
    Option<"funcName", "func", "std::string", /*default=*/"",
           "the function to differentiate (default: the only public one)">,
    Option<"wrt", "wrt", "std::string", /*default=*/"\"params\"",
           "which arguments: 'params' (graph.param) or 'all' (every float one)">,
    Option<"freeze", "freeze", "std::string", /*default=*/"",
           "regex of parameter names that get no gradient">,
    Option<"lossIndex", "loss-index", "unsigned", /*default=*/"0",
           "the result that is the loss (a float scalar)">,
    Option<"summary", "summary", "bool", /*default=*/"false",
           "print each argument's gradient decision to stderr">,
    Option<"lossScale", "loss-scale", "bool", /*default=*/"false",
           "add a last argument (tensor<f32>, graph.loss_scale) that "
           "multiplies the loss before the backward (loss scaling)">,
  ];
}

#endif // LOOM_PASSES_AUTODIFF_PASSES_TD
