#!/usr/bin/python3
"""Trains each configuration of configs.json with Loom and checks it
against the PyTorch references made by make_references.py:

  * the gradients of the first micro-batch (`loomc train --gradients`):
    rtol 1e-3, atol 1e-6;
  * the loss, learning rate and gradient norm of 5 optimizer steps
    (`loom-run --data --steps 5`): rtol 1e-4;
  * the parameters after 5 steps (`loomc export --checkpoint`, read back with
    the onnx package): SGD rtol 1e-4 / atol 1e-5, Adam(W) rtol 1e-4 /
    atol 5e-5, except elements whose first gradient is below 1e-6, where
    Adam's g / (sqrt(v) + eps) is rounding noise: those within 2 * lr * steps
    of the reference.
  * the trained model (exported ONNX) in ONNX Runtime gives Loom's outputs
    for it (rtol 1e-4, atol 1e-5), when onnxruntime-node is installed;
  * with --resume-check, that 2 steps + checkpoint + resume for 3 more print
    the losses of the 5-step run, digit for digit.

Usage: check_training.py BUILD_BIN_DIR [CONFIG ...] [--resume-check]
Exit 0 when every check passes.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, cwd):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write("$ " + " ".join(cmd) + "\n" + r.stdout + r.stderr)
        raise SystemExit(1)
    return r.stdout


def flag(flags, name, default):
    return flags[flags.index(name) + 1] if name in flags else default


def logged(out):
    """Per logged step: (loss, lr, grad_norm)."""
    rows = re.findall(r"loss (\S+)\s+lr (\S+)\s+grad_norm (\S+)", out)
    return np.array([[float(x) for x in row] for row in rows])


def ort_available(tmp):
    """Whether node and onnxruntime-node run (scripts/install-ort.sh)."""
    if not hasattr(ort_available, "answer"):
        jobs = os.path.join(tmp, "none.jsonl")
        open(jobs, "w").close()
        try:
            r = subprocess.run(["node", os.path.join(HERE, "..", "tools",
                                                     "ort_run.js"),
                                "--batch", jobs], capture_output=True)
            ort_available.answer = r.returncode == 0
        except FileNotFoundError:
            ort_available.answer = False
        if not ort_available.answer:
            print("ONNX Runtime not installed: the trained models are not "
                  "run in it (scripts/install-ort.sh)")
    return ort_available.answer


def check(name, cfg, bindir, tmp, resume_check):
    loomc = os.path.join(bindir, "loomc")
    loom_run = os.path.join(bindir, "loom-run")
    ref = np.load(os.path.join(HERE, cfg["reference"]))
    flags = cfg["loomc"]
    batch = flag(cfg["loom_run"], "--batch", "4")
    steps = int(flag(cfg["loom_run"], "--steps", "5"))
    model = os.path.join(HERE, cfg["model"])
    data = np.load(os.path.join(HERE, cfg["data"]))
    failures = []

    def close(what, got, want, rtol, atol):
        if got.shape != want.shape:
            failures.append(f"{what}: shape {got.shape} != {want.shape}")
            return
        bad = ~np.isclose(got, want, rtol=rtol, atol=atol)
        if bad.any():
            i = np.argmax(np.abs(got - want) * bad)
            failures.append(
                f"{what}: {bad.sum()} of {bad.size} elements differ, e.g. "
                f"{got.flat[i]!r} vs {want.flat[i]!r}")

    # Gradients of the first micro-batch.
    grad = os.path.join(tmp, name + ".grad.loom")
    run([loomc, "train", model, "--gradients", "-o", grad, "--batch", batch]
        + flags, tmp)
    ins = []
    for key in data.files:
        path = os.path.join(tmp, f"{name}.{key}.npy")
        np.save(path, data[key][: int(batch)])
        ins += ["--in", f"{key}={path}"]
    out_dir = os.path.join(tmp, name + ".grads")
    os.makedirs(out_dir, exist_ok=True)
    run([loom_run, grad, "--out-dir", out_dir] + ins, tmp)
    for key in ref.files:
        if key.startswith("grad/"):
            got = np.load(os.path.join(out_dir, key[5:] + ".grad.npy"))
            close(key, got, ref[key], 1e-3, 1e-6)

    # Five optimizer steps.
    train = os.path.join(tmp, name + ".loom")
    ckpt = os.path.join(tmp, name + ".loomckpt")
    run([loomc, "train", model, "-o", train, "--batch", batch] + flags, tmp)
    cmd = [loom_run, train, "--data", os.path.join(HERE, cfg["data"]),
           "--batch", batch, "--log-every", "1"]
    out = run(cmd + ["--steps", str(steps), "--save", ckpt], tmp)
    log = logged(out)
    close("loss", log[:, 0], ref["loss"], 1e-4, 1e-6)
    close("lr", log[:, 1], ref["lr"], 1e-5, 1e-9)
    close("grad_norm", log[:, 2], ref["grad_norm"], 1e-4, 1e-6)

    trained = os.path.join(tmp, name + ".onnx")
    run([loomc, "export", train, "--checkpoint", ckpt, "-o", trained], tmp)
    params = {t.name: numpy_helper.to_array(t)
              for t in onnx.load(trained).graph.initializer}
    adam = flag(flags, "--optimizer", "adamw") != "sgd"
    lr = float(flag(flags, "--lr", "1e-3"))
    for key in ref.files:
        if not key.startswith("param/"):
            continue
        got, want = params[key[6:]], ref[key]
        if adam:
            noise = np.abs(ref["grad/" + key[6:]]) < 1e-6
            if (np.abs(got - want)[noise] > 2 * lr * steps).any():
                failures.append(f"{key}: an element with a gradient below "
                                "1e-6 moved more than 2 * lr * steps")
            close(key, np.where(noise, want, got), want, 1e-4, 5e-5)
        else:
            close(key, got, want, 1e-4, 1e-5)

    # The trained model runs in ONNX Runtime with Loom's outputs.
    if ort_available(tmp):
        inputs = [k for k in data.files if k != flag(flags, "--labels", "")]
        infer = os.path.join(tmp, name + ".trained.loom")
        run([loomc, "compile", trained, "-o", infer], tmp)
        ort_out = os.path.join(tmp, name + ".ort")
        os.makedirs(ort_out, exist_ok=True)
        run([loom_run, infer, "--out-dir", ort_out]
            + [a for k in inputs
               for a in ("--in", f"{k}={tmp}/{name}.{k}.npy")], tmp)
        r = subprocess.run(
            ["node", os.path.join(HERE, "..", "tools", "ort_run.js"), trained]
            + [a for k in inputs for a in ("--in", f"{tmp}/{name}.{k}.npy")]
            + ["--expect", os.path.join(ort_out, "logits.npy"),
               "--rtol", "1e-4", "--atol", "1e-5"],
            capture_output=True, text=True)
        if r.returncode != 0:
            failures.append("ONNX Runtime on the trained model: "
                            + (r.stdout + r.stderr).strip())

    if resume_check:
        first = os.path.join(tmp, name + ".first.loomckpt")
        a = run(cmd + ["--steps", "2", "--save", first], tmp)
        b = run(cmd + ["--steps", str(steps - 2), "--resume", first], tmp)
        losses = [row[0] for row in logged(a)] + [row[0] for row in logged(b)]
        if losses != list(log[:, 0]):
            failures.append(f"resume: losses {losses} != {list(log[:, 0])}")

    for f in failures:
        print(f"{name}: {f}")
    print(f"{name}: {'ok' if not failures else 'FAILED'}")
    return not failures


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    resume_check = "--resume-check" in sys.argv
    bindir, names = args[0], args[1:]
    configs = json.load(open(os.path.join(HERE, "configs.json")))
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for name in names or configs:
            ok &= check(name, configs[name], os.path.abspath(bindir), tmp,
                        resume_check)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
