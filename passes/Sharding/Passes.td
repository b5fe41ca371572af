//===- Passes.td - sharding over a device mesh -------------*- tablegen -*-===//

#ifndef LOOM_PASSES_SHARDING_PASSES_TD
#define LOOM_PASSES_SHARDING_PASSES_TD

include "mlir/Pass/PassBase.td"

def DataParallelPass : Pass<"loom-data-parallel", "mlir::ModuleOp"> {
  let summary = "Data parallel gradients: buckets all-reduced (or reduce-scattered for ZeRO) over the data axis";
  let description = [{
    Runs on the gradient function (`--loom-autodiff`'s `F_grad`) before
    `--loom-optimizer`. Every rank runs the same program on its slice of
    the global batch: the parameters are replicated, each rank's gradients
    are partial sums of the global gradient, and its loss is the loss of
    its slice. The pass declares the mesh (`mesh.mesh @mesh`, axis `data`
    of `ranks` ranks, `loom.axes = ["data"]`) and turns them into the
    global values with MLIR's upstream `mesh` collectives:

    * gradients are grouped in buckets of about `bucket-bytes` bytes, in
      the order the backward produces them; a bucket is flattened and
      all-reduced right after its last gradient is computed (each reduced
      gradient then scaled by `1 / ranks`: the mean), so the reduction overlaps the rest of the backward (the
      CPU backend starts it there and waits where the result is first
      used). `bucket-bytes = 0` lets the pass choose: a quarter of the
      gradient bytes, between 256 KiB and 25 MiB (PyTorch DDP's default
      cap), so that a model has a few buckets to overlap;
    * the loss is all-reduced and divided by `ranks`: the mean of the
      ranks' losses, as DDP reports (equal to the global batch's loss for
      a mean loss over equal slices);
    * with `zero = 1` or `2` (ZeRO) each gradient comes out as this rank's
      shard: the gradient flattened, padded to a multiple of `ranks` and
      cut in `ranks` equal chunks. A bucket lays its gradients out chunk by
      chunk (`[ranks, sum of chunk sizes]`), so one collective serves the
      whole bucket: ZeRO-2 reduce-scatters it (only the shard is ever
      reduced), ZeRO-1 all-reduces it and keeps its slice. The result
      carries `graph.shard = {axis = 0, shape = <full shape>}`;
      `--loom-optimizer` then updates only the shard (its slots are
      shards) and all-gathers the parameter.

    * with `zero = 3` (FSDP) the trained parameter arguments become this
      rank's chunks too (`graph.shard` with the whole shape); the forward
      reads a `mesh.all_gather` of each, issued per layer group before the
      previous group's first use, and the backward a second gather (with
      clones of the forward's parameter-only ops), so the forward's copy
      dies with the forward; gradients are reduce-scattered as ZeRO-2's
      and `--loom-optimizer` keeps the parameter a chunk.

    With `report` the pass writes its decisions as JSON (the mesh, each
    bucket's gradients, bytes and the op after which it starts, each
    parameter's sharding, with zero = 3 the gather groups and the memory
    per rank) and with `summary` prints them.
  }];
  let options = [
    Option<"funcName", "func", "std::string", /*default=*/"",
           "the gradient function (default: the one returning graph.grad_of results)">,
    Option<"ranks", "ranks", "int64_t", /*default=*/"2",
           "data-parallel ranks (the mesh's data axis)">,
    Option<"bucketBytes", "bucket-bytes", "int64_t", /*default=*/"0",
           "gradient bytes per bucket (0: chosen from the model)">,
    Option<"zero", "zero", "int64_t", /*default=*/"0",
           "ZeRO stage: 0 (all-reduce), 1 or 2 (sharded optimizer state)">,
    Option<"optimizerSlots", "optimizer-slots", "int64_t", /*default=*/"0",
           "optimizer slots per parameter (the report's per-rank memory with zero = 3)">,
    Option<"report", "report", "std::string", /*default=*/"",
           "write the decisions as JSON to this file">,
    Option<"summary", "summary", "bool", /*default=*/"false",
           "print the decisions on stderr">,
  ];
  let dependentDialects = ["mlir::mesh::MeshDialect"];
}

