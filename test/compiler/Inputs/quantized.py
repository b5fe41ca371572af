"""Inputs for quantized-model.onnxtext and numpy's reference for its
outputs: `quantized.py inputs DIR` writes x.npy and a.npy; `quantized.py
check DIR` compares DIR/{y,q,mm,d}.npy with numpy (integers exactly, floats
to 1e-5) and prints one line per output."""
import os
import sys

import numpy as np

W = np.array([1, -2, 3, 4, -5, 6, -7, 8, -9, 10, -11, 12, 127, -128, 0, 5, 5, 5],
             dtype=np.int8).reshape(6, 3)
WS = np.array([0.05, 0.1, 0.2], dtype=np.float32)


def inputs(d):
    rng = np.random.default_rng(7)
    x = rng.uniform(-5, 5, (4, 6)).astype(np.float32)
    x[0, :3] = [0.015, 0.045, -0.015]  # ties: round half to even
    x[1, :2] = [100.0, -100.0]        # saturates at 255 and 0
    np.save(os.path.join(d, "x.npy"), x)
    np.save(os.path.join(d, "a.npy"), rng.integers(0, 256, (4, 6), dtype=np.uint8))


def check(d):
    x = np.load(os.path.join(d, "x.npy"))
    a = np.load(os.path.join(d, "a.npy"))
    q = np.clip(np.rint(x / np.float32(0.03)) + 128, 0, 255).astype(np.uint8)
    deq = ((q.astype(np.int32) - 128) * np.float32(0.03)).astype(np.float32)
    w = W.astype(np.float32) * WS
    ref = {
        "q": q,
        "d": deq,
        "y": deq @ w,
        "mm": (a.astype(np.int32) - 128) @ (W.astype(np.int32) - 3),
    }
    for name in ("q", "d", "y", "mm"):
        got = np.load(os.path.join(d, name + ".npy"))
        want = ref[name]
        exact = want.dtype.kind in "iu"
        ok = got.dtype == want.dtype and got.shape == want.shape and (
            np.array_equal(got, want) if exact
            else np.allclose(got, want, rtol=1e-5, atol=1e-5))
        print(f"{name}: {'ok' if ok else 'MISMATCH'} {got.dtype}")
        if not ok:
            print(got, want, sep="\n")


if __name__ == "__main__":
    {"inputs": inputs, "check": check}[sys.argv[1]](sys.argv[2])
