#!/usr/bin/env python3
"""The CUDA device against the CPU: conformance models and test models.

Each model is compiled twice, `loomc compile --target cuda` and `--target
cpu`; the CPU artifact runs here and its outputs are the reference; the
CUDA artifact runs with `loom-run --device cuda` on the same inputs and
must match within --rtol/--atol. The models: the core-set ONNX backend
node tests the CPU suite passes and the CUDA emitter covers (those not in
node-run-failures.txt or cuda-emit-failures.txt; inputs the compiler
needs frozen with --bind, as cuda-nvrtc.py does), and test/models/*.onnx
(compiled with --batch of their reference input; convolutions are not
emitted for CUDA yet: listed as not compiled).

Two halves, so that the GPU machine needs no compiler (bench/gpu):
  cuda-gpu.py prepare LOOMC LOOM_RUN DIR [--jobs J] [--filter S]
      here: DIR/<model>/{model.loom, in/input_N.pb, cpu/output_N.pb}
  cuda-gpu.py run LOOM_RUN DIR [--rtol R] [--atol A] [--results FILE]
      on the GPU: every model of DIR against its CPU outputs
  cuda-gpu.py ctest LOOMC LOOM_RUN [--jobs J] [--filter S]
      CTest cuda-gpu-conformance: exit 77 (skipped) unless a GPU answers,
      else prepare into a temporary folder and run.
--device cuda-sim (run and ctest) runs the CUDA artifacts on the host, in
the CUDA simulator (CTest cuda-sim-conformance: in CI, without a GPU).
`run` needs only the Python standard library.
"""
import argparse
import concurrent.futures
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "..", "models")
NO_GPU = ("no CUDA driver", "cuInit failed", "no CUDA device",
          "no host C++ compiler", "runs on x86-64 Linux only")


_loaded = {}


def load(name, file):
    if name in _loaded:
        return _loaded[name]
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, file))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _loaded[name] = module
    return module


# Cases the CUDA code computes wrongly, found and not yet fixed: listed
# here so that the suite guards the rest (docs/cuda.md, "Not yet").
KNOWN_WRONG = {}


def listed(path):
    names = set()
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if line.strip() and not line.startswith("#"):
                    names.add(line.split(":", 1)[0])
    return names


def run(args, timeout=600):
    return subprocess.run(args, capture_output=True, text=True,
                          timeout=timeout)


def prepare_node(loomc, loom_run, name, out):
    """None when DIR/name is ready, else why not."""
    nvrtc = load("cuda_nvrtc", "cuda-nvrtc.py")
    node_run = nvrtc.node_run
    os.makedirs(os.path.join(out, "cpu"), exist_ok=True)
    binds = {}
    err = nvrtc.emit(loomc, name, os.path.join(out, "model.loom"),
                     ("--target", "cuda"), binds)
    if err:
        return "cuda compile: " + err
    model = os.path.join(node_run.DATA, name, "model.onnx")
    cpu = os.path.join(out, "cpu.loom")
    ds = os.path.join(node_run.DATA, name, "test_data_set_0")
    import onnx
    graph = onnx.load(model, load_external_data=False).graph
    p = node_run.compile_model(loomc, model, cpu, binds,
                               node_run.structure_args(graph, ds))
    if p.returncode:
        return "cpu compile: " + node_run.first_line(p.stderr, "error: ")
    # The CUDA artifact takes the inputs that were not frozen.
    inits = {i.name for i in graph.initializer}
    order = [i.name for i in graph.input if i.name not in inits]
    os.makedirs(os.path.join(out, "in"), exist_ok=True)
    k = 0
    for i, n in enumerate(order):
        if n not in binds:
            shutil.copy(os.path.join(ds, f"input_{i}.pb"),
                        os.path.join(out, "in", f"input_{k}.pb"))
            k += 1
    p = run([loom_run, cpu, "--in-pb", os.path.join(out, "in"), "--out-pb",
             os.path.join(out, "cpu")])
    os.remove(cpu)
    if p.returncode:
        return "cpu run: " + node_run.first_line(p.stderr, "error: ")
    return None