def TensorParallelPass : Pass<"loom-tensor-parallel", "mlir::ModuleOp"> {
  let summary = "Megatron-style tensor parallelism: column- then row-parallel matmuls over the tensor axis";
  let description = [{
    Runs on the forward function (with its loss) before `--loom-autodiff`,
    so that the backward is derived from the split forward. Every rank of
    the mesh's `tensor` axis (`ranks` ranks; the pass declares it, after a
    `data` axis of `data-ranks` ranks when that is more than 1) runs the
    same program on the same batch:

    * a matmul of a value every rank holds whole by a trained 2-D
      parameter (directly or through a transpose) becomes column-parallel:
      the parameter is split along its output features, each rank computes
      its part of the output. When the output is later sliced into equal
      parts (a fused q|k|v projection) the split is in as many groups, so
      that each rank holds its part of every group;
    * the split propagates through the ops that read the output, by a rule
      per op: elementwise ops with broadcasting (a parameter read whole
      along the split dim, a bias, is split with it), transpose, reshape
      (the split dim kept outermost of the dims it becomes), slices along
      one group, softmax along another dim, matmuls whose batch dims are
      split alike or whose free dim is;
    * a matmul of a value split along its contracted dim by a parameter is
      row-parallel: the parameter is split along its input features, and
      the partial products are summed by a `mesh.all_reduce` (one per
      block in the forward);
    * the column-parallel matmul's input is marked `graph.grad_all_reduce`:
      its gradient's parts are summed in the backward (one per block).

    A candidate whose split reaches an op without a rule, the function's
    results, or a parameter that is also read whole, stays replicated, and
    so does one whose sizes do not divide over the ranks; the report says
    which and why. Split parameters keep their whole `graph.initial_value`
    and get `graph.shard = {axis = "tensor", dim, groups, shape}`: the
    runtime cuts each rank's piece, and checkpoints hold whole tensors.

    With `vocab-parallel` (Megatron's vocab-parallel embedding and
    cross-entropy) a gather of a parameter by the batch's token ids splits
    the table over the vocab (ids outside the rank's range give zero rows,
    summed by a `mesh.all_reduce`), the LM head (tied or not) is
    column-parallel over the vocab, and the cross-entropy of the split
    logits is computed from the local maxima, sums of exponentials and
    target logits, each all-reduced: the whole logits never exist on a
    rank. Log-softmax and mean/sum reductions over the vocab (label
    smoothing) get the same treatment.

    With `sequence-parallel` (Megatron's sequence parallelism) the
    activations between a row-parallel matmul and the next column-parallel
    one (residual adds, layer norms, dropout) are split along the sequence:
    the row-parallel `mesh.all_reduce` becomes a `mesh.reduce_scatter`, the
    column-parallel input a `mesh.all_gather` (the pair swapped in the
    backward), a column-parallel input computed per row from whole values
    (the first block's layer norm) joins the region (an all-reduced sum
    below it becomes a reduce-scatter), a whole value entering the region
    is sliced (`mesh.all_slice`), a reader outside it gets the value whole
    again (an all-reduce of each rank's rows in place), and the parameters
    the region reads whole (layer norm scale and shift, biases) are marked
    `graph.grad_all_reduce`.

    With `report` the pass writes its decisions as JSON (each split
    parameter, each collective and why, each matmul left replicated and
    why) and with `summary` prints them.
  }];
  let options = [
    Option<"funcName", "func", "std::string", /*default=*/"",
           "the forward function (default: the module's only function)">,
    Option<"ranks", "ranks", "int64_t", /*default=*/"2",
           "tensor-parallel ranks (the mesh's tensor axis)">,
    Option<"dataRanks", "data-ranks", "int64_t", /*default=*/"1",
           "ranks of the data axis, declared outermost when more than 1">,
    Option<"freeze", "freeze", "std::string", /*default=*/"",
           "parameters matching this regex are not trained, so not split">,
    Option<"report", "report", "std::string", /*default=*/"",
           "write the decisions as JSON to this file">,
    Option<"summary", "summary", "bool", /*default=*/"false",
           "print the decisions on stderr">,
    Option<"vocabParallel", "vocab-parallel", "bool", /*default=*/"false",
           "split the token embedding and the LM head over the vocab, with "
           "a vocab-parallel cross-entropy">,
    Option<"sequenceParallel", "sequence-parallel", "bool",
           /*default=*/"false",
           "split the activations between the row- and the next "
           "column-parallel matmul along the sequence">,
  ];
  let dependentDialects = ["mlir::mesh::MeshDialect",
                           "loom::graph::GraphDialect"];
}

def VerifyCollectivesPass : Pass<"loom-verify-collectives", "mlir::ModuleOp"> {
  let summary = "Check that every group's ranks issue the same collectives in the same order";
  let description = [{
    A collective that one rank of its group issues and another does not,
    or issues in another order or with another shape, hangs or corrupts
    data at run time. This pass finds it at compile time: for every rank
    of the module's mesh it lists the collectives its program issues (the
    public function whose `loom.ranks` names the rank, or the one function
    without `loom.ranks`, which every rank runs), splits each collective's
    ranks into its groups (the ranks that differ only on its mesh axes) and
    compares, within each group, the ranks' sequences: kind, mesh axes,
    reduction, gather/scatter/slice axis, root, operand and result types.
    The first difference is an error on the op that names both ranks, the
    position in the group's sequence and what each rank issues there.

    A collective inside a region (an `scf.if` or a loop) is an error: the
    ranks may not all reach it. So is a rank that runs no or two programs.
  }];
  let options = [
    Option<"funcName", "func", "std::string", /*default=*/"",
           "the program every rank runs (default: the public functions, by loom.ranks)">,
  ];
}

#endif // LOOM_PASSES_SHARDING_PASSES_TD
