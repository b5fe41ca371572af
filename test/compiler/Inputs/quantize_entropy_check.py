#!/usr/bin/python3
"""A model, calibration data and checks for quantize-entropy.test.

quantize_entropy_check.py model DIR   writes DIR/m.onnx (x: [N, 64] ->
                                      MatMul -> Add -> Relu -> MatMul -> y,
                                      N dynamic), DIR/calib.npz (x: [200,
                                      64], a Gaussian with a few large
                                      outliers) and DIR/x.npy ([16, 64])
quantize_entropy_check.py ranges DIR R
                                      checks the entropy ranges of the
                                      report DIR/R against the reference
                                      below (and against ONNX Runtime's
                                      calibrator when onnxruntime's Python
                                      package is installed), and that the
                                      range of x is far inside its extremes
                                      and quantizes the Gaussian bulk with a
                                      better SQNR than the extremes do
quantize_entropy_check.py compare DIR prints the SQNR verdict of Loom's int8
                                      outputs DIR/q/y.npy and DIR/qm/y.npy
                                      (entropy, minmax) against the f32 one

The reference is written from the description of ONNX Runtime's
HistogramCalibrater with CalibrationMethod.Entropy (num_bins 2048,
num_quantized_bins 128): one histogram of x over [-t, t], t = max |x| over
all the data; for each window of bins [zero - i, zero + i] (the bin zero
starting at 0, i = 64 ... 1024), P is the window with the counts outside it
added to its first and last bins, Q the window merged into 128 levels of
`window // 128` bins (the rest of the window into the last level) and each
level spread, in whole counts, over the bins of its `window // 128` where P
is nonzero; both smoothed (zeros become 1e-4, taken evenly off the others),
KL(P || Q) of the normalized two; the least KL's window edges, clamped to
the extremes, are the range.
"""
import json
import os
import sys

import numpy as np


def weights():
    rng = np.random.default_rng(11)
    return {
        "w1": (rng.standard_normal((64, 96)) / 8).astype(np.float32),
        "b1": (rng.standard_normal(96) * 0.1).astype(np.float32),
        "w2": (rng.standard_normal((96, 10)) / 10).astype(np.float32),
    }


def calibration():
    rng = np.random.default_rng(12)
    x = rng.standard_normal((200, 64)).astype(np.float32)
    # A few large outliers: the extremes are 10-40 standard deviations out.
    x[3, 5], x[77, 0], x[150, 63], x[199, 10] = 40.0, -25.0, 18.0, -12.0
    return x


def forward(x):
    w = weights()
    r = np.maximum(x.astype(np.float64) @ w["w1"] + w["b1"], 0)
    return {"x": x.astype(np.float64), "r": r}


