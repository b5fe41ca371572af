#!/usr/bin/env python3
"""The CUDA training step of GPT-2 small (124M) uses the machine (CTest
cuda-kernels-at-scale; no GPU needed).

GPT-2 small (bench/scale/make_gpt2.py: 12 x 768, vocabulary 50257, 128
tokens, batch 8; made into a temporary folder unless BUILD/bench/scale
has it) is compiled with `loomc train --target cuda` in f32 and in bf16
(AdamW with clipping, as bench/gpu's scale section; bf16 with
--fused-attention=on), then every kernel of
both with `loom-nvrtc-check --arch sm_90 --no-spills --check-geometry`:
no kernel may spill (ptxas's report), and no kernel may touch a buffer of
more than 1M elements on fewer than 132 blocks (an H100's SMs). Exit 77
when NVRTC is not available.

  cuda-kernels-at-scale.py LOOMC LOOM_NVRTC_CHECK BUILD_DIR
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MAKE = os.path.join(HERE, "..", "..", "bench", "scale", "make_gpt2.py")


def main():
    loomc, check, build = sys.argv[1:4]
    with tempfile.TemporaryDirectory() as tmp:
        scale = os.path.join(build, "bench", "scale")
        onnx = os.path.join(scale, "gpt2_small.onnx")
        if not os.path.exists(onnx):
            p = subprocess.run(["/usr/bin/python3", MAKE, "--size", "small",
                                "--batch", "8", "--seq", "128", "-o", tmp],
                               capture_output=True, text=True)
            if p.returncode:
                print("make_gpt2.py failed:\n" + p.stdout + p.stderr)
                return 1
            onnx = os.path.join(tmp, "gpt2_small.onnx")
        artifacts = []
        for precision in ("f32", "bf16"):
            art = os.path.join(tmp, f"gpt2_small.{precision}.cuda.loom")
            cmd = [loomc, "train", onnx, "--loss", "cross_entropy", "--logits",
                   "logits", "--labels", "labels", "--optimizer", "adamw",
                   "--lr", "1e-4", "--weight-decay", "0.01", "--lr-schedule",
                   "constant", "--clip-norm", "1.0", "--batch", "8",
                   "--precision", precision, "--target", "cuda",
                   "--no-initial-values", "-o", art]
            if precision == "bf16":
                # The fused attention's kernels too (auto leaves 128
                # tokens unfused).
                cmd.append("--fused-attention=on")
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode:
                print(f"loomc train --precision {precision} failed:\n"
                      + p.stderr)
                return 1
            artifacts.append(art)
        p = subprocess.run([check, "--arch", "sm_90", "--no-spills",
                            "--check-geometry", *artifacts],
                           capture_output=True, text=True)
        print(p.stdout + p.stderr, end="")
        return p.returncode


if __name__ == "__main__":
    sys.exit(main())
