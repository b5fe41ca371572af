#!/usr/bin/python3
"""Makes the PyTorch references that Loom's training tests compare against.

Run with Debian's Python (apt-get install python3-torch python3-onnx):
    /usr/bin/python3 test/training/make_references.py [OUTDIR]
OUTDIR defaults to this file's folder. It writes
  mlp.onnx, gpt2.onnx        inference models; each parameter is an
                             initializer named like its state_dict key
  mlp.data.npz, gpt2.data.npz, mlp.mse.npz
                             the training data (12 samples each)
  ref_<config>.npz           what PyTorch computes for each config
  configs.json               per config: model, data, loomc and loom-run
                             flags, reference file
The outputs are committed, so tests do not need PyTorch. README.md in this
folder gives the semantics the references follow.
"""
import json
import math
import os
import re
import sys

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "models"))
from make_models import GPT2, MLP  # noqa: E402

OPSET = 17
SEED = 0
SAMPLES = 12   # samples in each data file
BATCH = 4      # loom-run --batch: samples per micro-batch
STEPS = 5      # optimizer steps; also --total-steps
IGNORE_INDEX = -100

# name -> how to train. Keys: model, data, loss, labels, optimizer, lr, and
# optionally momentum, nesterov, betas, eps, weight_decay, warmup, schedule,
# clip, accumulate, freeze, label_smoothing. Absent optimizer flags take
# PyTorch's defaults, and are not passed to loomc.
CONFIGS = {
    "mlp_sgd": dict(model="mlp", data="mlp.data.npz", loss="cross_entropy",
                    labels="labels", optimizer="sgd", lr=0.1, momentum=0.9,
                    nesterov=True, weight_decay=1e-3, schedule="constant"),
    "mlp_adam": dict(model="mlp", data="mlp.data.npz", loss="cross_entropy",
                     labels="labels", optimizer="adam", lr=1e-2, warmup=2,
                     schedule="cosine", clip=1.0),
    "mlp_adamw": dict(model="mlp", data="mlp.data.npz", loss="cross_entropy",
                      labels="labels", optimizer="adamw", lr=1e-2,
                      weight_decay=0.01, warmup=2, schedule="cosine",
                      clip=0.5, accumulate=2),
    "gpt2_sgd": dict(model="gpt2", data="gpt2.data.npz", loss="cross_entropy",
                     labels="labels", optimizer="sgd", lr=0.1, momentum=0.9,
                     schedule="constant", clip=1.0, freeze=r"^wpe\."),
    "gpt2_adam": dict(model="gpt2", data="gpt2.data.npz",
                      loss="cross_entropy", labels="labels",
                      optimizer="adam", lr=3e-3, betas=(0.9, 0.95), warmup=1,
                      schedule="cosine"),
    "gpt2_adamw": dict(model="gpt2", data="gpt2.data.npz",
                       loss="cross_entropy", labels="labels",
                       optimizer="adamw", lr=3e-3, weight_decay=0.1,
                       warmup=2, schedule="cosine", clip=1.0, accumulate=2,
                       label_smoothing=0.1),
    "mlp_mse": dict(model="mlp", data="mlp.mse.npz", loss="mse",
                    labels="targets", optimizer="sgd", lr=0.05, momentum=0.9,
                    schedule="constant"),
}

# Graph input and the declared shape of `logits` ("batch" is dynamic).
MODELS = {
    "mlp": dict(cls=MLP, inputs=["x"], logits=["batch", 10]),
    "gpt2": dict(cls=GPT2, inputs=["input_ids"], logits=["batch", 16, 100]),
}


def fail(msg):
    sys.exit("make_references.py: error: " + msg)


def new_model(name, state):
    model = MODELS[name]["cls"]()
    model.load_state_dict(state)
    return model


# ---------------------------------------------------------------------------
# Models and data.