def write_model(path):
    from onnx import TensorProto, helper, numpy_helper

    node = helper.make_node
    nodes = [
        node("MatMul", ["x", "w1"], ["h"], name="fc1"),
        node("Add", ["h", "b1"], ["hb"]),
        node("Relu", ["hb"], ["r"]),
        node("MatMul", ["r", "w2"], ["y"], name="fc2"),
    ]
    graph = helper.make_graph(
        nodes, "entropy",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])],
        [numpy_helper.from_array(v, k) for k, v in weights().items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def smoothed(p, eps=1e-4):
    zero = p == 0
    if zero.all():
        return None
    return np.where(zero, eps, p - eps * zero.sum() / (~zero).sum())


def kl(p, q):
    p, q = p / p.sum(), q / q.sum()
    return float(np.sum(p * np.log(p / q)))


def entropy_range(values, bins=2048, levels=128):
    """The reference: (lo, hi, the histogram's bin width)."""
    v = values.ravel()
    lo, hi = float(v.min()), float(v.max())
    t = max(abs(lo), abs(hi))
    hist, edges = np.histogram(v, bins, range=(-t, t))
    hist = hist.astype(np.float64)
    zero = bins // 2
    best, window = np.inf, None
    for i in range(levels // 2, zero + 1):
        start, end = zero - i, min(zero + i + 1, bins)
        inside = hist[start:end]
        p = inside.copy()
        p[0] += hist[:start].sum()
        p[-1] += hist[end:].sum()
        per = inside.size // levels
        merged = inside[:levels * per].reshape(levels, per).sum(axis=1)
        merged[-1] += inside[levels * per:].sum()
        q = np.zeros(inside.size)
        for level in range(levels):
            part = slice(level * per, (level + 1) * per)
            nonzero = np.count_nonzero(p[part])
            if nonzero:
                q[part] = np.floor(merged[level] / nonzero)
        ps, qs = smoothed(p), smoothed(q)
        d = np.inf if ps is None or qs is None else kl(ps, qs)
        if d < best:
            best, window = d, (edges[start], edges[end])
    return max(window[0], lo), min(window[1], hi), 2 * t / bins


def fake_quantize(v, lo, hi):
    """ORT's u8 QDQ of v with the range [lo, hi] widened to hold 0."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = (hi - lo) / 255
    zp = np.clip(np.rint(-lo / scale), 0, 255)
    return (np.clip(np.rint(v / scale) + zp, 0, 255) - zp) * scale


def sqnr(ref, got):
    return 10 * np.log10(np.sum(ref ** 2) / np.sum((ref - got) ** 2))


def ort_ranges(directory, calib):
    """ONNX Runtime's entropy ranges of m.onnx, or None without it."""
    try:
        from onnxruntime.quantization.calibrate import (CalibrationMethod,
                                                        create_calibrator)
    except ImportError:
        return None

    class Reader:
        def __init__(self):
            self.batches = iter([{"x": calib[i:i + 32]}
                                 for i in range(0, len(calib), 32)])

        def get_next(self):
            return next(self.batches, None)

    c = create_calibrator(os.path.join(directory, "m.onnx"), ["MatMul"],
                          os.path.join(directory, "augmented.onnx"),
                          CalibrationMethod.Entropy,
                          extra_options={"num_bins": 2048})
    c.collect_data(Reader())
    out = {}
    for name, data in c.compute_data().data.items():
        lo, hi = (data.range_value if hasattr(data, "range_value") else data)
        out[name] = (float(lo), float(hi))
    return out


def check_ranges(directory, report_name):
    with open(os.path.join(directory, report_name)) as f:
        report = json.load(f)
    print("method:", report["method"])
    calib = calibration()
    values = forward(calib)
    ort = ort_ranges(directory, calib)
    for n in report["quantized"]:
        act = n["activation"]
        got = (n["activation_min"], n["activation_max"])
        lo, hi, width = entropy_range(values[act])
        # One bin of slack: Loom's f32 activations (r) differ from numpy's
        # f64 ones in the last bits, which can move a value across an edge.
        close = all(abs(g - r) <= width + 1e-5 * abs(r)
                    for g, r in zip(got, (lo, hi)))
        line = f"{n['node']} {act}: reference={close}"
        if ort is not None and act in ort:
            line += " ort=" + str(all(abs(g - r) <= width + 1e-5 * abs(r)
                                      for g, r in zip(got, ort[act])))
        print(line)
        if not close:
            print(f"  loom {got}, reference {(lo, hi)}, bin {width}")
        if act == "x":
            v = values["x"]
            span = got[1] - got[0]
            print("x: inside extremes by 5x:",
                  span * 5 < float(v.max() - v.min()))
            bulk = v[np.abs(v) < 4]
            e = sqnr(bulk, fake_quantize(bulk, *got))
            m = sqnr(bulk, fake_quantize(bulk, float(v.min()),
                                         float(v.max())))
            print(f"x: bulk SQNR entropy > minmax + 10 dB: {e > m + 10}")
            print(f"  (entropy {e:.1f} dB, minmax {m:.1f} dB)",
                  file=sys.stderr)


def compare(directory):
    ref = np.load(os.path.join(directory, "f", "y.npy")).astype(np.float64)
    for form in ["q", "qm"]:
        got = np.load(os.path.join(directory, form, "y.npy"))
        s = sqnr(ref, got.astype(np.float64))
        print(f"{form}: SQNR > 20 dB: {s > 20}")
        print(f"  ({form} {s:.1f} dB)", file=sys.stderr)


def main():
    what, directory = sys.argv[1], sys.argv[2]
    if what == "model":
        write_model(os.path.join(directory, "m.onnx"))
        np.savez(os.path.join(directory, "calib.npz"), x=calibration())
        rng = np.random.default_rng(13)
        np.save(os.path.join(directory, "x.npy"),
                rng.standard_normal((16, 64)).astype(np.float32))
    elif what == "ranges":
        check_ranges(directory, sys.argv[3])
    elif what == "compare":
        compare(directory)
    else:
        sys.exit(f"unknown command {what}")


if __name__ == "__main__":
    main()
