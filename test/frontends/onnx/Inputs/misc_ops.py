"""The inputs (`DIR inputs`) and references of misc-ops.onnxtext (numpy,
float64), written from the ONNX specs of the ops."""
import os
import sys

import numpy as np

d = sys.argv[1]
if len(sys.argv) > 2:
    rng = np.random.default_rng(7)
    save = lambda n, a: np.save(os.path.join(d, n + ".npy"), a)
    save("r", np.array(0.1, np.float32))
    save("t0", np.array(0, np.int64))
    save("t3", np.array(3, np.int64))
    save("x", rng.normal(size=(2, 3)).astype(np.float32))
    save("g", rng.normal(size=(2, 3)).astype(np.float32))
    save("v", rng.normal(size=(2, 3)).astype(np.float32))
    save("h", rng.uniform(0.1, 2, size=(2, 3)).astype(np.float32))
    save("idx", np.array([0, 3, -1, 7, -4], np.int64))
    save("depth", np.array(4.0, np.float32))
    save("vals", np.array([-1.0, 2.5], np.float32))
    save("seq", np.array([[1, 3, 7, 1, 3, 3, 7], [7, 7, 2, 1, 5, 3, 1]], np.int32))
    save("img", rng.normal(size=(1, 2, 5, 4)).astype(np.float32))
    save("roi", np.array([0, 0, 0.1, -0.2, 1, 1, 0.9, 0.7], np.float32))
    save("rsizes", np.array([1, 2, 1, 6], np.int64))
    sys.exit(0)

ld = lambda n: np.load(os.path.join(d, n + ".npy"))
r, t0, t3 = float(ld("r")), 0, 3
x, g, v, h = (ld(n).astype(np.float64) for n in "xgvh")


def adam(t, post):
    alpha, beta, eps, norm = 0.9, 0.8, 0.01, 0.1
    gr = norm * x + g
    vn = alpha * v + (1 - alpha) * gr
    hn = beta * h + (1 - beta) * gr * gr
    ra = r * np.sqrt(1 - beta**t) / (1 - alpha**t) if t > 0 else r
    return (1 - post) * (x - ra * vn / (np.sqrt(hn) + 0.01)), vn, hn


def momentum(t, nesterov):
    alpha, beta, norm = 0.9, 0.3, 0.1
    gr = norm * x + g
    vn = alpha * v + (beta if t > 0 else 1) * gr
    return (x - r * (gr + alpha * vn) if nesterov else x - r * vn), vn


def onehot(axis):
    idx, depth, vals = ld("idx"), int(ld("depth")), ld("vals")
    idx = np.where(idx < 0, idx + depth, idx)
    hit = idx[:, None] == np.arange(depth)[None, :]
    out = np.where(hit, vals[1], vals[0])
    return out if axis == -1 else out.T


def tfidf(mode):
    pool1, pool2 = [1, 3, 7], [(1, 3), (3, 7)]
    indexes, weights = [5, 0, 3, 1, 4], [0.5, 2.0, 1.5, 3.0, 0.25]
    out = np.zeros((2, 6))
    for b, s in enumerate(ld("seq")):
        counts = [np.sum(s == p) for p in pool1]
        for p in pool2:
            counts.append(sum(
                s[i] == p[0] and s[i + k] == p[1]
                for k in (1, 2, 3) for i in range(len(s) - k)))
        for j, c in enumerate(counts):
            out[b, indexes[j]] = {"TF": c, "IDF": (c > 0) * weights[j],
                                  "TFIDF": c * weights[j]}[mode]
    return out


ax0, av0, ah0 = adam(t0, 0.05)
want = {
    "adam_x0": ax0, "adam_v0": av0, "adam_h0": ah0,
    "adam_x3": adam(t3, 0.0)[0],
}
gr = 0.1 * x + g
hn = h + gr * gr
want["adagrad_x"] = x - r / (1 + t3 * 0.5) * gr / (np.sqrt(hn) + 0.01)
want["adagrad_h"] = hn
want["momentum_x0"], want["momentum_v0"] = momentum(t0, False)
want["momentum_x3"] = momentum(t3, False)[0]
want["nesterov_x3"] = momentum(t3, True)[0]
want["onehot"], want["onehot0"] = onehot(-1), onehot(0)
for m in ("TF", "IDF", "TFIDF"):
    want[m.lower()] = tfidf(m)


def resize(img, sizes, coordinate, mode, extrapolation=0.0):
    """Separable resize, one axis at a time, as the Resize spec writes the
    coordinate modes."""
    roi = ld("roi").astype(np.float64)
    out, outside = img.astype(np.float64), np.zeros(sizes, bool)
    rank = img.ndim
    for d in range(rank):
        n, m = img.shape[d], sizes[d]
        o = np.arange(m, dtype=np.float64)
        if coordinate == "crop":
            s, e = roi[d], roi[rank + d]
            c = (s * (n - 1) + o * (e - s) * (n - 1) / (m - 1) if m > 1
                 else np.full(m, 0.5 * (s + e) * (n - 1)))
            bad = (c < 0) | (c > n - 1)
            shape = [1] * rank
            shape[d] = m
            outside |= bad.reshape(shape)
        else:
            c = (o + 0.5) / (m / n)
        if mode == "nearest":
            i = np.clip(np.ceil(c - 0.5), 0, n - 1).astype(int)
            out = np.take(out, i, axis=d)
            continue
        c = np.clip(c, 0, n - 1)
        lo = np.floor(c)
        w = c - lo
        a = np.take(out, lo.astype(int), axis=d)
        b = np.take(out, np.minimum(lo + 1, n - 1).astype(int), axis=d)
        shape = [1] * rank
        shape[d] = m
        out = a + (b - a) * w.reshape(shape)
    return np.where(outside, extrapolation, out)


img = ld("img")
want["crop_linear"] = resize(img, (1, 2, 4, 3), "crop", "linear", -5.0)
want["crop_nearest"] = resize(img, (1, 2, 4, 3), "crop", "nearest")
want["half_pixel_nn"] = resize(img, (1, 2, 3, 7), "half", "nearest")
want["crop_runtime"] = resize(img, (1, 2, 1, 6), "crop", "linear", -5.0)
for name, ref in want.items():
    got = np.load(os.path.join(d, name + ".npy"))
    ok = got.shape == ref.shape and np.allclose(got, ref, rtol=1e-5, atol=1e-6)
    print(name, "ok" if ok else f"MISMATCH {got} want {ref}")
