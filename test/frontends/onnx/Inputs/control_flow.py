"""Inputs and numpy references of control-flow.onnxtext.

`make DIR` writes the inputs; `check DIR` compares DIR/a and DIR/b (the
two runs) with the loops written out in numpy.
"""
import os
import sys

import numpy as np

mode, d = sys.argv[1], sys.argv[2]
if mode == "make":
    np.save(os.path.join(d, "c1.npy"), np.array(True))
    np.save(os.path.join(d, "c0.npy"), np.array(False))
    np.save(os.path.join(d, "x.npy"), np.array([1, 2, 3, 4], np.float32))
    np.save(os.path.join(d, "w.npy"), np.array([0.5, -1, 2, 3], np.float32))
    np.save(os.path.join(d, "n10.npy"), np.array(10, np.int64))
    np.save(os.path.join(d, "n3.npy"), np.array(3, np.int64))
    np.save(os.path.join(d, "l20.npy"), np.array(20, np.float32))
    np.save(os.path.join(d, "l100.npy"), np.array(100, np.float32))
    np.save(os.path.join(d, "xs.npy"), np.arange(6, dtype=np.float32).reshape(3, 2))
    sys.exit(0)


def load(name):
    return np.load(os.path.join(d, name))


x, w, xs = load("x.npy"), load("w.npy"), load("xs.npy")
for run, c, n, limit in (("a", True, 10, 20.0), ("b", False, 3, 100.0)):
    want = {"y_if": x * w if c else x - w}
    # Loop: M = 3, no condition; carried a += w, scan the value before.
    a, seen = x.copy(), []
    for _ in range(3):
        seen.append(a.copy())
        a = a + w
    want["acc"], want["accs"] = a, np.stack(seen)
    # Loop: M = n, cond = True, then v * 2 < limit.
    v, vs, cond, i = np.float32(1), [], True, 0
    while i < n and cond:
        v = v * 2
        cond = v < limit
        vs.append(v)
        i += 1
    want["s"], want["ss"] = np.array(v), np.array(vs, np.float32)
    # Scan in reverse, outputs along axis 1.
    acc, parts = np.zeros(2, np.float32), []
    for row in xs[::-1]:
        acc = acc + row
        parts.append(acc)
    want["sum"], want["sums"] = acc, np.stack(parts, axis=1)
    # If in a Loop body: add w twice, then multiply by it twice.
    u = x.copy()
    for k in range(4):
        u = u + w if k < 2 else u * w
    want["nested"] = u
    # A carried value that doubles its length each iteration.
    want["grown"] = np.full(8, 2.5, np.float32)
    words = []
    for name, ref in want.items():
        got = np.load(os.path.join(d, run, name + ".npy"))
        ok = got.shape == ref.shape and np.allclose(got, ref, rtol=1e-6)
        word = name + (" ok" if ok else f" MISMATCH {got} want {ref}")
        if name == "ss":
            word += f" ({got.shape[0]})"
        words.append(word)
    print(run + ": " + ", ".join(words))