def prepare_model(loomc, loom_run, onnx_path, out):
    """A test model (test/models/NAME.onnx with NAME.input_K.npy)."""
    import glob

    import numpy as np
    from onnx import numpy_helper
    stem = onnx_path[:-len(".onnx")]
    inputs = sorted(glob.glob(stem + ".input_*.npy"))
    os.makedirs(os.path.join(out, "in"), exist_ok=True)
    os.makedirs(os.path.join(out, "cpu"), exist_ok=True)
    batch = None
    for k, f in enumerate(inputs):
        a = np.load(f)
        batch = batch or a.shape[0]
        with open(os.path.join(out, "in", f"input_{k}.pb"), "wb") as w:
            w.write(numpy_helper.from_array(a).SerializeToString())
    flags = ["--batch", str(batch)] if batch else []
    p = run([loomc, "compile", onnx_path, "--target", "cuda", *flags, "-o",
             os.path.join(out, "model.loom")])
    if p.returncode:
        return "cuda compile: " + first_error(p.stderr)
    cpu = os.path.join(out, "cpu.loom")
    p = run([loomc, "compile", onnx_path, *flags, "-o", cpu])
    if p.returncode:
        return "cpu compile: " + first_error(p.stderr)
    p = run([loom_run, cpu, "--in-pb", os.path.join(out, "in"), "--out-pb",
             os.path.join(out, "cpu")])
    os.remove(cpu)
    if p.returncode:
        return "cpu run: " + first_error(p.stderr)
    return None


# Models written by test scripts with their inputs (name, script under
# test/compiler/Inputs, the model file it writes): the integer matmuls of
# every path of the CUDA target (cuBLASLt's int8 GEMM with its operand and
# zero-point kernels, the exact loop), docs/quantization.md.
GENERATED = [
    ("int8_matmul", "int8_matmul_check.py", "int8.onnx"),
    ("int8_matmul_shapes", "int8_matmul_cuda_shapes.py", "shapes.onnx"),
]
SCRIPTS = os.path.join(HERE, "..", "compiler", "Inputs")


def prepare_generated(loomc, loom_run, script, onnx_name, out):
    """A model a test script writes (`SCRIPT model DIR`: the model and its
    inputs as NAME.npy), run on the CPU for the reference outputs."""
    import numpy as np
    import onnx
    from onnx import numpy_helper
    src = os.path.join(out, "src")
    for d in (src, os.path.join(out, "in"), os.path.join(out, "cpu")):
        os.makedirs(d, exist_ok=True)
    p = run([sys.executable, os.path.join(SCRIPTS, script), "model", src])
    if p.returncode:
        return "model: " + first_error(p.stderr)
    model = os.path.join(src, onnx_name)
    graph = onnx.load(model, load_external_data=False).graph
    inits = {i.name for i in graph.initializer}
    order = [i.name for i in graph.input if i.name not in inits]
    for k, n in enumerate(order):
        a = np.load(os.path.join(src, n + ".npy"))
        with open(os.path.join(out, "in", f"input_{k}.pb"), "wb") as w:
            w.write(numpy_helper.from_array(a).SerializeToString())
    p = run([loomc, "compile", model, "--target", "cuda", "-o",
             os.path.join(out, "model.loom")])
    if p.returncode:
        return "cuda compile: " + first_error(p.stderr)
    cpu = os.path.join(out, "cpu.loom")
    p = run([loomc, "compile", model, "-o", cpu])
    if p.returncode:
        return "cpu compile: " + first_error(p.stderr)
    p = run([loom_run, cpu, "--in-pb", os.path.join(out, "in"), "--out-pb",
             os.path.join(out, "cpu")])
    os.remove(cpu)
    shutil.rmtree(src, ignore_errors=True)
    if p.returncode:
        return "cpu run: " + first_error(p.stderr)
    return None


def first_error(text):
    for line in text.splitlines():
        if "error: " in line:
            return line[line.index("error: ") + 7:].strip()
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[0].strip() if lines else "no message"


def prepare(loomc, loom_run, root, jobs, filt):
    node_run = load("cuda_nvrtc", "cuda-nvrtc.py").node_run
    skip = listed(node_run.FAILURES) | listed(
        os.path.join(HERE, "cuda-emit-failures.txt")) | set(KNOWN_WRONG)
    for t, why in sorted(KNOWN_WRONG.items()):
        print(f"known wrong on the CUDA target, not run: {t}: {why}")
    work = []
    if os.path.isdir(node_run.DATA):
        for t in node_run.core_tests():
            if filt in t and t not in skip:
                work.append((t, lambda t=t: prepare_node(
                    loomc, loom_run, t, os.path.join(root, t))))
    for f in sorted(os.listdir(MODELS)):
        if f.endswith(".onnx") and filt in f:
            name = "model_" + f[:-5]
            path = os.path.join(MODELS, f)
            work.append((name, lambda n=name, p=path: prepare_model(
                loomc, loom_run, p, os.path.join(root, n))))
    for name, script, onnx_name in GENERATED:
        if filt in "model_" + name:
            work.append(("model_" + name,
                         lambda n=name, s=script, o=onnx_name: prepare_generated(
                             loomc, loom_run, s, o,
                             os.path.join(root, "model_" + n))))
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(lambda w: (w[0], w[1]()), work))
    failed = [(n, r) for n, r in results if r]
    for n, r in failed:
        shutil.rmtree(os.path.join(root, n), ignore_errors=True)
    with open(os.path.join(root, "not-prepared.txt"), "w") as f:
        for n, r in failed:
            f.write(f"{n}: {r}\n")
    print(f"prepared {len(results) - len(failed)} of {len(results)} models "
          f"in {root} ({len(failed)} not: {root}/not-prepared.txt)")
    return 0


