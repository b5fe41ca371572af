"""The inputs (gen DIR) and references (check DIR) of
data-dependent.onnxtext (numpy)."""
import os
import sys

import numpy as np

mode, d = sys.argv[1], sys.argv[2]
path = lambda name: os.path.join(d, name + ".npy")

if mode == "gen":
    np.save(path("x"), np.array([[0, 1, 0, 2], [3, 0, 0, 4], [0, 0, 5, 0]],
                                np.float32))
    np.save(path("c"), np.array([True, False, True, True]))
    np.save(path("v"), np.array([2, 1, 1, 3, 4, 3, 2], np.float32))
    np.save(path("r"), np.array([[1, 0, 2], [1, 0, 1], [1, 0, 2], [0, 5, 5]],
                                np.int64))
    rng = np.random.default_rng(7)
    corner = rng.uniform(0, 4, (2, 12, 2))
    size = rng.uniform(0.5, 3, (2, 12, 2))
    boxes = np.concatenate([corner, corner + size], axis=2)
    # Some boxes with their corners the other way round.
    boxes[:, ::3] = boxes[:, ::3][..., [2, 3, 0, 1]]
    np.save(path("boxes"), boxes.astype(np.float32))
    np.save(path("scores"), rng.uniform(0, 1, (2, 2, 12)).astype(np.float32))
    sys.exit(0)

x, c, v, r = (np.load(path(n)) for n in "xcvr")
boxes, scores = np.load(path("boxes")), np.load(path("scores"))


def first_order(y, idx, inv, cnt):
    """np.unique's sorted outputs reordered by first occurrence."""
    order = np.argsort(idx, kind="stable")
    place = np.argsort(order, kind="stable")
    return y[order], idx[order], place[inv], cnt[order]


def iou(a, b):
    (ay0, ay1), (ax0, ax1) = sorted(a[0::2]), sorted(a[1::2])
    (by0, by1), (bx0, bx1) = sorted(b[0::2]), sorted(b[1::2])
    inter = max(min(ay1, by1) - max(ay0, by0), 0) * max(
        min(ax1, bx1) - max(ax0, bx0), 0)
    union = (ay1 - ay0) * (ax1 - ax0) + (by1 - by0) * (bx1 - bx0) - inter
    return inter / union if union > 0 else 0.0


def nms(boxes, scores, most, limit, least):
    """Greedy per batch and class, highest score first."""
    out = []
    for b in range(scores.shape[0]):
        for k in range(scores.shape[1]):
            s = scores[b, k]
            kept = []
            for i in sorted(range(len(s)), key=lambda i: (-s[i], i)):
                if s[i] <= least or len(kept) == most:
                    break
                if all(iou(boxes[b, i], boxes[b, j]) <= limit for j in kept):
                    kept.append(i)
            out += [[b, k, i] for i in kept]
    return np.array(out, np.int64).reshape(-1, 3)


u = np.unique(v, return_index=True, return_inverse=True, return_counts=True)
us = first_order(*u)
ua = np.unique(r, axis=0, return_index=True, return_inverse=True,
               return_counts=True)
want = {
    "nz": np.array(np.nonzero(x)),
    "nz_none": np.array(np.nonzero(x - x)),
    "comp_axis": np.compress(c, x, axis=1),
    "comp_flat": np.compress(c, x),
}
for prefix, outs in (("u", u), ("us", us), ("ua", ua)):
    for suffix, ref in zip(("", "_idx", "_inv", "_cnt"), outs):
        want[prefix + suffix] = ref
want["nms"] = nms(boxes.astype(np.float64), scores, 7, 0.3, 0.2)
for name, ref in want.items():
    got = np.load(path(name))
    ref = np.asarray(ref)
    if ref.dtype.kind in "iu":
        ref = ref.astype(np.int64).reshape(ref.shape)
    ok = got.shape == ref.shape and np.array_equal(got, ref)
    print(name, "ok" if ok else f"MISMATCH {got} want {ref}")
