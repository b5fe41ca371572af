#!/usr/bin/env python3
"""A CUDA training step moves only the batch and the scalars (CTest
cuda-sim-copies).

The MLP with Adam (test/training/configs.json's mlp_adam) compiled with
`loomc train --target cuda` runs 2 and then 6 steps in the CUDA simulator
(`loom-run --device cuda-sim`), which counts every copy the runtime's CUDA
executor asks of the driver (LOOM_CUDA_SIM_STATS=1). The 4 extra steps'
host-to-device bytes must be the batches' (the samples and labels) plus at
most 256 bytes a step of counters, their device-to-host bytes at most 256
a step (the loss, the learning rate, the gradient norm): the parameters
and Adam's moments (many times larger) stay on the device.

  cuda-sim-copies.py LOOMC LOOM_RUN
"""
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def npz_bytes(path):
    """Each array's bytes per sample (its first dim), by name."""
    import numpy as np
    data = np.load(path)
    return {k: data[k].nbytes // data[k].shape[0] for k in data.files}


def main():
    loomc, loom_run = sys.argv[1:3]
    with open(os.path.join(HERE, "configs.json")) as f:
        cfg = json.load(f)["mlp_adam"]
    batch = 4
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, LOOM_CUDA_SIM_STATS="1",
                   LOOM_CUDA_CACHE=os.path.join(tmp, "cache"))
        art = os.path.join(tmp, "mlp.loom")
        p = subprocess.run([loomc, "train", os.path.join(HERE, cfg["model"]),
                            *cfg["loomc"], "--batch", str(batch), "--target",
                            "cuda", "-o", art], capture_output=True, text=True)
        if p.returncode:
            print("loomc train failed:\n" + p.stderr)
            return 1
        counts = {}
        for steps in (2, 6):
            p = subprocess.run([loom_run, art, "--device", "cuda-sim", "--data",
                                os.path.join(HERE, cfg["data"]), "--batch",
                                str(batch), "--steps", str(steps)],
                               capture_output=True, text=True, env=env)
            if p.returncode and ("no host C++ compiler" in p.stderr or
                                 "x86-64 Linux only" in p.stderr):
                print("skipped: " + p.stderr.strip())
                return 77
            m = re.search(r"host to device (\d+) copies (\d+) bytes; device "
                          r"to host (\d+) copies (\d+) bytes; device to "
                          r"device (\d+) copies (\d+) bytes", p.stderr)
            if p.returncode or not m:
                print(f"loom-run --steps {steps} failed:\n" + p.stderr)
                return 1
            counts[steps] = [int(v) for v in m.groups()]
            print(f"{steps} steps: {p.stderr.strip().splitlines()[-1]}")
        per = [(b - a) / 4 for a, b in zip(counts[2], counts[6])]
        sample = sum(npz_bytes(os.path.join(HERE, cfg["data"])).values())
        print(f"per step: host to device {per[0]:g} copies {per[1]:g} bytes "
              f"(a batch is {sample * batch} bytes), device to host "
              f"{per[2]:g} copies {per[3]:g} bytes, device to device "
              f"{per[4]:g} copies {per[5]:g} bytes")
        failures = []
        if per[1] > sample * batch + 256:
            failures.append(f"a step uploads {per[1]:g} bytes, more than the "
                            f"batch's {sample * batch} and 256 of counters")
        if per[3] > 256:
            failures.append(f"a step downloads {per[3]:g} bytes, more than "
                            "256 of scalars")
        if counts[2][1] < 10 * (sample * batch + 256):
            failures.append("the state is too small for this test to tell "
                            f"({counts[2][1]} bytes uploaded in 2 steps)")
        for f in failures:
            print("FAIL: " + f)
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
