"""The references of conv3d.onnxtext: Conv by its definition, a sum over
channels and kernel offsets of the zero-padded input read at
o * stride + k * dilation (numpy, float64). The pads SAME_UPPER stands for
are written out by hand."""
import os
import sys

import numpy as np


def conv(x, w, b, strides, pads, dilations, group):
    spatial = x.ndim - 2
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [
        (pads[i], pads[spatial + i]) for i in range(spatial)])
    k = w.shape[2:]
    out = [(xp.shape[2 + i] - dilations[i] * (k[i] - 1) - 1) // strides[i] + 1
           for i in range(spatial)]
    o = w.shape[0]
    og, cg = o // group, x.shape[1] // group
    y = np.zeros([x.shape[0], o] + out)
    for pos in np.ndindex(*out):
        for off in np.ndindex(*k):
            at = tuple(pos[i] * strides[i] + off[i] * dilations[i]
                       for i in range(spatial))
            for g in range(group):
                xs = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + at]
                ws = w[(slice(g * og, (g + 1) * og), slice(None)) + off]
                y[(slice(None), slice(g * og, (g + 1) * og)) + pos] += \
                    xs @ ws.T.astype(np.float64)
    if b is not None:
        y += b.reshape([1, -1] + [1] * spatial)
    return y


d = sys.argv[1]
v = {n: np.load(os.path.join(d, n + ".npy"))
     for n in ["x", "w", "b", "x2", "w2"]}
want = {
    "y": conv(v["x"], v["w"], v["b"], [2, 1, 1], [1, 0, 1, 0, 0, 1],
              [1, 2, 1], 2),
    # SAME_UPPER: out = ceil(in / stride) = [2, 4, 3]; total pads
    # [2, 2, 1], the odd one at the end.
    "y2": conv(v["x2"], v["w2"], None, [2, 1, 2], [1, 1, 0, 1, 1, 1],
               [1, 1, 1], 1),
}
for name, ref in want.items():
    got = np.load(os.path.join(d, name + ".npy"))
    ok = got.shape == ref.shape and np.allclose(got, ref, rtol=1e-5, atol=1e-5)
    print(name, "ok" if ok else f"MISMATCH {got.shape}: {got.ravel()[:8]} "
          f"want {ref.shape}: {ref.ravel()[:8]}")
