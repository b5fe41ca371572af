#!/usr/bin/python3
"""Mixed precision tracks f32: the GPT-2-style model trained 200 steps in
f32, bf16 and f16 (with dynamic loss scaling) from the same initial
weights on the same batches. The losses logged every 10 steps must agree
with f32's within 0.01 + 2% of f32's loss (bf16 keeps 8 significant bits,
so per-op rounding of ~0.4% is expected; the model memorizes its 12
samples, the loss falling from ~8 to ~0.01).

  check_precision.py BINDIR [--steps N] [--precisions bf16,f16]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = ["--loss", "cross_entropy", "--logits", "logits", "--labels",
         "labels", "--optimizer", "adamw", "--lr", "0.003", "--batch", "4"]


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write("$ " + " ".join(cmd) + "\n" + r.stdout + r.stderr)
        raise SystemExit(1)
    return r.stdout + r.stderr


def losses(bindir, tmp, precision, steps):
    art = os.path.join(tmp, precision + ".loom")
    run([os.path.join(bindir, "loomc"), "train",
         os.path.join(HERE, "gpt2.onnx"), *TRAIN, "--precision", precision,
         "-o", art])
    out = run([os.path.join(bindir, "loom-run"), art, "--data",
               os.path.join(HERE, "gpt2.data.npz"), "--steps", str(steps),
               "--batch", "4", "--log-every", "10"])
    rows = re.findall(r"^step (\d+)/\d+\s+loss (\S+)", out, re.M)
    overflows = len(re.findall(r"gradients overflowed", out))
    return {int(s): float(l) for s, l in rows}, overflows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bindir")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--precisions", default="bf16,f16")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ref, _ = losses(args.bindir, tmp, "f32", args.steps)
        failed = False
        for p in args.precisions.split(","):
            got, overflows = losses(args.bindir, tmp, p, args.steps)
            worst = 0.0
            for step, want in sorted(ref.items()):
                have = got.get(step)
                allowed = 0.01 + 0.02 * abs(want)
                if have is None or abs(have - want) > allowed:
                    print(f"{p}: step {step}: loss {have}, f32 {want} "
                          f"(allowed difference {allowed:.4g})")
                    failed = True
                    continue
                worst = max(worst, abs(have - want) / allowed)
            last = max(ref)
            print(f"{p}: {len(ref)} logged steps within tolerance (worst "
                  f"{worst:.0%} of it); step {last}: loss {got.get(last)} "
                  f"vs f32 {ref[last]}; {overflows} overflowed steps")
        if failed:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
