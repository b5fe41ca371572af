"""The inputs and numpy references of legacy-opsets.onnxtext.

legacy_opsets.py inputs DIR: writes the inputs; legacy_opsets.py check DIR:
compares loom-run's outputs in DIR with numpy (float64)."""
import os
import sys

import numpy as np

mode, d = sys.argv[1], sys.argv[2]
names = ["a", "b", "v", "w", "m", "k", "p", "q"]
if mode == "inputs":
    rng = np.random.default_rng(6)
    shapes = {"a": (2, 3, 4), "b": (2, 3, 4), "m": (2, 4), "k": (4, 3),
              "p": (3, 4), "q": (3, 4)}
    arrays = {n: rng.uniform(-2, 2, s) for n, s in shapes.items()}
    arrays["v"] = np.array([0.5, -1.25, 2.0])
    arrays["w"] = np.array([1.5, -0.5, 0.25, 3.0])
    # Away from zero: |q| is a variance.
    arrays["q"] = np.sign(arrays["q"]) * (np.abs(arrays["q"]) + 0.1)
    for n, x in arrays.items():
        np.save(os.path.join(d, n + ".npy"), x.astype(np.float32))
    sys.exit(0)

x = {n: np.load(os.path.join(d, n + ".npy")).astype(np.float64) for n in names}
a, b, v, w, m, k, p, q = (x[n] for n in names)
chan = v[None, :, None]
want = {
    "add_axis": a + chan,
    "mul_suffix": a * w,
    "sub_same": a - b,
    "div_const": a / 0.5,
    "pow_const": a**2,
    "sum": a + b + a,
    "max": np.maximum(a, b),
    "min": np.minimum(a, b),
    "gemm": 2.0 * (m @ p.T) + 0.5 * v,
    "matmul": m @ k,
    "prelu": np.where(a < 0, a * chan, a),
    "pad_reflect": np.pad(a, ((0, 0), (0, 0), (1, 2)), mode="reflect"),
    "pad_edge": np.pad(a, ((0, 0), (1, 1), (0, 0)), mode="edge"),
    "pad_const": np.pad(a, ((1, 0), (0, 0), (0, 1)), constant_values=2.5),
    "maxpool": a.reshape(2, 3, 2, 2).max(-1),
    "avgpool": (a[..., :-1] + a[..., 1:]) / 2,
    "bn": (a - chan) / np.sqrt(np.abs(chan) + 1e-3) * chan + chan,
    "bn_act": (a - p) / np.sqrt(np.abs(q) + 1e-5) * p + q,
}
for name, ref in want.items():
    got = np.load(os.path.join(d, name + ".npy"))
    ok = got.shape == ref.shape and np.allclose(got, ref, rtol=1e-5, atol=1e-5)
    print(name, "ok" if ok else f"MISMATCH {got} want {ref}")
