"""The references of inverse-trig.onnxtext (numpy, float64)."""
import os
import sys

import numpy as np

d = sys.argv[1]
x = np.load(os.path.join(d, "x.npy")).astype(np.float64)
i = np.load(os.path.join(d, "i.npy"))
with np.errstate(invalid="ignore"):
    want = {
        "atan": np.arctan(x),
        "asin": np.arcsin(x),
        "acos": np.arccos(x),
        "thresholded": np.where(x > 0.2, x, 0),
        "shrink": np.where(x < -0.5, x + 0.25, np.where(x > 0.5, x - 0.25, 0)),
        "shrink_int": np.where(i < -1, i + 1, np.where(i > 1, i - 1, 0)),
    }
for name, ref in want.items():
    got = np.load(os.path.join(d, name + ".npy"))
    if got.dtype.kind == "i":
        ok = got.dtype == np.int32 and np.array_equal(got, ref)
    else:
        ok = np.allclose(got, ref, rtol=1e-5, atol=1e-6, equal_nan=True)
    print(name, "ok" if ok else f"MISMATCH {got} want {ref}")
