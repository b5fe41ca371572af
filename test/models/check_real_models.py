#!/usr/bin/env python3
"""check_real_models.py LOOM_RUN MODELS_DIR ARTIFACT_DIR OUT_DIR: runs each
compiled model of make_real_models.py (ARTIFACT_DIR/NAME.loom) with
loom-run on its inputs at every saved shape and compares its outputs with
PyTorch's (rtol 1e-4, atol 1e-4). Prints 'NAME sK shape ok' per run."""
import glob
import os
import re
import subprocess
import sys

import numpy as np
import onnx

loom_run, models, artifacts, out = sys.argv[1:5]
status = 0
for name in ("gpt2", "bert", "vit"):
    graph = onnx.load(os.path.join(models, name + ".onnx"),
                      load_external_data=False).graph
    inputs = [i.name for i in graph.input]
    outputs = [o.name for o in graph.output]
    shapes = sorted({int(m.group(1)) for f in glob.glob(
        os.path.join(models, name + ".s*.input_0.npy"))
        for m in [re.search(r"\.s(\d+)\.input_0", f)]})
    for k in shapes:
        args = [loom_run, os.path.join(artifacts, name + ".loom"),
                "--out-dir", out]
        for j, n in enumerate(inputs):
            args += ["--in", f"{n}={models}/{name}.s{k}.input_{j}.npy"]
        p = subprocess.run(args, capture_output=True, text=True)
        if p.returncode:
            print(f"{name} s{k}: loom-run failed: {p.stderr.strip()}")
            status = 1
            continue
        x0 = np.load(f"{models}/{name}.s{k}.input_0.npy")
        good = True
        for j, n in enumerate(outputs):
            want = np.load(f"{models}/{name}.s{k}.output_{j}.npy")
            got = np.load(os.path.join(out, n + ".npy"))
            if got.shape != want.shape or not np.allclose(
                    got, want, rtol=1e-4, atol=1e-4):
                err = (np.abs(got - want).max() if got.shape == want.shape
                       else f"shape {got.shape} vs {want.shape}")
                print(f"{name} s{k} {n}: MISMATCH {err}")
                status = good = 0
        if good:
            print(f"{name} s{k} {'x'.join(map(str, x0.shape))} ok")
sys.exit(status)