def distinct_norms(model):
    """Gives each LayerNorm its own random scale and shift.

    In EVAL mode torch.onnx.export merges initializers with equal values, so
    freshly initialized LayerNorms (all ones, all zeros) would share one
    initializer. Random values keep one initializer per parameter and make
    the gradient checks less trivial. Everything else keeps the classes'
    default initialization.
    """
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.LayerNorm):
                m.weight.add_(0.1 * torch.randn_like(m.weight))
                m.bias.add_(0.1 * torch.randn_like(m.bias))


def export(model, name, example, outdir):
    """Exports `model` and checks that its parameters are its initializers."""
    input_name = MODELS[name]["inputs"][0]
    path = os.path.join(outdir, name + ".onnx")
    model.eval()
    torch.onnx.export(model, (example,), path, opset_version=OPSET,
                      do_constant_folding=False,
                      training=torch.onnx.TrainingMode.EVAL,
                      input_names=[input_name], output_names=["logits"],
                      dynamic_axes={input_name: {0: "batch"},
                                    "logits": {0: "batch"}})
    proto = onnx.load(path)
    # The exporter names dims it cannot see are fixed (gpt2's sequence dim
    # comes out as "MatMullogits_dim_1"); declare the shape we mean.
    (output,) = proto.graph.output
    dims = output.type.tensor_type.shape.dim
    want = MODELS[name]["logits"]
    if output.name != "logits" or len(dims) != len(want):
        fail(f"{path}: output {output.name} of rank {len(dims)}, "
             f"want logits of rank {len(want)}")
    for d, w in zip(dims, want):
        if isinstance(w, int):
            if d.HasField("dim_value") and d.dim_value != w:
                fail(f"{path}: logits has dim {d.dim_value}, want {w}")
            d.dim_value = w
        else:
            d.dim_param = w
    onnx.checker.check_model(proto, full_check=True)
    onnx.save(proto, path)
    inits = {t.name: t for t in proto.graph.initializer}
    if len(inits) != len(proto.graph.initializer):
        fail(f"{path}: duplicate initializer names")
    params = dict(model.named_parameters())
    missing = sorted(set(params) - set(inits))
    if missing:
        fail(f"{path}: parameters that are not initializers: {missing}; "
             f"initializers: {sorted(inits)}")
    # Loom trains the floating-point initializers: they must be exactly the
    # parameters (no copy of a tied weight, no folded constant).
    floats = {n for n, t in inits.items()
              if t.data_type in (onnx.TensorProto.FLOAT,
                                 onnx.TensorProto.DOUBLE,
                                 onnx.TensorProto.FLOAT16,
                                 onnx.TensorProto.BFLOAT16)}
    if floats != set(params):
        fail(f"{path}: float initializers {sorted(floats - set(params))} "
             f"are not parameters")
    buffers = set(model.state_dict()) - set(params)
    others = sorted(set(inits) - set(params) - buffers)
    if others:
        fail(f"{path}: initializers that are not state_dict keys: {others}")
    graph_inputs = [i.name for i in proto.graph.input]
    if graph_inputs != [input_name]:
        fail(f"{path}: graph inputs {graph_inputs}, want [{input_name}]")
    for n, p in params.items():
        value = onnx.numpy_helper.to_array(inits[n])
        if not np.array_equal(value, p.detach().numpy()):
            fail(f"{path}: initializer {n} differs from the parameter")
    print(f"wrote {path}: {len(params)} parameters, "
          f"{sum(p.numel() for p in params.values())} elements")
    return path


