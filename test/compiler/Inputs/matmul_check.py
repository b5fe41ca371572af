#!/usr/bin/python3
"""Inputs and numpy references for matmul-blas.mlir.

matmul_check.py inputs DIR   writes a, b, v, w, c .npy (batch 2)
matmul_check.py check DIR    compares DIR/<output>.npy with numpy
"""
import os
import sys

import numpy as np

mode, d = sys.argv[1], sys.argv[2]
if mode == "inputs":
    rng = np.random.default_rng(7)
    shapes = {"a": (2, 5, 3), "b": (3, 4), "v": (3,), "w": (4,), "c": (1, 4, 3)}
    for name, shape in shapes.items():
        np.save(os.path.join(d, name + ".npy"),
                rng.standard_normal(shape).astype(np.float32))
    sys.exit(0)

x = {n: np.load(os.path.join(d, n + ".npy")).astype(np.float64)
     for n in "abvwc"}
a, b, v, w, c = x["a"], x["b"], x["v"], x["w"], x["c"]
a0 = a[0]
want = {
    "ab": a @ b,
    "a_ct": a @ np.swapaxes(c, -1, -2),
    "vb": v @ b,
    "av": a @ v,
    "vv": np.array(v @ v),
    "a0t_a0": (a0.T @ a0) @ a0.T,
    "bw": b @ w,
    "a_c": a @ np.swapaxes(c, -1, -2),
}
for name, ref in want.items():
    got = np.load(os.path.join(d, name + ".npy"))
    ok = got.shape == ref.shape and np.allclose(got, ref, rtol=1e-5, atol=1e-5)
    print(f"{name}: {'ok' if ok else 'MISMATCH'} {got.shape}")
