#!/usr/bin/env python3
"""Causal self-attention forward (batch 8, 12 heads, S tokens, head size 64,
f16) on the GPU: Loom's fused kernel, Loom unfused (cuBLASLt matmuls and a
softmax kernel, `loomc --fused-attention=off`), PyTorch's
scaled_dot_product_attention (FlashAttention on Hopper) and PyTorch eager
written op by op, all timed on the device in the same run.

  attention_bench.py prepare LOOMC DIR   # here: DIR/attn_S.{fused,unfused}.loom
  attention_bench.py run LOOM_RUN DIR    # on the GPU
(4096 tokens: fused only; unfused, its artifact is too large to carry.)

Loom's times are the device time of its steps (copies of inputs and
outputs excluded) from loom-run --profile, the median over the runs after
the first; PyTorch's from CUDA events around the same computation.
Prints one line per size, ratios last.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

SIZES = (1024, 4096)
B, H, D = 8, 12, 64


def loom_ms(loom_run, artifact, inputs, runs=12):
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace.json")
        args = [loom_run, artifact, "--device", "cuda", "--bench",
                str(runs), "--profile", trace]
        for i, path in enumerate(inputs):
            args += ["--in", f"input_{i}={path}"]
        p = subprocess.run(args, capture_output=True, text=True, timeout=300)
        if p.returncode:
            raise RuntimeError(p.stderr.strip().splitlines()[-1])
        events = json.load(open(trace))["traceEvents"]
    runs_ = sorted((e for e in events if e["name"] == "run"),
                   key=lambda e: e["ts"])
    steps = [e for e in events
             if e["name"] != "run" and not e["name"].startswith("copy")]
    per = []
    for r in runs_[1:]:
        lo, hi = r["ts"], r["ts"] + r["dur"]
        per.append(sum(s["dur"] for s in steps if lo <= s["ts"] <= hi + 1))
    return statistics.median(per) / 1e3


def torch_ms(fn, reps=20):
    import torch
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def prepare(loomc, root):
    """The attention written op by op (as torch.onnx writes it: a constant
    "key after query" mask, fill -inf), compiled fused and unfused."""
    os.makedirs(root, exist_ok=True)
    for s in SIZES:
        t = f"tensor<{B}x{H}x{s}x{D}xf16>"
        st = f"tensor<{B}x{H}x{s}x{s}xf16>"
        bits = np.packbits(np.triu(np.ones((s, s), bool), 1).reshape(-1),
                           bitorder="little")
        text = (f"func.func @attn(%q: {t}, %k: {t}, %v: {t}) -> {t} {{\n"
                f"  %s = graph.matmul %q, %k {{transpose_rhs}} : ({t}, {t}) "
                f"-> {st}\n"
                f"  %c = graph.constant dense<8.0> : tensor<f16>\n"
                f"  %d = graph.div %s, %c : ({st}, tensor<f16>) -> {st}\n"
                f"  %m = graph.constant dense<\"0x{bits.tobytes().hex().upper()}"
                f"\"> : tensor<{s}x{s}xi1>\n"
                f"  %f = graph.constant dense<0xFC00> : tensor<f16>\n"
                f"  %w = graph.where %m, %f, %d : (tensor<{s}x{s}xi1>, "
                f"tensor<f16>, {st}) -> {st}\n"
                f"  %p = graph.softmax %w {{axis = 3 : i64}} : ({st}) -> {st}\n"
                f"  %o = graph.matmul %p, %v : ({st}, {t}) -> {t}\n"
                f"  return %o : {t}\n}}\n")
        src = os.path.join(root, f"attn_{s}.mlir")
        with open(src, "w") as f:
            f.write(text)
        # Unfused, the 4096-token artifact holds its mask as bytes (109 MB):
        # too large to carry to the GPU machine.
        kinds = [("fused", ["--fused-attention=on"])]
        if s <= 1024:
            kinds.append(("unfused", ["--fused-attention=off"]))
        for kind, flags in kinds:
            subprocess.run([loomc, "compile", src, "--target", "cuda",
                            *flags, "-o",
                            os.path.join(root, f"attn_{s}.{kind}.loom")],
                           check=True, timeout=600)
        os.remove(src)
    return 0


def main():
    if sys.argv[1] == "prepare":
        return prepare(sys.argv[2], sys.argv[3])
    loom_run, root = sys.argv[2], sys.argv[3]
    import torch
    import torch.nn.functional as F
    for s in SIZES:
        fused = os.path.join(root, f"attn_{s}.fused.loom")
        unfused = os.path.join(root, f"attn_{s}.unfused.loom")
        if not os.path.exists(fused):
            continue
        rng = np.random.default_rng(0)
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            arrays = []
            for name in "qkv":
                a = rng.standard_normal((B, H, s, D)).astype(np.float16)
                path = os.path.join(tmp, name + ".npy")
                np.save(path, a)
                paths.append(path)
                arrays.append(a)
            line = f"causal attention f16 {B}x{H}x{s}x{D}:"
            try:
                lf = loom_ms(loom_run, fused, paths)
                line += f" Loom fused {lf:.3f} ms"
            except RuntimeError as e:
                print(line + f" Loom fused failed: {e}")
                continue
            lu = None
            if os.path.exists(unfused):
                try:
                    lu = loom_ms(loom_run, unfused, paths)
                    line += f", Loom unfused {lu:.3f} ms"
                except RuntimeError as e:
                    line += f", Loom unfused failed ({e})"
        q, k, v = (torch.from_numpy(a).cuda() for a in arrays)
        sdpa = torch_ms(lambda: F.scaled_dot_product_attention(
            q, k, v, is_causal=True))
        mask = torch.triu(torch.ones(s, s, dtype=torch.bool,
                                     device="cuda"), 1)

        def eager():
            w = (q @ k.transpose(-1, -2)) / 8.0
            w = w.masked_fill(mask, float("-inf"))
            return torch.softmax(w.float(), -1).half() @ v
        try:
            ea = torch_ms(eager)
        except RuntimeError:  # out of memory at long sequences
            ea = float("nan")
        line += (f", PyTorch SDPA {sdpa:.3f} ms, PyTorch eager {ea:.3f} ms; "
                 f"fused/SDPA {lf / sdpa:.2f}, fused/eager {lf / ea:.2f}")
        if lu:
            line += f", fused/unfused {lf / lu:.2f}"
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