def make_data(outdir):
    g = torch.Generator().manual_seed(SEED + 1)
    x = torch.randn(SAMPLES, 16, generator=g)
    labels = torch.randint(0, 10, (SAMPLES,), generator=g)
    targets = torch.randn(SAMPLES, 10, generator=g)
    # Token streams of 17: input_ids are the first 16, labels the next token.
    stream = torch.randint(0, 100, (SAMPLES, 17), generator=g)
    input_ids = stream[:, :16].clone()
    next_ids = stream[:, 1:].clone()
    # ignore_index: the last position of every third sample, plus a few
    # scattered positions, so that every micro-batch has some.
    next_ids[::3, -1] = IGNORE_INDEX
    for s, t in [(1, 0), (2, 7), (4, 3), (5, 15), (7, 9), (10, 12)]:
        next_ids[s, t] = IGNORE_INDEX
    data = {
        "mlp.data.npz": {"x": x.numpy(), "labels": labels.numpy()},
        "mlp.mse.npz": {"x": x.numpy(), "targets": targets.numpy()},
        "gpt2.data.npz": {"input_ids": input_ids.numpy(),
                          "labels": next_ids.numpy()},
    }
    for name, arrays in data.items():
        np.savez(os.path.join(outdir, name), **arrays)
        print("wrote", os.path.join(outdir, name))
    return {name: {k: torch.from_numpy(v) for k, v in arrays.items()}
            for name, arrays in data.items()}


# ---------------------------------------------------------------------------
# Training.

def micro_batch(arrays, j):
    """Micro-batch j: samples (j*BATCH + i) mod SAMPLES, i < BATCH."""
    idx = torch.tensor([(j * BATCH + i) % SAMPLES for i in range(BATCH)])
    return {k: v[idx] for k, v in arrays.items()}


def micro_loss(model, cfg, batch):
    logits = model(batch[MODELS[cfg["model"]]["inputs"][0]])
    labels = batch[cfg["labels"]]
    if cfg["loss"] == "mse":
        return F.mse_loss(logits, labels)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                           labels.reshape(-1), ignore_index=IGNORE_INDEX,
                           label_smoothing=cfg.get("label_smoothing", 0.0))


def lr_factor(cfg):
    warmup = cfg.get("warmup", 0)
    schedule = cfg["schedule"]
    total = STEPS

    def factor(s):
        if s < warmup:
            return (s + 1) / warmup
        if schedule == "constant":
            return 1.0
        progress = min(1.0, (s - warmup) / max(1, total - warmup))
        return 0.5 * (1.0 + math.cos(math.pi * progress))
    return factor


def make_optimizer(cfg, params):
    kw = {"lr": cfg["lr"]}
    for key in ("momentum", "nesterov", "betas", "eps", "weight_decay"):
        if key in cfg:
            kw[key] = cfg[key]
    cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam,
           "adamw": torch.optim.AdamW}[cfg["optimizer"]]
    return cls(params, **kw)


def global_norm(params):
    """The norm clip_grad_norm_ computes (before it clips)."""
    return torch.norm(torch.stack([torch.norm(p.grad.detach(), 2.0)
                                   for p in params]), 2.0)


def train(cfg, state, arrays):
    model = new_model(cfg["model"], state)
    model.train()
    freeze = cfg.get("freeze")
    named = []
    for name, p in model.named_parameters():
        # std::regex_search (ECMAScript) and re.search agree on these.
        if freeze is not None and re.search(freeze, name):
            p.requires_grad_(False)
        else:
            named.append((name, p))
    if freeze is not None and len(named) == len(list(model.parameters())):
        fail(f"--freeze {freeze} matches no parameter")
    params = [p for _, p in named]
    out = {}

    # The first micro-batch's gradient at the initial parameters.
    grads = torch.autograd.grad(micro_loss(model, cfg, micro_batch(arrays, 0)),
                                params)
    for (name, _), g in zip(named, grads):
        out["grad/" + name] = g.numpy().astype(np.float32)

    k_acc = cfg.get("accumulate", 1)
    opt = make_optimizer(cfg, params)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_factor(cfg))
    losses, lrs, norms = [], [], []
    for step in range(STEPS):
        lrs.append(opt.param_groups[0]["lr"])
        step_losses = []
        for k in range(k_acc):
            loss = micro_loss(model, cfg, micro_batch(arrays, step * k_acc + k))
            (loss / k_acc).backward()
            step_losses.append(loss.item())
        if "clip" in cfg:
            norm = torch.nn.utils.clip_grad_norm_(params, cfg["clip"])
        else:
            norm = global_norm(params)
        norms.append(norm.item())
        losses.append(sum(step_losses) / k_acc)
        opt.step()
        sched.step()
        opt.zero_grad()
    for name, p in named:
        out["param/" + name] = p.detach().numpy().astype(np.float32)
    out["loss"] = np.array(losses, np.float32)
    out["lr"] = np.array(lrs, np.float32)
    out["grad_norm"] = np.array(norms, np.float32)
    return out


