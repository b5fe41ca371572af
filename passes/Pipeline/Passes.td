//===- Passes.td - pipeline parallelism --------------------*- tablegen -*-===//

#ifndef LOOM_PASSES_PIPELINE_PASSES_TD
#define LOOM_PASSES_PIPELINE_PASSES_TD

include "mlir/Pass/PassBase.td"

def PipelineStagesPass : Pass<"loom-pipeline-stages", "mlir::ModuleOp"> {
  let summary = "Cut a loss function into pipeline stages";
  let description = [{
    Cuts the loss function `F(batch..., params...) -> loss` (the output of
    `--loom-loss`) into `stages` functions `F_stage<k>`, each taking what
    the previous stage sends and returning what the next one needs:

    * The ops that depend on the batch are cut, in program order, into
      contiguous stages balanced by a cost model (an op's FLOPs plus four
      times the bytes it reads and writes: a CPU core's balance of about
      four FLOPs per byte), or where `boundaries` say: a comma-separated
      list of `stages - 1` texts, stage k starting at the first op after
      the previous boundary whose location (the ONNX node name) contains
      the k-th text (a layer's name prefix such as `/h.2/`).
    * Constants, and ops that read only constants and parameters (a
      weight's transpose), are copied into every stage that uses them.
    * A parameter belongs to the first stage that uses it; a later stage
      that also uses it (tied embeddings) receives it like an activation,
      so its gradient flows back to its owner.
    * A value is sent from its stage to each next stage until its last
      use; batch inputs are read by every stage that needs them.
    * Parameters matching `freeze` become constants of their initial value.

    Stage functions carry `loom.pipeline.stage = k` and the cost model's
    `loom.pipeline.flops`; their arguments are received activations
    (`loom.pipeline.in = i`), batch inputs (`graph.input`) and parameters
    (`graph.param`, with their initial values); their results are sent
    activations (`loom.pipeline.out = i`) or, for the last stage, the loss
    (`graph.output = "loss"`). `summary` prints each stage's ops, cost,
    parameters and sent bytes.
  }];
  let options = [
    Option<"funcName", "func", "std::string", /*default=*/"",
           "the loss function (default: the only public one)">,
    Option<"stages", "stages", "int64_t", /*default=*/"2",
           "how many stages (pipeline ranks times virtual stages)">,
    Option<"boundaries", "boundaries", "std::string", /*default=*/"",
           "comma-separated op name texts where stages 1.. begin">,
    Option<"freeze", "freeze", "std::string", /*default=*/"",
           "regex of parameter names that are not trained">,
    Option<"summary", "summary", "bool", /*default=*/"false",
           "print each stage to stderr">,
  ];
}

def PipelinePartsPass : Pass<"loom-pipeline-parts", "mlir::ModuleOp"> {
  let dependentDialects = ["mlir::mesh::MeshDialect",
                           "loom::kernel::KernelDialect"];
  let summary = "Build each pipeline stage's forward, backward and update";
  let description = [{
    For each stage function of `--loom-pipeline-stages` builds the parts
    the runtime schedules (common/schema/loom_artifact.proto, message
    Pipeline, names the inputs and outputs):

    * `<stage>_F`: the forward; it returns the sent activations (or the
      loss) and the values its backward needs (`saved:i`).
    * `<stage>_I`: the gradient of each received float activation
      (`din:i`), from the gradients of the sent ones (`dout:i`, every one
      an input) or, in the last stage, from `loss_weight` (the
      micro-batch's weight in the step's loss, which seeds the backward);
      it also returns what the weight part needs of it (`inter:i`). Absent
      when the stage receives no float activation.
    * `<stage>_W`: the parameters' gradients, added to their sums over the
      step's micro-batches (`acc:N` in and out). Absent when the stage has
      no trained parameter.

    The backward is the one `--loom-autodiff` builds (the ops' VJP
    rules), cut in two: the ops the input gradients need, then the rest.
    Constants and ops of parameters only are recomputed where needed
    instead of saved.

    With `recompute` (all or sqrt), `--loom-recompute` runs on each
    stage's joint forward + backward before it is cut into parts: the
    values it recomputes are computed again by the I and W parts from the
    stage's inputs instead of being saved by F, so a stage keeps less
    per micro-batch in flight (`loom.pipeline.saved_bytes`).

    With `loss-scale` (f16's dynamic loss scaling), the last stage's I
    and W parts take `param:loss_scale` (the last rank's update state) and
    seed the backward with `loss_weight * loss_scale`. The last rank's
    gradient function takes the scale (`graph.loss_scale`), so that
    `--loom-optimizer` keeps it as state, unscales and grows or backs it
    off; every rank's gradient function all-reduces it over the pipe axis
    (the other ranks add 0) and the other ranks unscale their gradients
    by it. Their optimizer steps skip together: a non-finite gradient
    anywhere makes the global norm, summed over the pipe axis, non-finite
    on every rank.

    Then for each of the `ranks` pipeline ranks (stage k runs on rank
    k % ranks) a gradient function `pipeline_update_<r>(acc..., loss,
    params...) -> (loss, grads...)` over the parameters of its stages,
    for `--loom-data-parallel` and `--loom-optimizer` to make the rank's
    optimizer step; and the mesh `[data, ranks]` over the axes "data" and
    "pipe".
  }];
  let options = [
    Option<"ranks", "ranks", "int64_t", /*default=*/"2",
           "pipeline ranks (the mesh's pipe axis)">,
    Option<"dataRanks", "data-ranks", "int64_t", /*default=*/"1",
           "data-parallel replicas (the mesh's data axis)">,
    Option<"recompute", "recompute", "std::string", /*default=*/"",
           "--loom-recompute's strategy inside each stage: none, all or "
           "sqrt (empty: none)">,
    Option<"targetPasses", "target-passes", "std::string", /*default=*/"",
           "--loom-recompute's target-passes (the backend's graph passes)">,
    Option<"lossScale", "loss-scale", "bool", /*default=*/"false",
           "dynamic loss scaling (f16): the last stage's backward is "
           "seeded with loss_weight times the update's loss_scale state">,
    Option<"summary", "summary", "bool", /*default=*/"false",
           "print each stage's recomputation decisions to stderr">,
  ];
}

#endif // LOOM_PASSES_PIPELINE_PASSES_TD
