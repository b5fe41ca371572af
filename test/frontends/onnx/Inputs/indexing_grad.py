"""Checks the gradients of indexing-grad.onnxtext (GridSample, LRN,
GatherND, ScatterND, Det, RoiAlign and DFT under one MSE loss) that `loomc
train --gradients` computed against central finite differences of the same
loss in numpy (float64), each op written by its definition."""
import itertools
import math
import os
import sys

import numpy as np
import onnx
import onnx.parser
from onnx import numpy_helper

model, d = sys.argv[1], sys.argv[2]
text = "".join(line for line in open(model) if not line.startswith("#"))
params = {t.name: numpy_helper.to_array(t).astype(np.float64)
          for t in onnx.parser.parse_model(text).graph.initializer}
grid = np.load(os.path.join(d, "grid.npy")).astype(np.float64)
labels = np.load(os.path.join(d, "labels.npy")).astype(np.float64)


def grid_sample(x, grid):
    """Bilinear, zeros padding, align_corners 0."""
    n, c, h, w = x.shape
    out = np.zeros((n, c) + grid.shape[1:3])
    for b, i, j in itertools.product(range(n), *map(range, grid.shape[1:3])):
        ix = ((grid[b, i, j, 0] + 1) * w - 1) / 2
        iy = ((grid[b, i, j, 1] + 1) * h - 1) / 2
        x0, y0 = math.floor(ix), math.floor(iy)
        for yy, xx in itertools.product((y0, y0 + 1), (x0, x0 + 1)):
            if 0 <= yy < h and 0 <= xx < w:
                wt = (1 - abs(iy - yy)) * (1 - abs(ix - xx))
                out[b, :, i, j] += wt * x[b, :, yy, xx]
    return out


def lrn(x, size=3, alpha=0.5, beta=0.75, bias=1.0):
    out = np.zeros_like(x)
    for ch in range(x.shape[1]):
        lo = max(0, ch - (size - 1) // 2)
        hi = min(x.shape[1] - 1, ch + size // 2)
        sq = (x[:, lo:hi + 1] ** 2).sum(axis=1)
        out[:, ch] = x[:, ch] / (bias + alpha / size * sq) ** beta
    return out


def roi_align(x, rois, oh=2, ow=2, ratio=2):
    """avg, half_pixel, spatial_scale 1, all batch index 0."""
    _, c, h, w = x.shape
    out = np.zeros((len(rois), c, oh, ow))
    for r, (x1, y1, x2, y2) in enumerate(rois - 0.5):
        bh, bw = (y2 - y1) / oh, (x2 - x1) / ow
        for ph, pw, iy, ix in itertools.product(range(oh), range(ow), range(ratio), range(ratio)):
            y = min(max(y1 + ph * bh + (iy + 0.5) * bh / ratio, 0.0), h - 1)
            xx = min(max(x1 + pw * bw + (ix + 0.5) * bw / ratio, 0.0), w - 1)
            yl, xl = min(int(y), h - 1), min(int(xx), w - 1)
            yh, xh = min(yl + 1, h - 1), min(xl + 1, w - 1)
            ly, lx = y - yl, xx - xl
            v = ((1 - ly) * (1 - lx) * x[0, :, yl, xl] + (1 - ly) * lx * x[0, :, yl, xh]
                 + ly * (1 - lx) * x[0, :, yh, xl] + ly * lx * x[0, :, yh, xh])
            out[r, :, ph, pw] += v / ratio ** 2
    return out


def loss(p):
    snd = p["sdata"].copy()
    snd[[1, 3]] = p["supd"]
    z = np.fft.fft(p["sig"][0, :, 0])
    y = np.concatenate([
        grid_sample(p["img"], grid).ravel(), lrn(p["lx"]).ravel(),
        p["table"][[2, 0, 2]].ravel(), snd.ravel(),
        np.linalg.det(p["mats"]).ravel(), roi_align(p["rx"], p["rois"]).ravel(),
        np.stack([z.real, z.imag], axis=-1).ravel()])
    return np.mean((y - labels) ** 2)


print("loss", "ok" if np.isclose(np.load(os.path.join(d, "loss.npy")),
                                 loss(params), rtol=1e-5) else "MISMATCH")
eps = 1e-6
for name in ["img", "lx", "table", "sdata", "supd", "mats", "rx", "sig"]:
    got = np.load(os.path.join(d, name + ".grad.npy"))
    want = np.zeros_like(params[name])
    for i in np.ndindex(*want.shape):
        p = {k: v.copy() for k, v in params.items()}
        p[name][i] += eps
        up = loss(p)
        p[name][i] -= 2 * eps
        want[i] = (up - loss(p)) / (2 * eps)
    ok = got.shape == want.shape and np.allclose(got, want, rtol=1e-3, atol=1e-5)
    print(name, "ok" if ok else f"MISMATCH {got.ravel()[:8]} want {want.ravel()[:8]}")
