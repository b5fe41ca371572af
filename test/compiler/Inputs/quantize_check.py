#!/usr/bin/python3
"""A model and checks for quantize-dynamic.test (loomc quantize).

quantize_check.py model DIR         writes DIR/m.onnx and its input x.npy
quantize_check.py model10 DIR       the same model at opset 10, DIR/m10.onnx
quantize_check.py structure DIR     prints the op counts of DIR/q.onnx and
                                    the report DIR/r.json's entries
quantize_check.py compare DIR TOOLS compares Loom's int8 output DIR/q/y.npy
                                    with its f32 one DIR/f/y.npy (SQNR), and
                                    with ONNX Runtime's run of q.onnx when
                                    onnxruntime-node is installed

The model: a MatMul with a bias and ReLU on [4, 16, 64] tokens, a Reshape,
a Gemm with transB and a bias (what torch.nn.Linear exports), an
excluded MatMul (keep_me) and a MatMul of two activations (no weight).
"""
import collections
import json
import os
import subprocess
import sys

import numpy as np


def model(d, opset=13, name="m.onnx"):
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 16, 64)).astype(np.float32)
    np.save(os.path.join(d, "x.npy"), x)
    inits = {
        "w1": rng.standard_normal((64, 128)).astype(np.float32) / 8,
        "b1": rng.standard_normal(128).astype(np.float32),
        "w2": rng.standard_normal((32, 128)).astype(np.float32) / 11,
        "b2": rng.standard_normal(32).astype(np.float32),
        "w3": rng.standard_normal((32, 32)).astype(np.float32),
        "shape": np.array([64, 128], np.int64),
    }
    node = helper.make_node
    nodes = [
        node("MatMul", ["x", "w1"], ["h"], name="fc1"),
        node("Add", ["h", "b1"], ["hb"]),
        node("Relu", ["hb"], ["r"]),
        node("Reshape", ["r", "shape"], ["r2"]),
        node("Gemm", ["r2", "w2", "b2"], ["g"], name="fc2", transB=1),
        node("MatMul", ["g", "w3"], ["k"], name="keep_me"),
        node("Transpose", ["g"], ["gt"]),
        node("MatMul", ["gt", "k"], ["y"], name="gram"),
    ]
    graph = helper.make_graph(
        nodes, "q", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                   [4, 16, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [32, 32])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(graph,
                          opset_imports=[helper.make_opsetid("", opset)])
    with open(os.path.join(d, name), "wb") as f:
        f.write(m.SerializeToString())


def structure(d):
    import onnx

    m = onnx.load(os.path.join(d, "q.onnx"))
    onnx.checker.check_model(m, full_check=True)
    ops = collections.Counter(n.op_type for n in m.graph.node)
    for op in sorted(ops):
        print(f"{op}: {ops[op]}")
    inits = {t.name: t for t in m.graph.initializer}
    print("f32 weights left:", sorted(n for n in ("w1", "w2", "w3")
                                      if n in inits))
    r = json.load(open(os.path.join(d, "r.json")))
    for e in r["quantized"]:
        print(f"quantized {e['node']} {e['op']} k={e['k']} n={e['n']} "
              f"per_channel={e['per_channel']} "
              f"sqnr>30={e['weight_sqnr_db'] > 30}")
    for e in r["kept"]:
        print(f"kept {e['node']} {e['op']}: {e['why']}")


def compare(d, tools):
    ref = np.load(os.path.join(d, "f", "y.npy")).astype(np.float64)
    got = np.load(os.path.join(d, "q", "y.npy")).astype(np.float64)
    sqnr = 10 * np.log10(np.sum(ref ** 2) / np.sum((ref - got) ** 2))
    print(f"int8 vs f32: {'ok' if sqnr > 25 else 'low'} (SQNR {sqnr:.1f} dB)")
    r = subprocess.run(["node", os.path.join(tools, "ort_run.js"),
                        os.path.join(d, "q.onnx"), "--in",
                        os.path.join(d, "x.npy"), "--expect",
                        os.path.join(d, "q", "y.npy"), "--rtol", "1e-3",
                        "--atol", "1e-3"], capture_output=True, text=True)
    if r.returncode == 77:
        print("onnx runtime: skipped (onnxruntime-node is not installed)")
    elif r.returncode == 0:
        print("onnx runtime: ok")
    else:
        print("onnx runtime: differs\n" + r.stdout + r.stderr)


if __name__ == "__main__":
    {"model": lambda: model(sys.argv[2]),
     "model10": lambda: model(sys.argv[2], 10, "m10.onnx"),
     "structure": lambda: structure(sys.argv[2]),
     "compare": lambda: compare(sys.argv[2], sys.argv[3])}[sys.argv[1]]()
