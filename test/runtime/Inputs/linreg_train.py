"""Data for Inputs/linreg-train.mlir, and its training in numpy.

  linreg_train.py data OUT.npz [--nan SAMPLE] [--compressed]
      16 samples: x ~ N(0, 1) [16, 4] (seed 0), y = x @ w_true [16, 2];
      --nan puts a NaN into x of one sample.
  linreg_train.py check DATA.npz BATCH HORIZON < LOG
      LOG is loom-run's output with --log-every 1 (one run, or a run and
      its resumed continuation). Replays the training in numpy (float32)
      and checks every logged loss, lr and gradient norm; prints
      "N steps match numpy" and whether the loss falls.
"""
import re
import sys

import numpy as np

W_TRUE = np.array([[1, -2], [0.5, 1], [-1, 0], [2, 0.5]], np.float32)
W_INIT = np.array([[0.5, 0], [0, 0.5], [0, 0], [0, 0]], np.float32)
ACCUMULATE = 2
LR = 0.5


def make_data(out, nan, compressed):
    x = np.random.default_rng(0).standard_normal((16, 4)).astype(np.float32)
    y = (x @ W_TRUE).astype(np.float32)
    if nan is not None:
        x[nan, 2] = np.nan
    (np.savez_compressed if compressed else np.savez)(out, x=x, y=y)


def replay(data, batch, horizon, steps):
    """(loss mean, lr, grad_norm) per optimizer step, as loom-run logs."""
    x, y = data["x"], data["y"]
    w, acc = W_INIT.copy(), np.zeros_like(W_INIT)
    out = []
    losses = []
    for micro in range(steps * ACCUMULATE):
        idx = [(micro * batch + i) % len(x) for i in range(batch)]
        r = x[idx] @ w - y[idx]
        losses.append(float((r * r).mean()))
        total = acc + x[idx].T @ r * np.float32(2 / r.size)
        avg = total * np.float32(0.5)
        lr = np.float32(LR) * (1 - np.float32(micro // ACCUMULATE) / np.float32(horizon))
        if (micro + 1) % ACCUMULATE == 0:
            w, acc = w - lr * avg, np.zeros_like(acc)
            out.append((np.mean(losses), float(lr), float(np.sqrt((avg * avg).sum()))))
            losses = []
        else:
            acc = total
    return out


def check(data_path, batch, horizon):
    logged = {}
    for line in sys.stdin:
        m = re.match(r"step (\d+)/\d+  loss (\S+)  lr (\S+)  grad_norm (\S+)", line)
        if m:
            logged[int(m.group(1))] = [float(v) for v in m.groups()[1:]]
    if not logged:
        sys.exit("no step lines in the log")
    ref = replay(np.load(data_path), batch, horizon, max(logged))
    bad = 0
    for step, got in sorted(logged.items()):
        want = ref[step - 1]
        # The log prints the loss, lr and grad_norm to 6 digits.
        if not np.allclose(got, want, rtol=[1e-5, 1e-3, 1e-3], atol=1e-7):
            print(f"step {step}: loom-run logged {got}, numpy gives {want}")
            bad += 1
    if bad:
        sys.exit(1)
    first, last = logged[min(logged)][0], logged[max(logged)][0]
    print(f"{len(logged)} steps match numpy; the loss "
          f"{'falls' if last < first / 4 else 'does not fall'}: "
          f"{first:.4g} -> {last:.4g}")


def main():
    if sys.argv[1] == "data":
        args = sys.argv[3:]
        nan = int(args[args.index("--nan") + 1]) if "--nan" in args else None
        make_data(sys.argv[2], nan, "--compressed" in args)
    else:
        check(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))


if __name__ == "__main__":
    main()
