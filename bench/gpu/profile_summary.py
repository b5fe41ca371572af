#!/usr/bin/env python3
"""Where a CUDA run's time goes, from loom-run's --profile Chrome trace.

  profile_summary.py TRACE.json [--top N]

The executor records one event per step of the launch sequence (a kernel,
a cuBLASLt matmul, the copies of inputs and outputs), timed with CUDA
events, and one "run" event per run timed on the host. Prints, per run
(the median over the runs after the first), the host time, the device
time by kind (copies, matmuls, kernels), and the N steps that take the
longest with their share.
"""
import argparse
import collections
import json
import statistics


def kind(name):
    if name.startswith("copy"):
        return "copies"
    if name.endswith("_gemm") or name.endswith("_gemm_epilogue"):
        return "matmuls"
    return "kernels"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()
    events = json.load(open(a.trace))["traceEvents"]
    runs = [e for e in events if e["name"] == "run"]
    steps = [e for e in events if e["name"] != "run"]
    if not runs:
        print("no runs in the trace")
        return 1
    # Each run's steps, in order: a step belongs to the run that holds it.
    per_run = []
    for r in sorted(runs, key=lambda e: e["ts"]):
        lo, hi = r["ts"], r["ts"] + r["dur"]
        per_run.append((r["dur"], [s for s in steps
                                   if lo <= s["ts"] <= hi + 1]))
    use = per_run[1:] or per_run
    host = statistics.median(d for d, _ in use) / 1e3
    by_name = collections.defaultdict(list)
    for _, ss in use:
        seen = collections.Counter()
        for s in ss:
            seen[s["name"]] += s["dur"]
        for n, d in seen.items():
            by_name[n].append(d)
    med = {n: statistics.median(v) / 1e3 for n, v in by_name.items()}
    device = sum(med.values())
    kinds = collections.Counter()
    counts = collections.Counter()
    for n, d in med.items():
        kinds[kind(n)] += d
        counts[kind(n)] += 1
    print(f"{len(use)} runs; per run: host {host:.3f} ms, device steps "
          f"{device:.3f} ms")
    for k in ("copies", "matmuls", "kernels"):
        print(f"  {k}: {kinds[k]:.3f} ms in {counts[k]} steps "
              f"({100 * kinds[k] / max(device, 1e-9):.1f}%)")
    print(f"the {a.top} longest steps:")
    for n, d in sorted(med.items(), key=lambda x: -x[1])[:a.top]:
        print(f"  {d:8.3f} ms {100 * d / max(device, 1e-9):5.1f}%  {n[:110]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
