//===- Passes.td - graph-level fusion ----------------------*- tablegen -*-===//

#ifndef LOOM_PASSES_FUSION_PASSES_TD
#define LOOM_PASSES_FUSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def FusionPass : Pass<"loom-fusion", "mlir::ModuleOp"> {
  let summary = "Group graph ops into kernel.fusion regions";
  let description = [{
    Puts every graph op (constants aside) of each function into exactly one
    `kernel.fusion` region, the unit every backend compiles:

    * an elementwise producer with a single user fuses into that user when
      the user is elementwise or a reduction, softmax, norm or pooling
      (the region's prologue);
    * an elementwise user of a reduction, softmax, norm or matmul result
      that has no other user fuses into that op's region (its epilogue):
      matmul + bias + gelu/relu is one region;
    * a region holds at most one non-elementwise op (its root), never
      fuses into a matmul's or convolution's operands, and stays acyclic:
      two ops are never fused when a path between them leaves the region;
    * a value that is also a function result fuses like any other (its
      region yields it);
    * multi-tensor: the per-parameter updates of a training step (ops that
      `--loom-optimizer` located at `optimizer/<param>`) merge side by
      side into one elementwise region, one kernel for all parameters;
    * everything else is a region of one op (kind `other`).

    Constants smaller than 1 KiB (and splats) are cloned into each region
    that uses them; larger ones stay outside and are passed in.

    `report=FILE.json` writes the regions (name, kind, ops and their source
    locations) and every fusion decision with its reason; `summary` prints
    the same for people on stderr.
  }];
  let dependentDialects = ["loom::kernel::KernelDialect"];
  let options = [
    Option<"report", "report", "std::string", /*default=*/"",
           "write the regions and fusion decisions as JSON to this file">,
    Option<"summary", "summary", "bool", /*default=*/"false",
           "print a readable summary of the regions and decisions to stderr">,
    Option<"maxOps", "max-ops", "unsigned", /*default=*/"0",
           "the most graph ops in one region (0: no limit)">,
  ];
}

def FuseAttentionPass : Pass<"loom-fuse-attention", "mlir::ModuleOp"> {
  let summary = "Replace softmax attention written op by op with graph.attention";
  let description = [{
    Finds `matmul(q, k^T)`, an optional scale by a constant, an optional
    `where` mask with a constant fill, a softmax over the last dim and a
    matmul with `v`, and replaces them with one `graph.attention` (whose
    gradient is one `graph.attention_grad`): the scores and probabilities
    are never stored. A constant "key after query" mask with a fill of
    -1e4 or less becomes `causal`. The CUDA target's pipelines run it
    before autodiff and mixed precision. `min-scores` leaves smaller
    attentions as they are: `loomc --fused-attention=auto` (the default)
    fuses from 256M scores (1 GiB in f32), where the stored scores
    become what limits the batch and sequence length; below that the
    unfused path (cuBLASLt tensor-core GEMMs and a softmax kernel) is
    faster than the CUDA-core fused kernels (docs/performance.md).

    `report=FILE.json` lists each fused attention (heads, queries, keys,
    head size, mask) and each softmax over scores left alone with the
    reason; `summary` prints the same on stderr.
  }];
  let options = [
    Option<"report", "report", "std::string", /*default=*/"",
           "write the fused and unfused attentions as JSON to this file">,
    Option<"summary", "summary", "bool", /*default=*/"false",
           "print what was fused and why not on stderr">,
    Option<"maxHeadDim", "max-head-dim", "int64_t", /*default=*/"128",
           "the largest head size the target's kernels take">,
    Option<"minScores", "min-scores", "int64_t", /*default=*/"0",
           "fuse only attentions with at least this many scores (batch x "
           "heads x queries x keys); smaller ones stay matmul, softmax, "
           "matmul">,
  ];
}

#endif // LOOM_PASSES_FUSION_PASSES_TD
