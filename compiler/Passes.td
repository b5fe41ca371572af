//===- Passes.td - passes of the compiler's pipelines ------*- tablegen -*-===//
//
// The steps of the named pipelines (compiler/Pipelines.h) that belong to
// no pass family of their own.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMPILER_PASSES_TD
#define LOOM_COMPILER_PASSES_TD

include "mlir/Pass/PassBase.td"

def TrainingEntryPass : Pass<"loom-training-entry", "mlir::ModuleOp"> {
  let summary = "Keep only the function a training artifact compiles";
  let description = [{
    The last step of `--loom-training-pipeline`: erases every function but
    `func` (the training step, or the gradient function of `loomc train
    --gradients`), so that the module holds what the artifact runs. With
    `bake-params` the function's parameters (arguments with a
    `graph.initial_value`) become constants of their initial values, so
    that the gradient function runs on the batch alone.

    ```mlir
    func.func @forward(...) {...}
    func.func @forward_grad(%w: tensor<4xf32> {graph.initial_value = dense<1.0> : tensor<4xf32>}, %x: ...)
    // with func=forward_grad bake-params becomes
    func.func @forward_grad(%x: ...) {
      %w = graph.constant dense<1.0> : tensor<4xf32>
      ...
    }
    ```
  }];
  let dependentDialects = ["::loom::graph::GraphDialect"];
  let options = [
    Option<"funcName", "func", "std::string", /*default=*/"\"train_step\"",
           "the function to keep">,
    Option<"bakeParams", "bake-params", "bool", /*default=*/"false",
           "parameters become constants of their initial values">,
  ];
}

#endif // LOOM_COMPILER_PASSES_TD
