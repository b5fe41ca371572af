#!/usr/bin/env python3
"""ONNX conformance on the CPU: every case of ONNX 1.12's backend test data
that has a model (node, simple, pytorch-converted, pytorch-operator; 1072
cases) is compiled with loomc and run with loom-run on each of its
test_data_set_*, outputs compared with the expected ones within the ONNX
backend test runner's own tolerance (rtol 1e-3, atol 1e-7; integers and
booleans exactly: the test data of the window functions, RoiAlign and
GridSample's bicubic mode is accurate to about 1e-4). Node tests are named as their
directory (test_abs), the others with their group (simple/test_...). The
summary also counts the core set: node tests whose ops are all in
test/tools/core-ops.txt.

A test whose model takes a parameter the compiler needs (Reshape's shape,
Unsqueeze's axes, ...) as a graph input gets loomc's hint "--bind NAME=";
it is then compiled once per data set with those inputs frozen to the
data set's values and counted apart, as "passed with bound inputs".

Prints "N passed, M failed". Fails when a case fails that
node-run-failures.txt does not list (a regression), or when a listed test
passes (the list must stay exact; --update rewrites it with each failure's
stage and reason).

usage: node-run.py LOOMC LOOM_RUN [--update] [--jobs J] [--filter SUBSTR]
"""
import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.join(HERE, "..", "tools")
ROOT = "/usr/share/libonnx-testdata/data"
DATA = os.path.join(ROOT, "node")
GROUPS = ("node", "simple", "pytorch-converted", "pytorch-operator")
FAILURES = os.path.join(HERE, "node-run-failures.txt")
# onnx.backend.test.runner's default comparison.
RTOL, ATOL = "1e-3", "1e-7"

sys.path.insert(0, TOOLS)
import onnx_node_ops  # noqa: E402


# Failures whose cause the mismatch line does not say.
EXPLAINED = {
    "test_cast_FLOAT_to_BFLOAT16": "the test data truncates to bfloat16 "
    "(ONNX 1.12's reference); Loom rounds to nearest even, as PyTorch and "
    "later ONNX opsets do",
    "test_castlike_FLOAT_to_BFLOAT16_expanded": "the model declares input "
    "'like' as [3, 4] but the test data gives [1]; Loom checks inputs "
    "against the declared shape",
    "test_castlike_BFLOAT16_to_FLOAT_expanded": "the model declares input "
    "'like' as [3, 4] but the test data gives [1]; Loom checks inputs "
    "against the declared shape",
    "test_adam_multiple": "the expected outputs were made with epsilon 1e-2, "
    "which the node does not carry; Loom uses the schema's default, 1e-6",
}
for _t in ("test_training_dropout", "test_training_dropout_default",
           "test_training_dropout_default_mask", "test_training_dropout_mask"):
    EXPLAINED[_t] = ("a random dropout mask: the expected output comes from "
                     "numpy's generator, which Loom's seeded mask does not "
                     "reproduce")
for _t in ("test_bernoulli", "test_bernoulli_double",
           "test_bernoulli_double_expanded", "test_bernoulli_expanded",
           "test_bernoulli_seed", "test_bernoulli_seed_expanded"):
    EXPLAINED[_t] = ("random values: the expected output comes from numpy's "
                     "generator, which ONNX's own harness (1.12) compares "
                     "too; shapes, dtypes and statistics are checked by "
                     "test/runtime/random_ops.py")


def core_tests():
    with open(os.path.join(TOOLS, "core-ops.txt")) as f:
        core = set(f.read().split())
    tests = []
    for name in sorted(os.listdir(DATA)):
        ops = onnx_node_ops.ops_of(os.path.join(DATA, name))
        if ops is not None and set(ops) <= core:
            tests.append(name)
    return tests


def all_cases():
    """(name, directory) of every backend case with a model."""
    cases = []
    for group in GROUPS:
        d = os.path.join(ROOT, group)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if os.path.exists(os.path.join(d, name, "model.onnx")):
                key = name if group == "node" else f"{group}/{name}"
                cases.append((key, os.path.join(d, name)))
    return cases


def first_line(text, marker):
    for line in text.splitlines():
        if marker in line:
            return line[line.index(marker) + len(marker):].strip()
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[0].strip() if lines else "no message"


