#!/usr/bin/env python3
"""ONNX conformance on the CPU: every ONNX backend node test whose ops are
in the core set (test/tools/core-ops.txt) is compiled with loomc and run
with loom-run on each of its test_data_set_*, outputs compared with the
expected ones (rtol 1e-4, atol 1e-5; integers and booleans exactly).

Prints "N passed, M failed". Fails when a test fails that
node-run-failures.txt does not list (a regression), or when a listed test
passes (the list must stay exact; --update rewrites it with each failure's
stage and reason).

usage: node-run.py LOOMC LOOM_RUN [--update] [--jobs J] [--filter SUBSTR]
"""
import argparse
import concurrent.futures
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.join(HERE, "..", "tools")
DATA = "/usr/share/libonnx-testdata/data/node"
FAILURES = os.path.join(HERE, "node-run-failures.txt")

sys.path.insert(0, TOOLS)
import onnx_node_ops  # noqa: E402


def core_tests():
    with open(os.path.join(TOOLS, "core-ops.txt")) as f:
        core = set(f.read().split())
    tests = []
    for name in sorted(os.listdir(DATA)):
        ops = onnx_node_ops.ops_of(os.path.join(DATA, name))
        if ops is not None and set(ops) <= core:
            tests.append(name)
    return tests


def first_line(text, marker):
    for line in text.splitlines():
        if marker in line:
            return line[line.index(marker) + len(marker):].strip()
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[0].strip() if lines else "no message"


def run_test(name, loomc, loom_run, tmp):
    d = os.path.join(DATA, name)
    artifact = os.path.join(tmp, name + ".loom")
    p = subprocess.run([loomc, "compile", os.path.join(d, "model.onnx"),
                        "-o", artifact], capture_output=True, text=True,
                       timeout=300)
    if p.returncode != 0:
        if p.returncode not in (0, 1):
            return name, "crash", f"loomc exit {p.returncode}"
        if "has no lowering" in p.stderr:
            stage = "lower"
        elif "(at node" in p.stderr or "graph input" in p.stderr:
            stage = "import"
        else:
            stage = "codegen"
        return name, stage, first_line(p.stderr, "error: ")
    sets = sorted(s for s in os.listdir(d) if s.startswith("test_data_set_"))
    for s in sets:
        ds = os.path.join(d, s)
        p = subprocess.run([loom_run, artifact, "--in-pb", ds, "--check-pb",
                            ds], capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            if p.returncode not in (0, 1):
                return name, "crash", f"loom-run exit {p.returncode} on {s}"
            out = p.stdout + p.stderr
            if "MISMATCH" in out:
                return name, "wrong", first_line(out, "MISMATCH: ")
            return name, "run", first_line(out, "error: ")
    os.remove(artifact)
    return name, "pass", ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("loomc")
    ap.add_argument("loom_run")
    ap.add_argument("--update", action="store_true")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--filter", default="")
    a = ap.parse_args()
    if not os.path.isdir(DATA):
        sys.exit(f"node-run: {DATA} missing (apt-get install libonnx-testdata)")
    tests = [t for t in core_tests() if a.filter in t]
    results = {}
    with tempfile.TemporaryDirectory() as tmp, \
            concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        for name, stage, reason in pool.map(
                lambda t: run_test(t, a.loomc, a.loom_run, tmp), tests):
            results[name] = (stage, reason)

    listed = {}
    if os.path.exists(FAILURES):
        with open(FAILURES) as f:
            for line in f:
                if line.strip() and not line.startswith("#"):
                    name, _, rest = line.partition(": ")
                    listed[name.strip()] = rest.strip()
    failed = {n: r for n, r in results.items() if r[0] != "pass"}
    status = 0
    for n, (stage, reason) in sorted(failed.items()):
        if stage == "crash":
            print(f"CRASH: {n}: {reason}")
            status = 1
        elif n not in listed and not a.filter:
            print(f"REGRESSION: {n}: {stage}: {reason}")
            status = 1
    for n in sorted(listed):
        if n in results and results[n][0] == "pass" and not a.filter:
            print(f"NOW PASSES (remove it from node-run-failures.txt): {n}")
            status = 1
    if a.update and not a.filter:
        with open(FAILURES, "w") as f:
            f.write("# Core-set ONNX node tests that do not pass on the CPU, "
                    "with the stage\n# (import, lower, codegen, run, wrong) and the "
                    "reason. Rewritten by node-run.py --update.\n")
            for n, (stage, reason) in sorted(failed.items()):
                f.write(f"{n}: {stage}: {reason}\n")
        status = 0
    by_stage = {}
    for stage, _ in failed.values():
        by_stage[stage] = by_stage.get(stage, 0) + 1
    passed = len(results) - len(failed)
    detail = ", ".join(f"{k} {v}" for k, v in sorted(by_stage.items()))
    print(f"node-run: {passed} passed, {len(failed)} failed"
          f"{' (' + detail + ')' if detail else ''} of {len(results)} "
          f"core-set node tests")
    sys.exit(status)


if __name__ == "__main__":
    main()
