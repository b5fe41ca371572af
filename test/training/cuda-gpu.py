#!/usr/bin/env python3
"""Training steps on the CUDA device against the CPU.

Each configuration of configs.json (the MLP and the GPT-2-style model with
SGD, Adam, AdamW; check_training.py checks the CPU against PyTorch) and a
bf16 GPT-2-style step is compiled twice with `loomc train --batch B`:
`--target cuda` and `--target cpu`. The CPU runs its 5 steps here and
logs loss, lr and grad_norm per step; the CUDA artifact runs the same 5
steps with `loom-run --device cuda` on the same data, and every logged
value must match the CPU's within --rtol (f32; bf16 steps within
--rtol-bf16: the GPU rounds its matmuls differently).

  cuda-gpu.py prepare LOOMC LOOM_RUN DIR   # here: DIR/<cfg>.loom, .npz, .cpu.txt
  cuda-gpu.py run LOOM_RUN DIR [--rtol R] [--results FILE]   # on the GPU
  cuda-gpu.py ctest LOOMC LOOM_RUN         # CTest cuda-gpu-training (77: no GPU)
--device cuda-sim (run and ctest) runs the CUDA artifacts in the CUDA
simulator, on the host (CTest cuda-sim-training, in CI).
`run` needs only the Python standard library.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
NO_GPU = ("no CUDA driver", "cuInit failed", "no CUDA device",
          "no host C++ compiler", "runs on x86-64 Linux only")


def configs():
    with open(os.path.join(HERE, "configs.json")) as f:
        cfgs = json.load(f)
    # The GPT-2-style step in mixed precision too (bf16 matmuls).
    bf16 = dict(cfgs["gpt2_adamw"])
    bf16["loomc"] = bf16["loomc"] + ["--precision", "bf16"]
    cfgs["gpt2_adamw_bf16"] = bf16
    # The fused attention (auto leaves 16 tokens unfused) in f32 and bf16;
    # the other GPT-2 configurations run matmul, softmax, matmul.
    for name in ("gpt2_adam", "gpt2_adamw_bf16"):
        cfgs[name] = dict(cfgs[name])
        cfgs[name]["loomc"] = cfgs[name]["loomc"] + ["--fused-attention=on"]
    return cfgs


def flag(flags, name, default):
    return flags[flags.index(name) + 1] if name in flags else default


def run(args):
    return subprocess.run(args, capture_output=True, text=True, timeout=600)


def first_error(text):
    for line in text.splitlines():
        if "error: " in line:
            return line[line.index("error: ") + 7:].strip()
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[0].strip() if lines else "no message"


def logged(out):
    """Per logged step: [loss, lr, grad_norm]."""
    rows = re.findall(r"loss (\S+)\s+lr (\S+)\s+grad_norm (\S+)", out)
    return [[float(x) for x in row] for row in rows]


def prepare(loomc, loom_run, root, keep=False):
    """`keep`: the CPU artifacts and their checkpoints after 5 steps stay
    (compare_params; too large to carry to a GPU machine)."""
    os.makedirs(root, exist_ok=True)
    loom_run = os.path.abspath(loom_run)
    plan = {}
    for name, cfg in configs().items():
        batch = flag(cfg["loom_run"], "--batch", "4")
        model = os.path.join(HERE, cfg["model"])
        common = [loomc, "train", model, *cfg["loomc"], "--batch", batch]
        for target in ("cuda", "cpu"):
            p = run(common + ["--target", target, "-o",
                              os.path.join(root, f"{name}.{target}.loom")])
            if p.returncode:
                print(f"{name}: loomc train --target {target}: "
                      f"{first_error(p.stderr)}")
                return 1
        shutil.copy(os.path.join(HERE, cfg["data"]), root)
        args = ["--data", cfg["data"], *cfg["loom_run"], "--log-every", "1"]
        cpu = os.path.join(root, f"{name}.cpu.loom")
        save = ["--save", f"{name}.cpu.loomckpt"] if keep else []
        p = subprocess.run([loom_run, cpu, *args, *save, "--device", "cpu"],
                           cwd=root, capture_output=True, text=True,
                           timeout=600)
        if not keep:
            os.remove(cpu)
        if p.returncode or not logged(p.stdout):
            print(f"{name}: the CPU run failed: {first_error(p.stderr)}")
            return 1
        with open(os.path.join(root, f"{name}.cpu.txt"), "w") as f:
            f.write(p.stdout)
        plan[name] = {"args": args, "bf16": "bf16" in name}
    with open(os.path.join(root, "training.json"), "w") as f:
        json.dump(plan, f, indent=1)
    print(f"prepared {len(plan)} training configurations in {root}")
    return 0


def run_all(loom_run, root, rtol, rtol_bf16, results_path, device="cuda",
            save=False):
    """`save`: each run saves its state after 5 steps, <cfg>.DEVICE.loomckpt."""
    with open(os.path.join(root, "training.json")) as f:
        plan = json.load(f)
    lines, wrong = [], []
    for name, cfg in sorted(plan.items()):
        extra = ["--save", f"{name}.{device}.loomckpt"] if save else []
        p = subprocess.run([loom_run, f"{name}.cuda.loom", *cfg["args"],
                            *extra, "--device", device], cwd=root,
                           capture_output=True, text=True, timeout=600)
        if p.returncode and any(s in p.stderr for s in NO_GPU):
            print(f"skipped: no {device} device: " + first_error(p.stderr))
            return 77
        with open(os.path.join(root, f"{name}.cpu.txt")) as f:
            want = logged(f.read())
        got = logged(p.stdout)
        tol = rtol_bf16 if cfg["bf16"] else rtol
        if p.returncode or len(got) != len(want):
            lines.append(f"{name}: FAIL {first_error(p.stderr)} "
                         f"({len(got)} of {len(want)} steps logged)")
            wrong.append(name)
            continue
        worst = 0.0
        for g, w in zip(got, want):
            for a, b in zip(g, w):
                worst = max(worst, abs(a - b) / max(abs(b), 1e-12))
        losses = " ".join(f"{g[0]:.6g}/{w[0]:.6g}" for g, w in zip(got, want))
        ok = worst <= tol
        lines.append(f"{name}: {'ok' if ok else 'FAIL'} max rel diff "
                     f"{worst:.3g} (tol {tol}); loss gpu/cpu {losses}")
        if not ok:
            wrong.append(name)
    where = "on the GPU" if device == "cuda" else "in the CUDA simulator"
    summary = (f"{len(plan) - len(wrong)} of {len(plan)} training "
               f"configurations match the CPU {where} over 5 steps")
    print("\n".join(lines + [summary]))
    if results_path:
        with open(results_path, "w") as f:
            f.write("\n".join(lines + [summary]) + "\n")
    return 0 if not wrong else 1


def params(loomc, root, artifact, ckpt):
    """The parameters of `ckpt` by name (loomc export, read back)."""
    import onnx
    from onnx import numpy_helper
    out = os.path.join(root, ckpt + ".onnx")
    p = run([loomc, "export", os.path.join(root, artifact), "--checkpoint",
             os.path.join(root, ckpt), "-o", out])
    if p.returncode:
        raise RuntimeError(f"loomc export {artifact} --checkpoint {ckpt}: "
                           + first_error(p.stderr))
    return {t.name: numpy_helper.to_array(t).astype("float64")
            for t in onnx.load(out).graph.initializer}


def compare_params(loomc, root, device):
    """Every parameter after the 5 steps, the device's against the CPU's,
    within 1e-4 (bf16: 2e-3) relative to the larger of 1 and the
    parameter's largest value. Under Adam, an element whose gradient is
    rounding noise (below 1e-6 in the configuration's PyTorch reference,
    as check_training.py masks them: the attention's key bias) moves by
    about lr a step in either direction: within 2 lr a step. In a bf16
    step, so does an element whose gradient is below bf16's rounding of
    its tensor's largest one (2^-8 of it): the CPU and the device round
    at different places (the fused attention keeps its scores and
    probabilities in f32, the CPU's matmuls round them to bf16)."""
    import numpy as np
    with open(os.path.join(root, "training.json")) as f:
        plan = json.load(f)
    lines, wrong = [], []
    for name, cfg in sorted(plan.items()):
        try:
            want = params(loomc, root, f"{name}.cpu.loom", f"{name}.cpu.loomckpt")
            got = params(loomc, root, f"{name}.cuda.loom",
                         f"{name}.{device}.loomckpt")
        except RuntimeError as e:
            lines.append(f"{name}: FAIL {e}")
            wrong.append(name)
            continue
        flags = configs()[name]["loomc"]
        lr = float(flag(flags, "--lr", "1e-3"))
        steps = 5
        adam = flag(flags, "--optimizer", "adamw") != "sgd"
        ref = np.load(os.path.join(HERE, configs()[name]["reference"]))
        tol = 2e-3 if cfg["bf16"] else 1e-4
        bad, worst, noisy, accuracy = [], 0.0, 0, []
        if sorted(got) != sorted(want):
            bad.append("the parameters' names differ")
        for key in sorted(set(got) & set(want)):
            g, w = got[key], want[key]
            if g.shape != w.shape:
                bad.append(f"{key}: shape {g.shape} vs {w.shape}")
                continue
            scale = max(1.0, float(abs(w).max(initial=0)))
            diff = abs(g - w) / scale
            noise = np.zeros(w.shape, bool)
            if adam and "grad/" + key in ref.files:
                grad = np.abs(ref["grad/" + key])
                noise = grad < 1e-6
            noisy += int(noise.sum())
            if (diff[noise] > 2 * lr * steps).any():
                bad.append(f"{key}: an element with a noise gradient moved "
                           "more than 2 lr a step away from the CPU's")
            clean = diff[~noise]
            worst = max(worst, float(clean.max(initial=0)))
            if cfg["bf16"] and "param/" + key in ref.files:
                # Both sides are bf16 steps that round in different places:
                # the device's must be as close to PyTorch's f32 step as
                # the CPU's is (within tol more, or a quarter more).
                f32 = ref["param/" + key].astype("float64")
                e_dev = float((abs(g - f32) / scale)[~noise].max(initial=0))
                e_cpu = float((abs(w - f32) / scale)[~noise].max(initial=0))
                accuracy.append((e_dev, e_cpu))
                if e_dev > max(e_cpu + tol, 1.25 * e_cpu):
                    bad.append(f"{key}: {e_dev:.3g} from PyTorch's f32 step "
                               f"where the CPU's bf16 step is {e_cpu:.3g}")
            elif (clean > tol).any():
                bad.append(f"{key}: {int((clean > tol).sum())} of "
                           f"{clean.size} elements differ by more than {tol} "
                           f"(up to {float(clean.max()):.3g})")
        status = "FAIL " + "; ".join(bad[:3]) if bad else "ok"
        against = ""
        if accuracy:
            against = (", largest error against PyTorch's f32 step: device "
                       f"{max(a for a, _ in accuracy):.3g}, CPU "
                       f"{max(b for _, b in accuracy):.3g}")
        lines.append(f"{name}: parameters {status} ({len(want)} tensors, "
                     f"max diff {worst:.3g}, tol {tol}; {noisy} elements "
                     f"with noise gradients{against})")
        if bad:
            wrong.append(name)
    print("\n".join(lines))
    print(f"{len(plan) - len(wrong)} of {len(plan)} configurations have the "
          "CPU's parameters after 5 steps")
    return 0 if not wrong else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["prepare", "run", "ctest"])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--rtol", type=float, default=2e-3)
    ap.add_argument("--rtol-bf16", type=float, default=3e-2)
    ap.add_argument("--results", default="")
    ap.add_argument("--device", choices=["cuda", "cuda-sim"], default="cuda")
    a = ap.parse_args()
    if a.mode == "prepare":
        return prepare(*a.paths)
    if a.mode == "run":
        loom_run, root = a.paths
        return run_all(os.path.abspath(loom_run), root, a.rtol, a.rtol_bf16,
                       a.results, a.device)
    loomc, loom_run = a.paths
    loom_run = os.path.abspath(loom_run)
    with tempfile.TemporaryDirectory() as tmp:
        if a.device == "cuda-sim":
            # The simulator's libraries in the run's own cache, not $HOME's.
            os.environ["LOOM_CUDA_CACHE"] = os.path.join(tmp, "cache")
        # A GPU first: without one, do not spend minutes compiling.
        cfg = configs()["mlp_sgd"]
        art = os.path.join(tmp, "probe.loom")
        p = run([loomc, "train", os.path.join(HERE, cfg["model"]),
                 *cfg["loomc"], "--batch", "4", "--target", "cuda", "-o", art])
        if p.returncode:
            print("loomc train --target cuda failed: " + first_error(p.stderr))
            return 1
        p = run([loom_run, art, "--device", a.device, "--data",
                 os.path.join(HERE, cfg["data"]), "--steps", "1", "--batch",
                 "4"])
        if p.returncode and any(s in p.stderr for s in NO_GPU):
            print(f"skipped: no {a.device} device (" + first_error(p.stderr)
                  + ")")
            return 77
        rc = prepare(loomc, loom_run, tmp, keep=True)
        if rc:
            return rc
        rc = run_all(loom_run, tmp, a.rtol, a.rtol_bf16, a.results, a.device,
                     save=True)
        return rc or compare_params(loomc, tmp, a.device)


if __name__ == "__main__":
    sys.exit(main())