def compile_model(loomc, model, artifact, binds, extra=()):
    args = [loomc, "compile", model, "-o", artifact]
    for name, path in binds.items():
        args += ["--bind", f"{name}={path}"]
    args += list(extra)
    return subprocess.run(args, capture_output=True, text=True, timeout=300)


def structured_inputs(graph):
    """(position, ValueInfo) of the graph inputs that are sequences or
    optionals, positions counted as the data sets' input_K.pb are."""
    inits = {i.name for i in graph.initializer}
    inputs = [i for i in graph.input if i.name not in inits]
    return [(k, i) for k, i in enumerate(inputs)
            if i.type.WhichOneof("value") in ("sequence_type",
                                              "optional_type")]


def structure_args(graph, ds):
    """loomc's --seq-len, --absent and --input-shape for data set `ds`'s
    sequence and optional inputs: Loom compiles a sequence's length, an
    optional's presence and their elements' shapes, as it does shapes."""
    def shape(name, t):
        return ["--input-shape", name + "=" + "x".join(str(d) for d in t.dims)]
    args = []
    for k, info in structured_inputs(graph):
        path = os.path.join(ds, f"input_{k}.pb")
        if not os.path.exists(path):
            continue
        with open(path, "rb") as f:
            data = f.read()
        seq = None
        if info.type.WhichOneof("value") == "optional_type":
            opt = onnx.OptionalProto()
            opt.ParseFromString(data)
            if opt.HasField("sequence_value"):
                seq = opt.sequence_value
            elif opt.HasField("tensor_value"):
                args += shape(info.name, opt.tensor_value)
            else:
                args += ["--absent", info.name]
        else:
            seq = onnx.SequenceProto()
            seq.ParseFromString(data)
        if seq is not None:
            args += ["--seq-len", f"{info.name}={len(seq.tensor_values)}"]
            for j, t in enumerate(seq.tensor_values):
                args += shape(f"{info.name}.{j}", t)
    return args


def run_structured(name, d, loomc, loom_run, tmp, sets, graph):
    """A model with sequence or optional inputs: compiled per data set
    (structure_args), parameters bound as run_test does."""
    model = os.path.join(d, "model.onnx")
    artifact = os.path.join(tmp, name.replace("/", "_") + ".loom")
    inits = {i.name for i in graph.initializer}
    order = [i.name for i in graph.input if i.name not in inits]
    bound = []
    for ds in sets:
        extra = structure_args(graph, ds)
        binds = {}
        p = compile_model(loomc, model, artifact, binds, extra)
        while p.returncode != 0:
            asked = [n for n in re.findall(r"--bind (\S+)=FILE", p.stderr)
                     if n in order and n not in binds]
            if not asked:
                break
            for n in asked:
                binds[n] = os.path.join(ds, f"input_{order.index(n)}.pb")
            p = compile_model(loomc, model, artifact, binds, extra)
        if p.returncode != 0:
            return (name,) + compile_failure(p)
        failure = run_data_set(loom_run, artifact, ds)
        if failure:
            return (name,) + failure
        bound = sorted(binds)
    os.remove(artifact)
    return (name, "pass-bound", ", ".join(bound)) if bound else (name, "pass",
                                                                  "")


def compile_failure(p):
    """(stage, reason) of a failed loomc run."""
    if p.returncode not in (0, 1):
        return "crash", f"loomc exit {p.returncode}"
    if "has no lowering" in p.stderr:
        stage = "lower"
    elif ("(at node" in p.stderr or "graph input" in p.stderr or
          "unsupported ONNX op" in p.stderr):
        stage = "import"
    else:
        stage = "codegen"
    return stage, first_line(p.stderr, "error: ")


def run_data_set(loom_run, artifact, ds):
    """None when the outputs match, else (stage, reason)."""
    p = subprocess.run([loom_run, artifact, "--in-pb", ds, "--check-pb", ds,
                        "--rtol", RTOL, "--atol", ATOL],
                       capture_output=True, text=True, timeout=300)
    if p.returncode == 0:
        return None
    if p.returncode != 1:
        return "crash", f"loom-run exit {p.returncode} on {os.path.basename(ds)}"
    out = p.stdout + p.stderr
    if "MISMATCH" in out:
        return "wrong", first_line(out, "MISMATCH: ")
    return "run", first_line(out, "error: ")


