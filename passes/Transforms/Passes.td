//===- Passes.td - general graph transforms ----------------*- tablegen -*-===//

#ifndef LOOM_PASSES_TRANSFORMS_PASSES_TD
#define LOOM_PASSES_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def SortConstantsPass : Pass<"loom-sort-constants", "mlir::func::FuncOp"> {
  let summary = "move graph.constant ops to the top of the function, ordered "
                "by type and value";
  let description = [{
    Moves every `graph.constant` to the top of its function, ordered by its
    type and then its value as printed. Two functions that differ only in
    where their constants sit then print alike, which is how round-trip
    tests compare IR (after `--cse`, which merges equal constants):

    ```mlir
    %y = graph.add %x, %c2
    %c2 = graph.constant dense<2.0> : tensor<4xf32>  // (defined earlier)
    %c1 = graph.constant dense<1.0> : tensor<4xf32>
    // becomes
    %c1 = graph.constant dense<1.0> : tensor<4xf32>
    %c2 = graph.constant dense<2.0> : tensor<4xf32>
    %y = graph.add %x, %c2
    ```
  }];
  let dependentDialects = ["::loom::graph::GraphDialect"];
}

#endif // LOOM_PASSES_TRANSFORMS_PASSES_TD