def run_all(loom_run, root, rtol, atol, results_path, device="cuda"):
    names = sorted(d for d in os.listdir(root)
                   if os.path.exists(os.path.join(root, d, "model.loom")))
    if not names:
        print(f"no models in {root}")
        return 1
    def one(n):
        d = os.path.join(root, n)
        p = run([loom_run, os.path.join(d, "model.loom"), "--device", device,
                 "--in-pb", os.path.join(d, "in"), "--check-pb",
                 os.path.join(d, "cpu"), "--rtol", str(rtol), "--atol",
                 str(atol)])
        return n, p.returncode, p.stdout + p.stderr

    # Models run side by side (each loom-run its own process and CUDA
    # context); each result is printed as it comes, so a run cut short
    # still says how far it got.
    lines, wrong = [], []
    jobs = max(1, min(8, os.cpu_count() or 1))
    where = "on the GPU" if device == "cuda" else "in the CUDA simulator"
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for n, rc, out in pool.map(one, names):
            if rc and any(s in out for s in NO_GPU):
                print(f"skipped: no {device} device: " + first_error(out))
                return 77
            errs = re.findall(r"max abs err (\S+)\)", out)
            worst = max((float(e) for e in errs), default=0.0)
            if rc == 0:
                lines.append(f"{n}: ok (max abs err {worst:.3g})")
            else:
                reason = first_error(out) if "MISMATCH" not in out else \
                    out[out.index("MISMATCH"):].splitlines()[0]
                lines.append(f"{n}: FAIL {reason}")
                wrong.append(n)
            print(lines[-1], flush=True)
    summary = (f"{len(names) - len(wrong)} of {len(names)} models match the "
               f"CPU {where} (rtol {rtol}, atol {atol})")
    print(summary)
    if results_path:
        with open(results_path, "w") as f:
            f.write("\n".join(lines + [summary]) + "\n")
    return 0 if not wrong else 1


def gpu_answers(loomc, loom_run, tmp, device="cuda"):
    """(True, "") when loom-run --device DEVICE runs, else (False, why)."""
    src = os.path.join(tmp, "probe.mlir")
    with open(src, "w") as f:
        f.write("func.func @probe(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                "  %0 = graph.add %x, %x : (tensor<4xf32>, tensor<4xf32>) -> "
                "tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n")
    art = os.path.join(tmp, "probe.loom")
    p = run([loomc, "compile", src, "--target", "cuda", "-o", art])
    if p.returncode:
        return False, "loomc: " + first_error(p.stderr)
    p = run([loom_run, art, "--device", device, "--print-device"])
    out = p.stdout + p.stderr
    if any(s in out for s in NO_GPU):
        return False, first_error(out)
    return True, ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["prepare", "run", "ctest"])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--filter", default="")
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--results", default="")
    ap.add_argument("--device", choices=["cuda", "cuda-sim"], default="cuda")
    a = ap.parse_args()
    if a.mode == "prepare":
        loomc, loom_run, root = a.paths
        os.makedirs(root, exist_ok=True)
        return prepare(loomc, loom_run, root, a.jobs, a.filter)
    if a.mode == "run":
        loom_run, root = a.paths
        return run_all(loom_run, root, a.rtol, a.atol, a.results, a.device)
    loomc, loom_run = a.paths
    with tempfile.TemporaryDirectory() as tmp:
        if a.device == "cuda-sim":
            # The simulator's libraries in the run's own cache, not $HOME's.
            os.environ["LOOM_CUDA_CACHE"] = os.path.join(tmp, "cache")
        ok, why = gpu_answers(loomc, loom_run, tmp, a.device)
        if not ok:
            print(f"skipped: no {a.device} device ({why})")
            return 77
        prepare(loomc, loom_run, tmp, a.jobs, a.filter)
        return run_all(loom_run, tmp, a.rtol, a.atol, a.results, a.device)


if __name__ == "__main__":
    sys.exit(main())