def run_test(name, d, loomc, loom_run, tmp):
    model = os.path.join(d, "model.onnx")
    artifact = os.path.join(tmp, name.replace("/", "_") + ".loom")
    sets = sorted(os.path.join(d, s) for s in os.listdir(d)
                  if s.startswith("test_data_set_"))
    graph = onnx.load(model, load_external_data=False).graph
    if structured_inputs(graph):
        return run_structured(name, d, loomc, loom_run, tmp, sets, graph)
    p = compile_model(loomc, model, artifact, {})
    if p.returncode == 0:
        for ds in sets:
            failure = run_data_set(loom_run, artifact, ds)
            if failure:
                return (name,) + failure
        os.remove(artifact)
        return name, "pass", ""
    if "--bind " not in p.stderr:
        return (name,) + compile_failure(p)
    # Parameters given as graph inputs: freeze them to each data set's
    # values, as many rounds as loomc asks for more.
    graph = onnx.load(model, load_external_data=False).graph
    inits = {i.name for i in graph.initializer}
    order = [i.name for i in graph.input if i.name not in inits]
    bound = []
    for ds in sets:
        binds = {}
        while True:
            asked = [n for n in re.findall(r"--bind (\S+)=FILE", p.stderr)
                     if n in order and n not in binds]
            if p.returncode == 0 or not asked:
                break
            for n in asked:
                binds[n] = os.path.join(ds, f"input_{order.index(n)}.pb")
            p = compile_model(loomc, model, artifact, binds)
        if p.returncode != 0:
            return (name,) + compile_failure(p)
        failure = run_data_set(loom_run, artifact, ds)
        if failure:
            return (name,) + failure
        bound = sorted(binds)
        p = subprocess.CompletedProcess([], 1, "", p.stderr)  # next data set
    os.remove(artifact)
    return name, "pass-bound", ", ".join(bound)


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
    cases = [(n, d) for n, d in all_cases() if a.filter in n]
    core = set(core_tests())
    results = {}
    with tempfile.TemporaryDirectory() as tmp, \
            concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        for name, stage, reason in pool.map(
                lambda c: run_test(c[0], c[1], a.loomc, a.loom_run, tmp),
                cases):
            results[name] = (stage, reason)

    listed = {}
    if os.path.exists(FAILURES):
        with open(FAILURES) as f:
            for line in f:
                if line.strip() and not line.startswith("#"):
                    name, _, rest = line.partition(": ")
                    listed[name.strip()] = rest.strip()
    passes = ("pass", "pass-bound")
    failed = {n: r for n, r in results.items() if r[0] not in passes}
    bound = sorted(n for n, r in results.items() if r[0] == "pass-bound")
    status = 0
    for n, (stage, reason) in sorted(failed.items()):
        if stage == "crash":
            print(f"CRASH: {n}: {reason}")
            status = 1
        elif n not in listed and not a.filter:
            print(f"REGRESSION: {n}: {stage}: {reason}")
            status = 1
    for n in sorted(listed):
        if n in results and results[n][0] in passes and not a.filter:
            print(f"NOW PASSES (remove it from node-run-failures.txt): {n}")
            status = 1
    if a.update and not a.filter:
        with open(FAILURES, "w") as f:
            f.write("# ONNX backend test cases that do not pass on the CPU, "
                    "with the stage\n# (import, lower, codegen, run, wrong) and the "
                    "reason. Rewritten by node-run.py --update.\n")
            for n, (stage, reason) in sorted(failed.items()):
                f.write(f"{n}: {stage}: {EXPLAINED.get(n, reason)}\n")
        status = 0
    by_stage = {}
    for stage, _ in failed.values():
        by_stage[stage] = by_stage.get(stage, 0) + 1
    passed = len(results) - len(failed)
    detail = ", ".join(f"{k} {v}" for k, v in sorted(by_stage.items()))
    in_core = [n for n in results if n in core]
    core_passed = sum(1 for n in in_core if n not in failed)
    print(f"node-run: {passed} passed ({len(bound)} of them with parameter "
          f"inputs bound at compile time), {len(failed)} failed"
          f"{' (' + detail + ')' if detail else ''} of {len(results)} "
          f"backend test cases; core set: {core_passed} of {len(in_core)}")
    sys.exit(status)


if __name__ == "__main__":
    main()
