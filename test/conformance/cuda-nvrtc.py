#!/usr/bin/env python3
"""Every CUDA kernel of the ONNX conformance models compiles with NVRTC.

The models are the core-set ONNX backend node tests that the CPU suite
runs and passes (node-run.py: those not in node-run-failures.txt). Each is
compiled with `loomc compile --target cuda --emit cuda` (inputs the
compiler needs frozen to test_data_set_0 with --bind, as node-run.py
does); then loom-nvrtc-check compiles every kernel of every model for
sm_80 and sm_90 (the prelude once, identical regions once, programs
compiled in parallel) and prints "N kernels compiled". The integer matmul
sources (GENERATED, INT8_GEMM below) are compiled with them.

A model whose ops the CUDA emitter does not cover yet fails `loomc` with
an error naming the op; those are listed with the message in
cuda-emit-failures.txt, and the test fails when the list changes either
way (--update rewrites it). Exit 77 (CTest: skipped) when NVRTC or the
ONNX test data is missing.

usage: cuda-nvrtc.py LOOMC LOOM_NVRTC_CHECK [--update] [--jobs J]
                     [--filter SUBSTR] [--arch sm_80,sm_90]
"""
import argparse
import concurrent.futures
import importlib.util
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FAILURES = os.path.join(HERE, "cuda-emit-failures.txt")

spec = importlib.util.spec_from_file_location(
    "node_run", os.path.join(HERE, "node-run.py"))
node_run = importlib.util.module_from_spec(spec)
spec.loader.exec_module(node_run)


def cpu_failures():
    failed = set()
    with open(node_run.FAILURES) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                failed.add(line.split(":", 1)[0])
    return failed


def emit(loomc, name, out, kind=("--target", "cuda", "--emit", "cuda"),
         binds=None):
    """None when the source (or with `kind` ("--target", "cuda"), the
    artifact) was written, else loomc's first error line. `binds` receives
    the inputs frozen with --bind (name -> .pb path)."""
    d = os.path.join(node_run.DATA, name)
    model = os.path.join(d, "model.onnx")
    binds = {} if binds is None else binds
    import onnx
    # Sequence and optional inputs: their lengths and presence are fixed
    # per compile, from the first data set (as node-run.py compiles them).
    graph = onnx.load(model, load_external_data=False).graph
    structure = node_run.structure_args(
        graph, os.path.join(d, "test_data_set_0"))
    for _ in range(4):
        args = [loomc, "compile", model, *kind, "-o", out, *structure]
        for n, path in binds.items():
            args += ["--bind", f"{n}={path}"]
        p = subprocess.run(args, capture_output=True, text=True, timeout=300)
        if p.returncode == 0:
            return None
        asked = re.findall(r"--bind (\S+)=FILE", p.stderr)
        if not asked:
            return node_run.first_line(p.stderr, "error: ")
        inits = {i.name for i in graph.initializer}
        order = [i.name for i in graph.input if i.name not in inits]
        for n in asked:
            if n in order:
                binds[n] = os.path.join(d, "test_data_set_0",
                                        f"input_{order.index(n)}.pb")
    return "loomc kept asking for --bind"


# Beside the node tests: sources whose kernels the node tests do not reach
# (their shapes are small), compiled the same way: the integer matmuls of
# every CUDA path (cuBLASLt's int8 GEMM with its operand and zero-point
# kernels, the exact loop), from the models test scripts write and the
# functions of the emitter's lit test.
INPUTS = os.path.join(HERE, "..", "compiler", "Inputs")
GENERATED = [("int8_matmul", "int8_matmul_check.py", "int8.onnx"),
             ("int8_matmul_shapes", "int8_matmul_cuda_shapes.py",
              "shapes.onnx")]
INT8_GEMM = os.path.join(HERE, "..", "compiler", "codegen", "cuda",
                         "int8-gemm.mlir")
INT8_GEMM_FUNCS = ["uu", "ss_weight", "odd_k", "qdq", "i32", "epilogue",
                   "trans"]


