#!/usr/bin/python3
"""Inputs and checks for quantize-conv.test (loomc quantize --mode static
of a CNN).

quantize_conv_check.py model DIR            DIR/m.onnx (test/models'
                                            ResNet-style model: 9 Conv, a
                                            Gemm), calib.npz (64 samples)
                                            and x.npy (2 other samples)
quantize_conv_check.py structure DIR        the QDQ form of DIR/q.onnx:
                                            every Conv reads a dequantized
                                            u8 activation and a per-channel
                                            (axis 0) s8 filter, zero point
                                            0, bias f32; and DIR/r.json's
                                            Conv entries
quantize_conv_check.py compare DIR TOOLS    Loom's int8 output against its
                                            f32 one (SQNR) and ONNX
                                            Runtime's on the same QDQ model
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np


def model(d, src):
    shutil.copy(src, os.path.join(d, "m.onnx"))
    rng = np.random.default_rng(5)
    np.savez(os.path.join(d, "calib.npz"),
             x=rng.standard_normal((64, 3, 16, 16)).astype(np.float32))
    np.save(os.path.join(d, "x.npy"),
            rng.standard_normal((2, 3, 16, 16)).astype(np.float32))


def structure(d):
    import onnx
    from onnx import numpy_helper

    m = onnx.load(os.path.join(d, "q.onnx"))
    onnx.checker.check_model(m, full_check=True)
    g = m.graph
    inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    producer = {o: n for n in g.node for o in n.output}
    convs = [n for n in g.node if n.op_type == "Conv"]
    bad = []
    for c in convs:
        x, w = producer.get(c.input[0]), producer.get(c.input[1])
        if not x or x.op_type != "DequantizeLinear" or \
                inits[x.input[2]].dtype != np.uint8:
            bad.append(c.name + ": activation not u8 DequantizeLinear")
            continue
        axis = [a.i for a in w.attribute if a.name == "axis"] if w else []
        if not w or w.op_type != "DequantizeLinear" or axis != [0] or \
                inits[w.input[0]].dtype != np.int8 or \
                np.any(inits[w.input[2]] != 0) or \
                inits[w.input[1]].shape != (inits[w.input[0]].shape[0],):
            bad.append(c.name + ": filter not per-channel s8 DequantizeLinear")
        # The bias: an f32 initializer, or made by an Identity of one.
        b = c.input[2] if len(c.input) > 2 else ""
        while b in producer and producer[b].op_type == "Identity":
            b = producer[b].input[0]
        if b and (b not in inits or inits[b].dtype != np.float32):
            bad.append(c.name + ": bias not f32")
    print(f"convs: {len(convs)}, QDQ: {'ok' if not bad else bad}")
    r = json.load(open(os.path.join(d, "r.json")))
    entries = [q for q in r["quantized"] if q["op"] == "Conv"]
    sq = [q["output_sqnr_db"] for q in entries]
    ok = all(q["per_channel"] and q["weight_sqnr_db"] > 30 and
             q["activation"] and s is not None and s > 20
             for q, s in zip(entries, sq))
    print(f"report: {len(entries)} Conv entries, "
          f"{'ok' if ok else 'BAD'} (output SQNR {min(sq):.1f} .. "
          f"{max(sq):.1f} dB)")


def sqnr(ref, got):
    ref = ref.astype(np.float64)
    got = got.astype(np.float64)
    return 10 * np.log10(np.sum(ref ** 2) / max(np.sum((ref - got) ** 2),
                                                1e-300))


def compare(d, tools):
    import onnx

    name = onnx.load(os.path.join(d, "m.onnx")).graph.output[0].name
    ref = np.load(os.path.join(d, "f", name + ".npy"))
    got = np.load(os.path.join(d, "q", name + ".npy"))
    s = sqnr(ref, got)
    print(f"int8 vs f32: {'ok' if s >= 20 else 'low'} (SQNR {s:.1f} dB)")
    ort = os.path.join(d, "ort")
    os.makedirs(ort, exist_ok=True)
    r = subprocess.run(["node", os.path.join(tools, "ort_run.js"),
                        os.path.join(d, "q.onnx"), "--in",
                        os.path.join(d, "x.npy"), "--save-dir", ort],
                       capture_output=True, text=True)
    if r.returncode == 77:
        print("onnx runtime: skipped (onnxruntime-node is not installed)")
        return
    if r.returncode != 0:
        print("onnx runtime: failed\n" + r.stdout + r.stderr)
        return
    theirs = np.load(os.path.join(ort, "output_0.npy"))
    s = sqnr(theirs, got)
    print(f"onnx runtime: {'ok' if s >= 30 else 'differs'} "
          f"(Loom vs ORT SQNR {s:.1f} dB)")


if __name__ == "__main__":
    {"model": lambda: model(sys.argv[2], sys.argv[3]),
     "structure": lambda: structure(sys.argv[2]),
     "compare": lambda: compare(sys.argv[2], sys.argv[3])}[sys.argv[1]]()
