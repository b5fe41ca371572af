"""The references of constant-forms.onnxtext (numpy, float64)."""
import os
import sys

import numpy as np

d = sys.argv[1]
x = np.load(os.path.join(d, "x.npy")).astype(np.float64)


def mvn(axes):
    mean = x.mean(axis=axes, keepdims=True)
    std = np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True))
    return (x - mean) / (std + 1e-9)


want = {
    "scaled": x * 1.5,
    "shifted": x + np.array([1.0, -2.0]),
    "count": np.array(7, np.int64),
    "lens": np.array([3, -4], np.int64),
    "celu": np.where(x < 0, 2.0 * (np.exp(x / 2.0) - 1), x),
    "mvn": mvn((0, 2, 3)),
    "mvn_axes": mvn((1, 3)),
}
for name, ref in want.items():
    got = np.load(os.path.join(d, name + ".npy"))
    if ref.dtype == np.int64:
        ok = got.dtype == np.int64 and got.shape == ref.shape and np.array_equal(got, ref)
    else:
        ok = got.shape == ref.shape and np.allclose(got, ref, rtol=1e-5, atol=1e-5)
    print(name, "ok" if ok else f"MISMATCH {got} want {ref}")