def emit_extra(loomc, tmp, filt):
    """The extra sources as (name, .cu path or None, error)."""
    out = []
    for name, script, model in GENERATED:
        if filt not in name:
            continue
        d = os.path.join(tmp, name)
        os.makedirs(d, exist_ok=True)
        p = subprocess.run([sys.executable, os.path.join(INPUTS, script),
                            "model", d], capture_output=True, text=True)
        cu = os.path.join(tmp, name + ".cu")
        if p.returncode == 0:
            p = subprocess.run([loomc, "compile", os.path.join(d, model),
                                "--target", "cuda", "--emit", "cuda", "-o",
                                cu], capture_output=True, text=True)
        out.append((name, cu if p.returncode == 0 else None,
                    node_run.first_line(p.stderr, "error: ")))
    for f in INT8_GEMM_FUNCS:
        name = "int8_gemm_" + f
        if filt not in name:
            continue
        cu = os.path.join(tmp, name + ".cu")
        p = subprocess.run([loomc, "compile", INT8_GEMM, "--func", f,
                            "--target", "cuda", "--emit", "cuda", "-o", cu],
                           capture_output=True, text=True)
        out.append((name, cu if p.returncode == 0 else None,
                    node_run.first_line(p.stderr, "error: ")))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("loomc")
    ap.add_argument("check")
    ap.add_argument("--update", action="store_true")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--filter", default="")
    ap.add_argument("--arch", default="sm_80,sm_90")
    a = ap.parse_args()
    if not os.path.isdir(node_run.DATA):
        print(f"skipped: {node_run.DATA} missing")
        return 77
    skip = cpu_failures()
    tests = [t for t in node_run.core_tests()
             if a.filter in t and t not in skip]
    with tempfile.TemporaryDirectory() as tmp:
        def one(t):
            return t, emit(a.loomc, t, os.path.join(tmp, t + ".cu"))
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
            results = dict(pool.map(one, tests))
        failed = {t: r for t, r in results.items() if r is not None}
        sources = sorted(os.path.join(tmp, t + ".cu") for t in tests
                         if results[t] is None)
        print(f"{len(sources)} of {len(tests)} conformance models emitted "
              f"as CUDA; {len(failed)} not (cuda-emit-failures.txt)")
        ok = True
        extra = emit_extra(a.loomc, tmp, a.filter)
        for name, cu, why in extra:
            if cu:
                sources.append(cu)
            else:
                print(f"NOT EMITTED {name}: {why}")
                ok = False
        if extra:
            print(f"and {len(extra)} integer matmul sources (int8 models, "
                  f"int8-gemm.mlir)")
        if sources:
            p = subprocess.run([a.check, "--arch", a.arch, "--jobs",
                                str(a.jobs), *sources],
                               capture_output=True, text=True)
            sys.stdout.write(p.stdout)
            sys.stderr.write(p.stderr[-20000:])
            if p.returncode == 77:
                return 77
            ok = p.returncode == 0

    if a.update:
        with open(FAILURES, "w") as f:
            f.write("# Conformance models the CPU suite passes whose ops the "
                    "CUDA emitter does not\n# cover yet, with loomc's "
                    "message. Rewritten by cuda-nvrtc.py --update.\n")
            for t in sorted(failed):
                f.write(f"{t}: {failed[t]}\n")
        return 0 if ok else 1
    listed = {}
    if os.path.exists(FAILURES) and not a.filter:
        with open(FAILURES) as f:
            for line in f:
                if line.strip() and not line.startswith("#"):
                    name, reason = line.rstrip("\n").split(": ", 1)
                    listed[name] = reason
    if not a.filter:
        for t in sorted(set(failed) - set(listed)):
            print(f"NEW FAILURE {t}: {failed[t]}")
            ok = False
        for t in sorted(set(listed) - set(failed)):
            print(f"NOW EMITS {t} (remove it from cuda-emit-failures.txt)")
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
