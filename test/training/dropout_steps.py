#!/usr/bin/env python3
"""Training dropout draws a new mask every step (docs/training.md, "Random
ops"): an MLP with an ONNX Dropout (ratio 0.5, seed 3, training_mode true)
trained 5 SGD steps by loom.Trainer, against PyTorch 1.13 fed the masks of
this file's NumPy reimplementation of the generator (random_dropout: op key
= the seed, counter = the micro-step): the loss of every step and the
parameters after it (which carry that step's gradients) match, and they do
not match training with step 0's mask every step (the old fixed mask). The
same model compiled with --recompute all (the forward's dropout cloned into
the backward) trains the same: clones draw the same mask within a step; and
so does the step's CUDA program on the CUDA simulator.

usage: dropout_steps.py PYTHONPATH TMPDIR
"""
import os
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "runtime"))
import random_ops  # noqa: E402  (the generator's NumPy reimplementation)

B, D, H, C = 8, 6, 16, 3
RATIO, SEED, LR, STEPS = 0.5, 3, 0.1, 5


def mask(step, shape):
    """random_dropout's mask of micro-step `step`: 1 / (1 - ratio) or 0."""
    n = int(np.prod(shape))
    z = random_ops.draws(SEED, 0, 0, step, n)
    keep = (z >> np.uint64(40)) >= np.uint64(int(np.ceil(RATIO * (1 << 24))))
    return (keep.astype(np.float32) / np.float32(1 - RATIO)).reshape(shape)


def reference(w1, w2, xs, ys, masks):
    """Losses and parameters after each step, PyTorch's autograd."""
    w1 = torch.tensor(w1, requires_grad=True)
    w2 = torch.tensor(w2, requires_grad=True)
    losses, params = [], []
    for x, y, m in zip(xs, ys, masks):
        h = torch.relu(torch.tensor(x) @ w1) * torch.tensor(m)
        loss = torch.nn.functional.mse_loss(h @ w2, torch.tensor(y))
        w1.grad = w2.grad = None
        loss.backward()
        with torch.no_grad():
            w1 -= LR * w1.grad
            w2 -= LR * w2.grad
        losses.append(loss.item())
        params.append((w1.detach().numpy().copy(), w2.detach().numpy().copy()))
    return losses, params


def main():
    sys.path.insert(0, sys.argv[1])
    import loom  # noqa: E402

    tmp = sys.argv[2]
    os.makedirs(tmp, exist_ok=True)
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((D, H)).astype(np.float32) * 0.5
    w2 = rng.standard_normal((H, C)).astype(np.float32) * 0.5
    xs = rng.standard_normal((STEPS, B, D)).astype(np.float32)
    ys = rng.standard_normal((STEPS, B, C)).astype(np.float32)

    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["a"]),
         helper.make_node("Relu", ["a"], ["r"]),
         helper.make_node("Dropout", ["r", "ratio", "train"], ["d"], seed=SEED),
         helper.make_node("MatMul", ["d", "w2"], ["y"])],
        "dropout_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, D])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, C])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2"),
         numpy_helper.from_array(np.array(RATIO, np.float32), "ratio"),
         numpy_helper.from_array(np.array(True), "train")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)])
    onnx.checker.check_model(m)
    path = os.path.join(tmp, "dropout_mlp.onnx")
    onnx.save(m, path)

    masks = [mask(t, (B, H)) for t in range(STEPS)]
    ref_losses, ref_params = reference(w1, w2, xs, ys, masks)
    fixed_losses, _ = reference(w1, w2, xs, ys, [masks[0]] * STEPS)
    failures = []

    def check(cond, what):
        print(("ok: " if cond else "FAIL: ") + what)
        if not cond:
            failures.append(what)

    check(all(not np.array_equal(masks[0], mk) for mk in masks[1:]),
          "the NumPy masks of steps 1-4 differ from step 0's")
    for device, recompute in (("cpu", "none"), ("cpu", "all"),
                              ("cuda-sim", "none")):
        target = "cuda" if device == "cuda-sim" else "cpu"
        art = loom.compile(path, loss="mse", optimizer="sgd", lr=LR,
                           recompute=recompute, target=target,
                           output=os.path.join(
                               tmp, f"step-{recompute}-{target}.loom"))
        trainer = loom.Trainer(art, device=device)
        recompute = f"{recompute} on {device}"
        losses = []
        for t in range(STEPS):
            r = trainer.step({"x": xs[t], "labels": ys[t]})
            losses.append(float(np.asarray(r["loss"])))
            p = trainer.parameters()
            check(np.allclose(p["w1"], ref_params[t][0], rtol=1e-5, atol=1e-6)
                  and np.allclose(p["w2"], ref_params[t][1], rtol=1e-5,
                                  atol=1e-6),
                  f"recompute {recompute}, step {t}: the parameters equal "
                  f"PyTorch's with the step's mask")
        check(np.allclose(losses, ref_losses, rtol=1e-5, atol=1e-7),
              f"recompute {recompute}: losses {np.round(losses, 5).tolist()} "
              f"equal PyTorch's {np.round(ref_losses, 5).tolist()}")
        check(not np.allclose(losses[1:], fixed_losses[1:], rtol=1e-3),
              f"recompute {recompute}: they differ from fixed-mask training "
              f"{np.round(fixed_losses, 5).tolist()}")
    if failures:
        sys.exit(f"dropout_steps: {len(failures)} checks failed")
    print("dropout_steps: all checks passed")


if __name__ == "__main__":
    main()
