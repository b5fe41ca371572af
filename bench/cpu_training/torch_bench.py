#!/usr/bin/python3
"""Times training steps of a benchmark model in PyTorch eager, the way
`loom-run --data` times Loom's: the model and initial weights of
make_training_models.py (NAME.pt), micro-batch k = samples
(k * B + i) mod count of NAME.npz, cross-entropy, AdamW with clipping of the global gradient norm,
a constant learning rate. A step is: cut the batch, zero the gradients,
forward, loss, backward, clip_grad_norm_, optimizer step (and .item() of
the loss, which Loom's trainer also reads back). The first --warmup steps
are not counted. PyTorch and OpenBLAS get --threads threads; OpenMP
waits passively (OMP_WAIT_POLICY, unless set).

Prints the loss line and the step-time line in loom-run's format:
  step N/N  loss L (the mean over all steps)
  per step: min X ms, median Y ms, mean Z ms (M steps after W warm-up)

NAME is mlp or gpt2 (make_training_models.py), or gpt2_SIZE: GPT-2 of
bench/scale/make_gpt2.py (tiny, small, medium, large), whose DIR holds
gpt2_SIZE.pt and gpt2_SIZE.npz.

usage: /usr/bin/python3 torch_bench.py DIR NAME --threads T --steps N
           --batch B [--warmup W] [--lr 1e-4] [--weight-decay 0.01]
           [--clip-norm 1.0] [--device cpu|cuda] [--compile] [--bf16]
(loss.item() synchronizes each step, on a GPU too.)
"""
import argparse
import os
import sys
import time

import numpy as np


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("name", choices=["mlp", "gpt2", "gpt2_tiny", "gpt2_small",
                                    "gpt2_medium", "gpt2_large"])
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--clip-norm", type=float, default=1.0)
    p.add_argument("--device", default="cpu",
                   help="cpu or cuda (bench/gpu: the step on the GPU)")
    p.add_argument("--compile", action="store_true",
                   help="the model through torch.compile")
    p.add_argument("--bf16", action="store_true",
                   help="mixed precision: the forward and the loss under "
                        "bf16 autocast (f32 weights and optimizer), as "
                        "loomc train --precision bf16")
    a = p.parse_args()
    # OpenBLAS (PyTorch's GEMM here, a pthreads build) starts one thread per
    # core unless told before it loads. Its threads run the GEMMs while
    # PyTorch's OpenMP threads wait: spinning (OpenMP's default), they took
    # the cores from OpenBLAS's (the 2-thread GPT-2 step 0.7 s instead of
    # 0.33 s); passive waiting is PyTorch's better configuration here.
    os.environ["OPENBLAS_NUM_THREADS"] = str(a.threads)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from make_training_models import MODELS, new_model
    torch.set_num_threads(a.threads)

    if a.name in MODELS:
        ctor, input_name, _ = MODELS[a.name]
        seeded = lambda: new_model(a.name)  # noqa: E731
    else:  # bench/scale
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(
            __file__)), "..", "scale"))
        import make_gpt2
        input_name = "input_ids"
        seeded = ctor = lambda: make_gpt2.new_model(  # noqa: E731
            a.name[len("gpt2_"):])
    weights = os.path.join(a.dir, a.name + ".pt")
    if os.path.exists(weights):
        model = ctor()
        model.load_state_dict(torch.load(weights))
    else:  # bench/gpu carries no .pt: the same seeded initialization
        model = seeded()
    model.train()
    model.to(a.device)
    step_model = torch.compile(model) if a.compile else model
    data = np.load(os.path.join(a.dir, a.name + ".npz"))
    x = torch.from_numpy(data[input_name]).to(a.device)
    labels = torch.from_numpy(data["labels"]).to(a.device)
    count = x.shape[0]
    params = list(model.parameters())
    opt = torch.optim.AdamW(params, lr=a.lr, weight_decay=a.weight_decay)

    times, losses = [], []
    for k in range(a.steps):
        start = time.perf_counter()
        idx = torch.tensor([(k * a.batch + i) % count for i in range(a.batch)],
                           device=a.device)
        xb, yb = x[idx], labels[idx]
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=a.device.split(":")[0],
                            dtype=torch.bfloat16, enabled=a.bf16):
            logits = step_model(xb)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                   yb.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, a.clip_norm)
        opt.step()
        losses.append(loss.item())
        times.append((time.perf_counter() - start) * 1e3)

    print(f"step {a.steps}/{a.steps}  loss {np.mean(losses):.6g}")
    ms = sorted(times[a.warmup:])
    if ms:
        print(f"per step: min {ms[0]:.3f} ms, median {ms[len(ms) // 2]:.3f} "
              f"ms, mean {sum(ms) / len(ms):.3f} ms ({len(ms)} steps after "
              f"{a.warmup} warm-up)")


if __name__ == "__main__":
    main()
