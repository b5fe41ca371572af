#!/usr/bin/python3
"""Summarizes a `loom-run TRAIN.loom --data ... --profile TRACE.json` trace:
per micro-batch run (the first, which allocates, left out), the time and
kernel count of each kind of kernel, and the kernels that take the most.

Kinds: GEMM (matmul_f32: oneDNN or OpenBLAS), fill (zeroing GEMM outputs
and accumulators), transpose (materialized), model (the other kernels of
the forward and backward of the model's nodes: elementwise, softmax,
layer norm, reductions, gathers), optimizer (kernels located at no model
node, named by the function: gradient norm, clipping, the AdamW update;
PyTorch-exported node names start with '/'). Kernels are named
'fusion_N: OP SHAPE @SOURCE', one event per linalg op of a fused region.

usage: /usr/bin/python3 profile_summary.py TRACE.json [--top K]
"""
import argparse
import collections
import json
import re


def kind(op, source):
    if not source.startswith("/"):
        return "optimizer"
    if op.startswith("matmul"):
        return "GEMM"
    if op in ("fill", "transpose"):
        return op
    return "model"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("trace")
    p.add_argument("--top", type=int, default=15)
    a = p.parse_args()
    events = json.load(open(a.trace))["traceEvents"]
    runs = sorted((e for e in events if e["cat"] == "run"),
                  key=lambda e: e["ts"])[1:]
    if not runs:
        raise SystemExit("profile_summary.py: the trace has fewer than 2 runs")
    kernels = sorted((e for e in events if e["cat"] == "kernel"),
                     key=lambda e: e["ts"])
    per_kind = collections.defaultdict(float)
    count = collections.Counter()
    per_name = collections.defaultdict(float)
    run_us = sum(r["dur"] for r in runs)
    for r in runs:
        start, end = r["ts"], r["ts"] + r["dur"]
        for e in kernels:
            if e["ts"] < start or e["ts"] > end:
                continue
            m = re.match(r"fusion_\d+: (\S+?)(?:\(.*\))? (\S*) ?@(.*)",
                         e["name"])
            op, source = (m.group(1), m.group(3)) if m else (e["name"], "")
            k = kind(op, source)
            per_kind[k] += e["dur"]
            count[k] += 1
            per_name[e["name"][:120]] += e["dur"]
    n = len(runs)
    print(f"{n} runs: {run_us / n / 1e3:.2f} ms a run, "
          f"{sum(count.values()) // n} kernels a run")
    for k, us in sorted(per_kind.items(), key=lambda kv: -kv[1]):
        print(f"  {k:10s} {us / n / 1e3:9.2f} ms {100 * us / run_us:5.1f}%"
              f"  {count[k] // n:5d} kernels")
    print(f"top {a.top} kernels (ms a run):")
    for name, us in sorted(per_name.items(), key=lambda kv: -kv[1])[:a.top]:
        print(f"  {us / n / 1e3:8.3f}  {name}")


if __name__ == "__main__":
    main()
