"""Inputs (--inputs DIR) and references of indexing.onnxtext (numpy loops,
float64)."""
import itertools
import os
import sys

import numpy as np

if sys.argv[1] == "--inputs":
    d = sys.argv[2]
    r = np.random.default_rng(0)
    np.save(os.path.join(d, "data.npy"), r.standard_normal((2, 3, 4)).astype(np.float32))
    np.save(os.path.join(d, "img.npy"), r.standard_normal((3, 3, 5, 5)).astype(np.float32))
    np.save(os.path.join(d, "seq.npy"), r.standard_normal((4, 5, 3)).astype(np.float32))
    m = r.standard_normal((4, 3, 3))
    m[1] = [[0, 2, 1], [1, 0, 3], [4, 5, 0]]  # needs row swaps
    m[2] = [[1, 2, 3], [2, 4, 6], [1, 0, 1]]  # singular
    m[3] = [[0, 0, 1], [0, 1, 0], [1, 0, 0]]  # a permutation: -1
    np.save(os.path.join(d, "mats.npy"), m.astype(np.float32))
    u8 = np.zeros((1, 2, 3, 3), np.uint8)
    u8[0, 1, 2, 1] = 7
    np.save(os.path.join(d, "u8.npy"), u8)
    sys.exit(0)

d = sys.argv[1]
data, img, seq, mats, u8 = (np.load(os.path.join(d, n + ".npy")).astype(np.float64)
                            for n in ("data", "img", "seq", "mats", "u8"))

gi = np.array([1, -1, 0, 0]).reshape(2, 2, 1)
gnd = np.stack([data[b][gi[b, :, 0]] for b in range(2)])

gi2 = np.array([3, 0, -1, 2, 1, 0]).reshape(2, 3, 1)
gnd2 = np.array([[data[b, i, gi2[b, i, 0]] for i in range(3)] for b in range(2)])

si3 = np.array([1, 2, 3, 0, 0, 0, 1, 2, 3]).reshape(3, 3)
snd_min = data.copy()
for row, upd in zip(si3, [-5, 0.5, 7]):
    snd_min[tuple(row)] = min(snd_min[tuple(row)], upd)

si = np.array([0, 1, -2, -1, 0, 1]).reshape(3, 2)
su = np.arange(1, 13, dtype=np.float64).reshape(3, 4)
snd_max, snd_add = data.copy(), data.copy()
for row, upd in zip(si, su):
    snd_max[tuple(row)] = np.maximum(snd_max[tuple(row)], upd)
    snd_add[tuple(row)] += upd

lens = [1, 3, 2, 4, 0]
rev = seq.copy()
for b, n in enumerate(lens):
    rev[:n, b] = seq[:n, b][::-1]


def maxpool(x, kernel, strides, pads, dilations, column_major=False):
    """MaxPool and its Indices (the first maximum, as ONNX Runtime)."""
    n, c, h, w = x.shape
    oh = (h + pads[0] + pads[2] - ((kernel[0] - 1) * dilations[0] + 1)) // strides[0] + 1
    ow = (w + pads[1] + pads[3] - ((kernel[1] - 1) * dilations[1] + 1)) // strides[1] + 1
    y = np.zeros((n, c, oh, ow))
    idx = np.zeros((n, c, oh, ow), np.int64)
    for b, ch, i, j in itertools.product(range(n), range(c), range(oh), range(ow)):
        best, at = -np.inf, -1
        for ki, kj in itertools.product(range(kernel[0]), range(kernel[1])):
            r = i * strides[0] - pads[0] + ki * dilations[0]
            s = j * strides[1] - pads[1] + kj * dilations[1]
            if 0 <= r < h and 0 <= s < w and x[b, ch, r, s] > best:
                best = x[b, ch, r, s]
                at = (b * c + ch) * h * w + (s * h + r if column_major else r * w + s)
        y[b, ch, i, j], idx[b, ch, i, j] = best, at
    return y, idx


pooled, argmax = maxpool(img, [3, 2], [2, 2], [1, 0, 1, 1], [1, 2])
_, argmax_cm = maxpool(img, [3, 2], [2, 2], [1, 0, 1, 1], [1, 2], True)
_, argmax_u8 = maxpool(u8, [2, 2], [2, 2], [1, 1, 1, 1], [1, 1])
pooled2, argmax2 = maxpool(img, [2, 2], [2, 2], [0, 0, 1, 1], [1, 1])
unpooled = np.zeros(img.size)
unpooled[argmax2.ravel()] = pooled2.ravel()
unpooled = unpooled.reshape(img.shape)

lrn = np.zeros_like(img)
for ch in range(img.shape[1]):
    lo, hi = max(0, ch - 1), min(img.shape[1] - 1, ch + 2)
    sq = (img[:, lo:hi + 1] ** 2).sum(axis=1)
    lrn[:, ch] = img[:, ch] / (1.5 + 0.01 / 4 * sq) ** 0.6

want = {
    "gnd": gnd, "gnd2": gnd2, "snd_max": snd_max, "snd_add": snd_add,
    "snd_min": snd_min, "rev": rev,
    "pooled": pooled, "argmax": argmax, "argmax_cm": argmax_cm,
    "argmax_u8": argmax_u8,
    "unpooled": unpooled, "lrn": lrn, "det": np.linalg.det(mats),
    "diag": np.einsum("bii->bi", mats), "trace": np.einsum("ii", mats[0]),
}
for name, ref in want.items():
    got = np.load(os.path.join(d, name + ".npy"))
    if got.dtype.kind == "i":
        ok = got.dtype == np.int64 and np.array_equal(got, ref)
    else:
        ok = got.shape == ref.shape and np.allclose(got, ref, rtol=1e-4, atol=1e-5)
    print(name, "ok" if ok else f"MISMATCH {got} want {ref}")