def loomc_flags(cfg):
    def num(v):
        return repr(float(v))
    flags = ["--loss", cfg["loss"], "--logits", "logits",
             "--labels", cfg["labels"]]
    if "label_smoothing" in cfg:
        flags += ["--label-smoothing", num(cfg["label_smoothing"])]
    flags += ["--optimizer", cfg["optimizer"], "--lr", num(cfg["lr"])]
    if "momentum" in cfg:
        flags += ["--momentum", num(cfg["momentum"])]
    if cfg.get("nesterov"):
        flags += ["--nesterov"]
    if "betas" in cfg:
        flags += ["--betas", ",".join(num(b) for b in cfg["betas"])]
    if "eps" in cfg:
        flags += ["--eps", num(cfg["eps"])]
    if "weight_decay" in cfg:
        flags += ["--weight-decay", num(cfg["weight_decay"])]
    if "warmup" in cfg:
        flags += ["--warmup", str(cfg["warmup"])]
    flags += ["--lr-schedule", cfg["schedule"], "--total-steps", str(STEPS)]
    if "clip" in cfg:
        flags += ["--clip-norm", num(cfg["clip"])]
    if "accumulate" in cfg:
        flags += ["--accumulate", str(cfg["accumulate"])]
    if "freeze" in cfg:
        flags += ["--freeze", cfg["freeze"]]
    return flags


def check_reference(ref, onnx_path):
    """grad/ and param/ keys name initializers of the model."""
    inits = {t.name for t in onnx.load(onnx_path).graph.initializer}
    for key in ref:
        if key.startswith(("grad/", "param/")):
            name = key.split("/", 1)[1]
            if name not in inits:
                fail(f"{key}: {name} is not an initializer of {onnx_path}")
    if ({k[5:] for k in ref if k.startswith("grad/")} !=
            {k[6:] for k in ref if k.startswith("param/")}):
        fail("grad/ and param/ keys differ")


def main(outdir):
    torch.set_num_threads(1)
    os.makedirs(outdir, exist_ok=True)

    torch.manual_seed(SEED)
    states, onnx_paths = {}, {}
    examples = {"mlp": torch.randn(2, 16),
                "gpt2": torch.randint(0, 100, (2, 16))}
    for name in MODELS:
        model = MODELS[name]["cls"]()
        distinct_norms(model)
        states[name] = {k: v.clone() for k, v in model.state_dict().items()}
        onnx_paths[name] = export(model, name, examples[name], outdir)

    data = make_data(outdir)

    configs = {}
    for cname, cfg in CONFIGS.items():
        torch.manual_seed(SEED)
        ref = train(cfg, states[cfg["model"]], data[cfg["data"]])
        check_reference(ref, onnx_paths[cfg["model"]])
        ref_name = f"ref_{cname}.npz"
        np.savez(os.path.join(outdir, ref_name), **ref)
        configs[cname] = {
            "model": cfg["model"] + ".onnx",
            "data": cfg["data"],
            "loomc": loomc_flags(cfg),
            "loom_run": ["--steps", str(STEPS), "--batch", str(BATCH)],
            "reference": ref_name,
        }
        clipped = (f", clipped {int((ref['grad_norm'] > cfg['clip']).sum())}"
                   f"/{STEPS} steps" if "clip" in cfg else "")
        print(f"wrote {ref_name}: loss",
              " ".join(f"{v:.4f}" for v in ref["loss"]) + clipped)
    with open(os.path.join(outdir, "configs.json"), "w") as f:
        json.dump(configs, f, indent=2)
        f.write("\n")
    print("wrote", os.path.join(outdir, "configs.json"))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1
         else os.path.dirname(os.path.abspath(__file__)))
