"""Inputs and numpy references of sequence.onnxtext.

`make DIR` writes the inputs; `check DIR` compares DIR/a and DIR/b (two runs
with other positions) with the sequences written out as Python lists. A
position known only at run time counts from the end when negative and is
clamped into range (Loom's choice where ONNX makes it an error).
"""
import os
import sys

import numpy as np

mode, d = sys.argv[1], sys.argv[2]
a = np.arange(6, dtype=np.float32).reshape(2, 3)
b, c = a + 10, a + 20
x = np.arange(20, dtype=np.float32).reshape(5, 4)
v = np.arange(6, dtype=np.float32) * 1.5
s = np.array([2, 4], np.int64)
runs = (("a", -1, -2), ("b", 7, -9))
if mode == "make":
    for name, value in (("a", a), ("b", b), ("c", c), ("x", x), ("v", v), ("s", s)):
        np.save(os.path.join(d, name + ".npy"), value)
    for run, p, q in runs:
        np.save(os.path.join(d, "p_" + run + ".npy"), np.array(p, np.int64))
        np.save(os.path.join(d, "q_" + run + ".npy"), np.array(q, np.int64))
    sys.exit(0)


def at(n, pos, last):
    """A run-time position: from the end when negative, then clamped."""
    pos = pos + n if pos < 0 else pos
    return min(max(pos, 0), last)


for run, p, q in runs:
    seq = [a, b, c]
    ins = list(seq)
    ins.insert(at(3, p, 3), a * 2)
    er = list(seq)
    del er[at(3, q, 2)]
    # SequenceEmpty, then insert c, a at 0, 2a at -1, b at the end; erase 0.
    e = [c]
    e.insert(0, a)
    e.insert(len(e) - 1, a * 2)
    e.append(b)
    del e[0]
    rows = [x[0:2], x[2:4], x[4:5]]
    cols = [x[:, k] for k in range(4)]
    scaled = [col * 3 + 2 for col in cols]
    want = {
        "at_rt": seq[at(3, p, 2)],
        "ins_rt": np.stack(ins),
        "erase_rt": np.concatenate(er, axis=-1),
        "at_known": e[-1],
        "edited": np.stack(e),
        "last_part": rows[-1],
        "parts": np.array(len(rows), np.int64),
        "mapped": np.stack(scaled),
        "mapped_sum": np.stack([u + t for u, t in zip(cols, scaled)]),
        "second": v[2:6],
        "heads": np.array([col[0] for col in cols], np.float32),
        "looped": a + a + b + c,
    }
    bad = []
    for name, ref in want.items():
        got = np.load(os.path.join(d, run, name + ".npy"))
        if got.dtype != ref.dtype or got.shape != ref.shape or \
                not np.allclose(got, ref):
            bad.append(f"{name} {got.dtype}{got.shape} {got} want {ref}")
    print(run + ":", "ok" if not bad else "MISMATCH " + "; ".join(bad))
