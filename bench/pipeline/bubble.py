#!/usr/bin/python3
"""Measured pipeline bubble per schedule against its analytic value.

Makes a deep MLP (LAYERS Gemm+Relu layers of WIDTH, ONNX), compiles it
with `loomc train --pipeline-stages S --micro-batches M --pipeline-schedule NAME`
for each schedule, trains STEPS steps under `loom-launch --nproc S` with
LOOM_PIPELINE_TRACE set (each rank writes when each F, B, I and W started
and ended), and for each step after the first computes

  bubble = 1 - (time the ranks spent computing) / (S * makespan)

with the makespan from the first computation's start to the last one's
end (the optimizer step after them is not part of the schedule). Prints
the median over the steps beside the analytic bubble and the one
`loomc schedule` simulates with unit costs, and the per-part times.

  bubble.py BIN_DIR WORK_DIR [--stages S] [--micro-batches M] [--steps N]
            [--layers L] [--width W] [--batch B] [--threads T]
"""

import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SCHEDULES = ["gpipe", "1f1b", "interleaved", "zb-h1"]


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
    return r.stdout + r.stderr


def make_model(path, layers, width, classes):
    rng = np.random.default_rng(0)
    nodes, inits = [], []
    x = "x"
    for i in range(layers):
        out = width if i + 1 < layers else classes
        w = rng.normal(0, 1 / np.sqrt(width), (out, width)).astype(np.float32)
        b = np.zeros(out, np.float32)
        inits += [numpy_helper.from_array(w, "l%d.weight" % i),
                  numpy_helper.from_array(b, "l%d.bias" % i)]
        y = "logits" if i + 1 == layers else "h%d" % i
        nodes.append(helper.make_node("Gemm", [x, "l%d.weight" % i,
                                               "l%d.bias" % i],
                                      [y if i + 1 == layers else y + "_pre"],
                                      transB=1, name="/l%d/Gemm" % i))
        if i + 1 < layers:
            nodes.append(helper.make_node("Relu", [y + "_pre"], [y],
                                          name="/l%d/Relu" % i))
        x = y
    graph = helper.make_graph(
        nodes, "deep_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                       ["batch", width])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                       ["batch", classes])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 17)]), path)


def bubbles(prefix, stages):
    """Per step after the first: (bubble, {part: mean seconds})."""
    rows = []
    for f in glob.glob(prefix + ".rank*.jsonl"):
        with open(f) as fh:
            rows += [json.loads(line) for line in fh if line.strip()]
    steps = sorted({r["step"] for r in rows})
    out = []
    for step in steps[1:]:
        acts = [r for r in rows if r["step"] == step and
                r["action"] in ("F", "B", "I", "W")]
        if not acts:
            continue
        start = min(r["start_ns"] for r in acts)
        end = max(r["end_ns"] for r in acts)
        busy = sum(r["end_ns"] - r["start_ns"] for r in acts)
        parts = {}
        for r in acts:
            parts.setdefault(r["action"], []).append(
                (r["end_ns"] - r["start_ns"]) / 1e9)
        out.append((1 - busy / (stages * (end - start)), (end - start) / 1e9,
                    {k: statistics.mean(v) for k, v in parts.items()}))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bindir")
    ap.add_argument("work")
    ap.add_argument("--stages", type=int, default=2)
    ap.add_argument("--micro-batches", type=int, default=8)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    model = os.path.join(a.work, "deep_mlp.onnx")
    make_model(model, a.layers, a.width, 10)
    rng = np.random.default_rng(1)
    data = os.path.join(a.work, "data.npz")
    np.savez(data, x=rng.normal(size=(a.batch, a.width)).astype(np.float32),
             labels=rng.integers(0, 10, a.batch).astype(np.int64))
    loomc = os.path.join(a.bindir, "loomc")
    print("pipeline bubble: %d-layer MLP, width %d, batch %d in %d "
          "micro-batches, %d ranks x %d thread(s), median of %d steps" %
          (a.layers, a.width, a.batch, a.micro_batches, a.stages, a.threads,
           a.steps - 1))
    print("| schedule | measured bubble | analytic | simulated (F=I=W) | "
          "simulated (measured F, I, W) | step makespan ms | F ms | I ms | "
          "W ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in SCHEDULES:
        art = os.path.join(a.work, name + ".loom")
        run([loomc, "train", model, "-o", art, "--batch", str(a.batch),
             "--pipeline-stages", str(a.stages), "--micro-batches",
             str(a.micro_batches), "--pipeline-schedule", name, "--optimizer", "sgd",
             "--lr", "0.01"])
        prefix = os.path.join(a.work, name + ".trace")
        for f in glob.glob(prefix + ".rank*.jsonl"):
            os.remove(f)
        env = dict(os.environ, LOOM_PIPELINE_TRACE=prefix)
        run([os.path.join(a.bindir, "loom-launch"), "--nproc",
             str(a.stages), "--timeout", "300", "--",
             os.path.join(a.bindir, "loom-run"), art, "--data", data,
             "--batch", str(a.batch), "--steps", str(a.steps), "--threads",
             str(a.threads), "--log-every", str(a.steps)], env=env)
        got = bubbles(prefix, a.stages)
        if not got:
            sys.exit("%s: no trace (LOOM_PIPELINE_TRACE) was written" % name)
        bubble = statistics.median(b for b, _, _ in got)
        span = statistics.median(s for _, s, _ in got)
        parts = {k: statistics.median(p.get(k, 0) for _, _, p in got)
                 for k in ("F", "I", "W")}
        costs = ",".join("%.6f" % (1000 * parts[k]) for k in ("F", "I", "W"))
        sched = run([loomc, "schedule", "--pipeline-stages", str(a.stages),
                     "--micro-batches", str(a.micro_batches), "--pipeline-schedule",
                     name, "--costs", costs])
        # One simulation with unit costs (beside the analytic bubble), one
        # with the measured ones.
        m = re.search(r"bubble (\S+)% \(analytic (\S+)%\)", sched)
        simulated, analytic = (float(m.group(1)), float(m.group(2))) if m \
            else (float("nan"), float("nan"))
        m = re.search(r"transfer \S+: makespan \S+, bubble (\S+)%", sched)
        measured_costs = float(m.group(1)) if m else float("nan")
        print("| %s | %.1f%% | %.1f%% | %.1f%% | %.1f%% | %.1f | %.2f | %.2f "
              "| %.2f |" %
              (name, 100 * bubble, analytic, simulated, measured_costs,
               1000 * span, 1000 * parts["F"], 1000 * parts["I"],
               1000 * parts["W"]))


if __name__ == "__main__":
    main()
