//===- Passes.td - activation recomputation ----------------*- tablegen -*-===//

#ifndef LOOM_PASSES_RECOMPUTE_PASSES_TD
#define LOOM_PASSES_RECOMPUTE_PASSES_TD

include "mlir/Pass/PassBase.td"

def RecomputePass : Pass<"loom-recompute", "mlir::ModuleOp"> {
  let summary = "Recompute forward values in the backward pass under a "
                "memory budget (activation checkpointing)";
  let description = [{
    On a joint forward + backward function (the `train_step` of
    `--loom-optimizer`, or a `--loom-autodiff` gradient function) chooses
    which forward values the backward keeps and which it recomputes. The
    forward ops are the ancestors of the result marked
    `graph.output = "loss"`; a saved value is a forward op's result that a
    non-forward op reads. Recomputing one clones the forward ops it needs
    (from kept values and arguments) just before its first backward use,
    marked `loom.recompute`; the backward ops read the clone and the
    original dies at its last forward use.

    Strategies:

    * `none`: no change (the report still lists the saved values).
    * `sqrt`: Chen et al. (2016): of the n cut values (the only
      batch-dependent forward value live across the point after its op,
      like a transformer's residual stream between blocks), every
      ceil(sqrt(n))-th is kept; the other values are recomputed from them.
    * `all`: nothing that can be recomputed is kept: every backward op
      recomputes what it reads from the arguments (the least memory, the
      most FLOPs: quadratic in the depth).
    * `optimal`: the fewest recompute FLOPs with a planned peak within
      `budget`: a dynamic program over the cuts in forward order (recompute
      FLOPs + lambda * kept bytes), lambda swept and bisected against the
      planned peak of each candidate; then the budget is filled by keeping
      the recomputed values that cost the most FLOPs per byte while the
      peak stays within it. sqrt's choice is a candidate too.

    A recomputed matmul, reduction or normalization serves every later
    backward op; recomputed elementwise and data-movement ops serve only
    the backward op they were cloned for (and usually fuse into it).

    The planned peak is that of the arena planner the CPU backend uses
    (passes/MemoryPlan/ArenaPlanner.h) on the buffers the step will have:
    the function is fused as `--loom-fusion` does, and every kernel
    region's result becomes a buffer live from the region to its last
    user (reshape-like regions are views of their operand; returned
    values, arguments and constants are not in the arena).

    Ops with side effects are never recomputed; `graph.dropout` is (its
    mask is a pure function of its `seed` and the element index, so the
    clone draws the same mask). A budget that cannot be met is an error
    naming the smallest peak found.

    `report=FILE` writes JSON (every saved value: name, location, shape,
    bytes, kept or recomputed, recompute FLOPs; the planned peak before
    and after; the extra FLOPs; the solve time); `summary` prints the same
    to stderr.
  }];
  let dependentDialects = ["loom::kernel::KernelDialect"];
  let options = [
    Option<"funcName", "func", "std::string", /*default=*/"",
           "the function (default: the one with a loss result)">,
    Option<"budget", "budget", "int64_t", /*default=*/"0",
           "planned peak bytes allowed (0: none; needed by optimal)">,
    Option<"strategy", "strategy", "std::string", /*default=*/"\"optimal\"",
           "none, all, sqrt or optimal">,
    Option<"report", "report", "std::string", /*default=*/"",
           "write the decisions as JSON to this file">,
    Option<"summary", "summary", "bool", /*default=*/"false",
           "print the decisions to stderr">,
    Option<"targetPasses", "target-passes", "std::string", /*default=*/"",
           "the backend's graph passes before fusion, as a pass pipeline "
           "(the CPU's: loom-cpu-widen-floats), run on every planned copy "
           "so that the plan is the compiled code's">,
    Option<"alignment", "alignment", "int64_t", /*default=*/"64",
           "byte alignment of every buffer, as the memory plan's">,
  ];
}

#endif // LOOM_PASSES_RECOMPUTE_PASSES_TD
