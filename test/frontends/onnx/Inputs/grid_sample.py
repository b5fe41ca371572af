"""Inputs (--inputs DIR) and references of grid-sample.onnxtext: GridSample
as PyTorch's grid_sample defines it, RoiAlign as ONNX Runtime computes it
(numpy loops, float64)."""
import itertools
import math
import os
import sys

import numpy as np

if sys.argv[1] == "--inputs":
    d = sys.argv[2]
    r = np.random.default_rng(3)
    np.save(os.path.join(d, "x.npy"), r.standard_normal((2, 3, 6, 7)).astype(np.float32))
    np.save(os.path.join(d, "grid.npy"), r.uniform(-1.7, 1.7, (2, 4, 5, 2)).astype(np.float32))
    rois = [[0.5, 1.0, 9.0, 7.5], [-3.0, -2.0, 4.0, 5.0], [6.0, 4.0, 16.0, 13.0], [2.0, 2.0, 3.0, 2.5]]
    np.save(os.path.join(d, "rois.npy"), np.array(rois, np.float32))
    np.save(os.path.join(d, "bi.npy"), np.array([0, 1, 1, 0], np.int64))
    sys.exit(0)

d = sys.argv[1]
x, grid, rois = (np.load(os.path.join(d, n + ".npy")).astype(np.float64)
                 for n in ("x", "grid", "rois"))
bi = np.load(os.path.join(d, "bi.npy"))
N, C, H, W = x.shape


def reflect(v, twice_low, twice_high):
    if twice_low == twice_high:
        return 0.0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    v = abs(v - low)
    extra, flips = math.fmod(v, span), math.floor(v / span)
    return extra + low if flips % 2 == 0 else span - extra + low


def inside(v, size, padding, align):
    if padding == "border":
        return min(max(v, 0), size - 1)
    if padding == "reflection":
        v = reflect(v, 0, 2 * (size - 1)) if align else reflect(v, -1, 2 * size - 1)
        return min(max(v, 0), size - 1)
    return v


def cubic(t):
    a = -0.75
    near = lambda u: ((a + 2) * u - (a + 3)) * u * u + 1
    far = lambda u: ((a * u - 5 * a) * u + 8 * a) * u - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def grid_sample(mode, padding, align):
    out = np.zeros((N, C) + grid.shape[1:3])
    for n, i, j in itertools.product(range(N), range(grid.shape[1]), range(grid.shape[2])):
        gx, gy = grid[n, i, j]
        ix = ((gx + 1) / 2) * (W - 1) if align else ((gx + 1) * W - 1) / 2
        iy = ((gy + 1) / 2) * (H - 1) if align else ((gy + 1) * H - 1) / 2

        def at(yy, xx):
            yy, xx = int(yy), int(xx)
            ok = 0 <= yy < H and 0 <= xx < W
            return x[n, :, yy, xx] if ok else np.zeros(C)

        if mode == "bicubic":
            x0, y0 = math.floor(ix), math.floor(iy)
            wx, wy = cubic(ix - x0), cubic(iy - y0)
            for a, b in itertools.product(range(4), range(4)):
                yy = inside(y0 - 1 + a, H, padding, align)
                xx = inside(x0 - 1 + b, W, padding, align)
                out[n, :, i, j] += wy[a] * wx[b] * at(yy, xx)
            continue
        ix, iy = inside(ix, W, padding, align), inside(iy, H, padding, align)
        if mode == "nearest":
            out[n, :, i, j] = at(np.rint(iy), np.rint(ix))
            continue
        x0, y0 = math.floor(ix), math.floor(iy)
        fx, fy = ix - x0, iy - y0
        out[n, :, i, j] = ((1 - fy) * (1 - fx) * at(y0, x0) + (1 - fy) * fx * at(y0, x0 + 1)
                           + fy * (1 - fx) * at(y0 + 1, x0) + fy * fx * at(y0 + 1, x0 + 1))
    return out


def roi_align(mode, half_pixel, ratio, oh=3, ow=2, scale=0.5):
    out = np.zeros((len(rois), C, oh, ow))
    off = 0.5 if half_pixel else 0.0
    for r, roi in enumerate(rois):
        x1, y1, x2, y2 = roi * scale - off
        rw, rh = x2 - x1, y2 - y1
        if not half_pixel:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        for ph, pw in itertools.product(range(oh), range(ow)):
            acc = []
            for iy, ix in itertools.product(range(ratio), range(ratio)):
                y = y1 + ph * rh / oh + (iy + 0.5) * rh / oh / ratio
                xx = x1 + pw * rw / ow + (ix + 0.5) * rw / ow / ratio
                if y < -1 or y > H or xx < -1 or xx > W:
                    acc.append(np.zeros((4, C)))
                    continue
                y, xx = max(y, 0.0), max(xx, 0.0)
                yl, xl = int(y), int(xx)
                if yl >= H - 1:
                    yl = yh = H - 1
                    y = float(yl)
                else:
                    yh = yl + 1
                if xl >= W - 1:
                    xl = xh = W - 1
                    xx = float(xl)
                else:
                    xh = xl + 1
                ly, lx = y - yl, xx - xl
                img = x[bi[r]]
                acc.append(np.stack([(1 - ly) * (1 - lx) * img[:, yl, xl], (1 - ly) * lx * img[:, yl, xh],
                                     ly * (1 - lx) * img[:, yh, xl], ly * lx * img[:, yh, xh]]))
            acc = np.stack(acc)  # [samples, 4, C]
            out[r, :, ph, pw] = acc.sum(1).mean(0) if mode == "avg" else acc.max(1).max(0)
    return out


want = {}
for mode in ["bilinear", "nearest", "bicubic"]:
    for padding in ["zeros", "border", "reflection"]:
        for align in [0, 1]:
            want[f"{mode}_{padding}_{align}"] = grid_sample(mode, padding, align)
for mode in ["avg", "max"]:
    want[f"roi_{mode}_half_pixel"] = roi_align(mode, True, 2)
    want[f"roi_{mode}_output_half_pixel"] = roi_align(mode, False, 3)
for name, ref in want.items():
    got = np.load(os.path.join(d, name + ".npy"))
    ok = got.shape == ref.shape and np.allclose(got, ref, rtol=1e-4, atol=1e-5)
    print(name, "ok" if ok else f"MISMATCH max err {np.abs(got - ref).max()}")
