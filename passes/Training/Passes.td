//===- Passes.td - loss and training step ------------------*- tablegen -*-===//

#ifndef LOOM_PASSES_TRAINING_PASSES_TD
#define LOOM_PASSES_TRAINING_PASSES_TD

include "mlir/Pass/PassBase.td"

def LossPass : Pass<"loom-loss", "mlir::ModuleOp"> {
  let summary = "Replace a model's outputs by a scalar training loss";
  let description = [{
    Appends a labels argument (`graph.input = labels`) to the function and
    makes it return one scalar, the loss of its `logits` output against the
    labels (`graph.output = "loss"`):

    * `cross_entropy`: labels are i64 class ids shaped like the logits
      without their last (class) dim; the mean over the rows whose label is
      not `ignore-index`. With `label-smoothing` e the loss is
      `(1 - e) * nll + e * mean_c(-log_softmax)`, averaged over the same
      rows (PyTorch's `F.cross_entropy` with `label_smoothing`).
    * `mse`: labels are floats shaped like the logits; the mean squared
      error.

    The model's other outputs are dropped. With `empty-mean-zero` the
    cross-entropy's mean is the sum over the kept rows over their count
    or 1, so that a batch with every label ignored gives 0 and zero
    gradients instead of NaN (a pipeline's micro-batch: its weight in the
    step's loss is 0).
  }];
  let options = [
    Option<"funcName", "func", "std::string", /*default=*/"",
           "the model function (default: the only public one)">,
    Option<"loss", "loss", "std::string", /*default=*/"\"cross_entropy\"",
           "cross_entropy or mse">,
    Option<"logits", "logits", "std::string", /*default=*/"",
           "the output the loss reads (default: the only one)">,
    Option<"labels", "labels", "std::string", /*default=*/"\"labels\"",
           "the name of the labels input">,
    Option<"ignoreIndex", "ignore-index", "int64_t", /*default=*/"-100",
           "cross_entropy: rows with this label do not count">,
    Option<"labelSmoothing", "label-smoothing", "double", /*default=*/"0.0",
           "cross_entropy: label smoothing in [0, 1)">,
    Option<"emptyMeanZero", "empty-mean-zero", "bool", /*default=*/"false",
           "cross_entropy: a mean over no kept row is 0, not NaN (a "
           "pipeline's micro-batch whose labels are all ignored)">,
  ];
}

def OptimizerPass : Pass<"loom-optimizer", "mlir::ModuleOp"> {
  let dependentDialects = ["mlir::mesh::MeshDialect"];
  let summary = "Build the training step from a gradient function";
  let description = [{
    From `F_grad(args) -> (loss, grads)` (the output of `--loom-autodiff`)
    builds `train_step(batch..., step, total_steps, params..., slots...)
    -> (loss, grad_norm, lr, params'..., slots'...)`, all in graph ops:

    * gradient accumulation over `accumulate` micro-batches (`step` counts
      micro-batches; a `grad_accum` slot per parameter; the update applies
      on every `accumulate`-th call with the mean gradient, the others only
      add);
    * the global L2 gradient norm, and with `clip-norm` C the gradients
      scaled by `min(1, C / (norm + 1e-6))` (torch.nn.utils.clip_grad_norm_);
    * the learning rate at optimizer step s (0-based): `lr * (s + 1) / W`
      during `warmup` W, then `lr` (`constant`) or
      `lr * (1 + cos(pi * min(1, (s - W) / max(1, T - W)))) / 2`
      (`cosine`), T being the `total_steps` input;
    * `sgd` (momentum, Nesterov, weight decay), `adam` (L2 weight decay) and
      `adamw` (decoupled weight decay), with PyTorch's update rules and
      defaults: a weight decay of -1 means the optimizer's default (0.01
      for adamw, 0 otherwise).

    Arguments carry `graph.input` (batch), `graph.step`,
    `graph.total_steps`, `graph.state` + `graph.state_kind` (+
    `graph.initial_value` for parameters); results `graph.output` (loss,
    grad_norm, lr) and `graph.next_state`; the function `loom.training`.
    This is the contract the artifact writer reads (compiler/Compile.cpp).
    Parameters without a gradient (frozen) become constants of their
    initial value.

    Dynamic loss scaling (f16), when the gradient function takes a
    `graph.loss_scale` argument (`--loom-autodiff loss-scale`), with
    torch.cuda.amp.GradScaler's semantics and defaults: the scale is state
    (`loss_scale`, initially `loss-scale-init`, and the count of good steps
    `loss_scale/growth_tracker`), the backward runs on `loss * scale`, the
    gradients are multiplied by `1 / scale` before accumulation, and when
    any is not finite (the sum of their squares is not) the optimizer step
    leaves parameters and slots as they were and the scale is multiplied by
    `loss-scale-backoff`; after `loss-scale-interval` good steps in a row
    it is multiplied by `loss-scale-growth`. The step's scale is the result
    `graph.output = "loss_scale"`.

    ZeRO (`--loom-data-parallel zero=1|2`): a gradient marked
    `graph.shard` is this rank's chunk of the flattened, padded parameter.
    Its slots are chunks too (marked `graph.shard`, so the artifact records
    them as sharded state); the update runs on the rank's chunk of the
    parameter (`mesh.all_slice`), and the updated chunks are all-gathered
    into the next parameter. The global gradient norm adds the chunks'
    sums of squares over the data axis (`mesh.all_reduce`).

    Pipeline parallel (`norm-axis=pipe`): each rank of the axis updates
    other parameters (its stages'), so the global norm sums the ranks'
    sums of squares over that axis.
  }];
  let options = [
    Option<"funcName", "func", "std::string", /*default=*/"",
           "the gradient function (default: the one returning graph.grad_of results)">,
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"sgd\"",
           "sgd, adam or adamw">,
    Option<"lr", "lr", "double", /*default=*/"1e-3", "base learning rate">,
    Option<"momentum", "momentum", "double", /*default=*/"0.0", "sgd momentum">,
    Option<"nesterov", "nesterov", "bool", /*default=*/"false", "sgd Nesterov momentum">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "adam(w) beta1">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999", "adam(w) beta2">,
    Option<"eps", "eps", "double", /*default=*/"1e-8", "adam(w) epsilon">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"-1.0",
           "weight decay (-1: the optimizer's default)">,
    Option<"clipNorm", "clip-norm", "double", /*default=*/"0.0",
           "clip the global gradient norm to this (0: no clipping)">,
    Option<"schedule", "schedule", "std::string", /*default=*/"\"constant\"",
           "constant or cosine">,
    Option<"warmup", "warmup", "int64_t", /*default=*/"0", "linear warmup steps">,
    Option<"totalSteps", "total-steps", "int64_t", /*default=*/"0",
           "recorded horizon of the schedule (0: the run's step count)">,
    Option<"accumulate", "accumulate", "int64_t", /*default=*/"1",
           "micro-batches per optimizer step">,
    Option<"labels", "labels", "std::string", /*default=*/"\"labels\"",
           "the labels input's name (recorded for the runtime)">,
    Option<"description", "description", "std::string", /*default=*/"",
           "a line describing the training, recorded for logs">,
    Option<"normAxis", "norm-axis", "std::string", /*default=*/"",
           "a mesh axis over which the parameters are disjoint (pipeline "
           "stages): their sum of squares is summed over it for the "
           "global norm">,
    Option<"fusedNorm", "fused-norm", "bool", /*default=*/"false",
           "the global norm's sum of squares as one graph.sum_squares over "
           "every gradient (the CUDA target: one pass over all of them) "
           "instead of one reduction per parameter">,
    Option<"lossScaleInit", "loss-scale-init", "double", /*default=*/"65536.0",
           "dynamic loss scaling: the first scale">,
    Option<"lossScaleGrowth", "loss-scale-growth", "double", /*default=*/"2.0",
           "dynamic loss scaling: factor after loss-scale-interval good steps">,
    Option<"lossScaleBackoff", "loss-scale-backoff", "double", /*default=*/"0.5",
           "dynamic loss scaling: factor after a step with non-finite gradients">,
    Option<"lossScaleInterval", "loss-scale-interval", "int64_t", /*default=*/"2000",
           "dynamic loss scaling: good steps in a row before the scale grows">,
  ];
}

#endif // LOOM_PASSES_TRAINING_PASSES_TD
