#!/usr/bin/python3
"""A model, calibration data and checks for quantize-static.test.

quantize_static_check.py model DIR      writes DIR/m.onnx (batch dim N
                                        dynamic), DIR/ms.onnx (the same with
                                        batch 8), the calibration sets
                                        calib.npz (x: [40, 64]),
                                        calib_static.npz (x: [5, 8, 64]),
                                        the bad ones calib_missing.npz (z
                                        only) and calib_shape.npz
                                        (x: [40, 63]), and the inputs
                                        x.npy ([16, 64]) and xs.npy ([8, 64])
quantize_static_check.py structure DIR Q R
                                        prints the op counts of DIR/Q, its
                                        s8 weights and axes, and the report
                                        DIR/R's entries, with the calibrated
                                        ranges checked against numpy
quantize_static_check.py compare DIR TOOLS
                                        compares Loom's int8 output
                                        DIR/q/y.npy with its f32 one
                                        DIR/f/y.npy (SQNR), and with ONNX
                                        Runtime's run of q.onnx when
                                        onnxruntime-node is installed

The model: a MatMul with a bias and ReLU, a Gemm with transB and a bias
(what torch.nn.Linear exports) and ReLU, an excluded MatMul (keep_me) and a
MatMul of two activations (no weight).
"""
import collections
import json
import os
import subprocess
import sys

import numpy as np


def weights():
    rng = np.random.default_rng(5)
    return {
        "w1": rng.standard_normal((64, 128)).astype(np.float32) / 8,
        "b1": rng.standard_normal(128).astype(np.float32),
        "w2": rng.standard_normal((32, 128)).astype(np.float32) / 11,
        "b2": rng.standard_normal(32).astype(np.float32),
        "w3": rng.standard_normal((32, 32)).astype(np.float32),
    }


def forward(x):
    """The f32 model in numpy: each quantized node's input."""
    w = weights()
    r = np.maximum(x @ w["w1"] + w["b1"], 0)
    gr = np.maximum(r @ w["w2"].T + w["b2"], 0)
    return {"x": x, "r": r, "gr": gr}


def write_model(path, batch):
    from onnx import TensorProto, helper, numpy_helper

    node = helper.make_node
    nodes = [
        node("MatMul", ["x", "w1"], ["h"], name="fc1"),
        node("Add", ["h", "b1"], ["hb"]),
        node("Relu", ["hb"], ["r"]),
        node("Gemm", ["r", "w2", "b2"], ["g"], name="fc2", transB=1),
        node("Relu", ["g"], ["gr"]),
        node("MatMul", ["gr", "w3"], ["k"], name="keep_me"),
        node("Transpose", ["gr"], ["gt"]),
        node("MatMul", ["gt", "k"], ["y"], name="gram"),
    ]
    graph = helper.make_graph(
        nodes, "q",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [32, 32])],
        [numpy_helper.from_array(v, k) for k, v in weights().items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def model(d):
    write_model(os.path.join(d, "m.onnx"), "N")
    write_model(os.path.join(d, "ms.onnx"), 8)
    rng = np.random.default_rng(6)
    np.savez(os.path.join(d, "calib.npz"),
             x=rng.standard_normal((40, 64)).astype(np.float32))
    np.savez(os.path.join(d, "calib_static.npz"),
             x=rng.standard_normal((5, 8, 64)).astype(np.float32))
    np.savez(os.path.join(d, "calib_missing.npz"),
             z=np.zeros((4, 64), np.float32))
    np.savez(os.path.join(d, "calib_shape.npz"),
             x=np.zeros((40, 63), np.float32))
    np.save(os.path.join(d, "x.npy"),
            rng.standard_normal((16, 64)).astype(np.float32))
    np.save(os.path.join(d, "xs.npy"),
            rng.standard_normal((8, 64)).astype(np.float32))


def structure(d, q, r, calib):
    import onnx
    from onnx import numpy_helper

    m = onnx.load(os.path.join(d, q))
    onnx.checker.check_model(m, full_check=True)
    ops = collections.Counter(n.op_type for n in m.graph.node)
    for op in sorted(ops):
        print(f"{op}: {ops[op]}")
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    for n in m.graph.node:
        if n.op_type == "DequantizeLinear" and n.input[0] in inits:
            axis = [a.i for a in n.attribute if a.name == "axis"]
            print(f"weight {n.input[0]}: {inits[n.input[0]].dtype} "
                  f"{list(inits[n.input[0]].shape)} axis={axis}")
    print("f32 weights left:", sorted(n for n in ("w1", "w2", "w3")
                                      if n in inits))
    # The calibrated ranges against numpy's run of the f32 model.
    x = np.load(os.path.join(d, calib))["x"].reshape(-1, 64)
    seen = forward(x)
    rep = json.load(open(os.path.join(d, r)))
    print("method:", rep["method"])
    for e in rep["quantized"]:
        a = seen[e["activation"]]
        lo, hi = float(a.min()), float(a.max())
        exact = (abs(e["activation_min"] - lo) <= 1e-4 * max(1, abs(lo)) and
                 abs(e["activation_max"] - hi) <= 1e-4 * max(1, abs(hi)))
        inside = lo <= e["activation_min"] <= e["activation_max"] <= hi
        rlo, rhi = min(lo, 0), max(hi, 0)
        scale_ok = abs(e["activation_scale"] - (rhi - rlo) / 255) <= 1e-6
        zp = e["activation_zero_point"]
        print(f"quantized {e['node']} {e['op']} x={e['activation']} "
              f"range={'minmax' if exact else 'inside' if inside else 'bad'} "
              f"zero_point={zp} scale_ok={scale_ok} "
              f"per_channel={e['per_channel']} "
              f"weight_sqnr>30={e['weight_sqnr_db'] > 30} "
              f"output_sqnr>20={(e['output_sqnr_db'] or 0) > 20}")
    for e in rep["kept"]:
        print(f"kept {e['node']} {e['op']}: {e['why']}")


def sqnr(ref, got):
    ref = ref.astype(np.float64)
    got = got.astype(np.float64)
    return 10 * np.log10(np.sum(ref ** 2) / max(np.sum((ref - got) ** 2),
                                                1e-300))


def compare(d, tools):
    ref = np.load(os.path.join(d, "f", "y.npy"))
    got = np.load(os.path.join(d, "q", "y.npy"))
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
    print(f"onnx runtime: {'ok' if s >= 40 else 'differs'} "
          f"(Loom vs ORT SQNR {s:.1f} dB)")


if __name__ == "__main__":
    {"model": lambda: model(sys.argv[2]),
     "structure": lambda: structure(*sys.argv[2:6]),
     "compare": lambda: compare(sys.argv[2], sys.argv[3])}[sys.argv[1]]()
