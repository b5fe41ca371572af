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


def prepare(loomc, loom_run, root):
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
        p = subprocess.run([loom_run, cpu, *args, "--device", "cpu"],
                           cwd=root, capture_output=True, text=True,
                           timeout=600)
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


def run_all(loom_run, root, rtol, rtol_bf16, results_path, device="cuda"):
    with open(os.path.join(root, "training.json")) as f:
        plan = json.load(f)
    lines, wrong = [], []
    for name, cfg in sorted(plan.items()):
        p = subprocess.run([loom_run, f"{name}.cuda.loom", *cfg["args"],
                            "--device", device], cwd=root,
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
        rc = prepare(loomc, loom_run, tmp)
        if rc:
            return rc
        return run_all(loom_run, tmp, a.rtol, a.rtol_bf16, a.results,
                       a.device)


if __name__ == "__main__":
    sys.exit(main())
