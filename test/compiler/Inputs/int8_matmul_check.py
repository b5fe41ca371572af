#!/usr/bin/python3
"""A model and numpy references for int8-matmul.test.

int8_matmul_check.py model DIR   writes DIR/int8.onnx and its inputs
int8_matmul_check.py check DIR   compares DIR/<output>.npy with numpy

The outputs cover the integer matmul (graph.matmul_integer, the runtime's
oneDNN integer GEMM) and what must stay exact around it:
  uu, ss, us, su  MatMulInteger of every signedness pair, [2, 5, 64] x
                  [64, 24] (batch rows folded into one GEMM), with and
                  without zero points (su: 128, the top of u8's range)
  rowzero         a per-row lhs zero point (not scalar: the i32 loops)
  splatzero       a per-column rhs zero point that is a constant splat
                  (scalar after all)
  batched         [2, 5, 64] x [2, 64, 24], both graph inputs
  vector          [64] x [64, 24]
  qlinear         QLinearMatMul, requantized to u8
  qdq             QuantizeLinear -> DequantizeLinear -> MatMul with a
                  dequantized s8 weight, per-column scale, zero zero
                  points (ONNX Runtime's static QDQ form), plus a bias
  qdq_gemm        the same through Gemm with transB (rhs stored [24, 64],
                  its scale along axis 0)
"""
import os
import sys

import numpy as np


def data():
    rng = np.random.default_rng(17)
    d = {
        "au": rng.integers(0, 256, (2, 5, 64)).astype(np.uint8),
        "as": rng.integers(-128, 128, (2, 5, 64)).astype(np.int8),
        "bb": rng.integers(-128, 128, (2, 64, 24)).astype(np.int8),
        "v": rng.integers(0, 256, (64,)).astype(np.uint8),
        "x": rng.standard_normal((2, 5, 64)).astype(np.float32),
    }
    w = {
        "wu": rng.integers(0, 256, (64, 24)).astype(np.uint8),
        "ws": rng.integers(-128, 128, (64, 24)).astype(np.int8),
        "wq": rng.integers(-127, 128, (64, 24)).astype(np.int8),
        "sw": (rng.random(24) * 0.02 + 0.005).astype(np.float32),
        "bias": rng.standard_normal(24).astype(np.float32),
        "rowz": rng.integers(0, 256, (5,)).astype(np.uint8),
    }
    return d, w


SX, ZX, SY, ZY = np.float32(0.03), np.uint8(130), np.float32(0.5), np.uint8(9)


def model(d):
    from onnx import TensorProto, helper, numpy_helper

    inputs, w = data()
    for k, v in inputs.items():
        np.save(os.path.join(d, k + ".npy"), v)
    scalars = {
        "z3": np.uint8(3), "z7": np.uint8(7), "zm2": np.int8(-2),
        "z5": np.int8(5), "z128": np.uint8(128), "sa": np.float32(0.02),
        "sb": np.float32(0.01), "sx": SX, "zx": ZX, "sy": SY, "zy": ZY,
        "zs8": np.int8(0),
    }
    inits = [numpy_helper.from_array(np.array(v), k)
             for k, v in scalars.items()]
    inits += [numpy_helper.from_array(v, k) for k, v in w.items()]
    inits.append(numpy_helper.from_array(np.full(24, 4, np.int8), "zcol"))
    inits.append(numpy_helper.from_array(np.zeros(24, np.int8), "zw"))
    inits.append(numpy_helper.from_array(np.ascontiguousarray(w["wq"].T),
                                         "wqt"))
    node = helper.make_node
    nodes = [
        node("MatMulInteger", ["au", "wu", "z3", "z7"], ["uu"]),
        node("MatMulInteger", ["as", "ws", "zm2", "z5"], ["ss"]),
        node("MatMulInteger", ["au", "ws"], ["us"]),
        node("MatMulInteger", ["as", "wu", "", "z128"], ["su"]),
        node("MatMulInteger", ["au", "wu", "rowz", "z7"], ["rowzero"]),
        node("MatMulInteger", ["as", "ws", "zm2", "zcol"], ["splatzero"]),
        node("MatMulInteger", ["au", "bb", "z3"], ["batched"]),
        node("MatMulInteger", ["v", "ws", "z3", "z5"], ["vector"]),
        node("QLinearMatMul", ["au", "sa", "z3", "ws", "sb", "z5", "sy", "zy"],
             ["qlinear"]),
        node("QuantizeLinear", ["x", "sx", "zx"], ["xq"]),
        node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"]),
        node("DequantizeLinear", ["wq", "sw", "zw"], ["wd"], axis=1),
        node("MatMul", ["xd", "wd"], ["mm"]),
        node("Add", ["mm", "bias"], ["qdq"]),
        node("DequantizeLinear", ["wqt", "sw", "zw"], ["wdt"], axis=0),
        node("Reshape", ["xd", "rows"], ["xd2"]),
        node("Gemm", ["xd2", "wdt", "bias"], ["qdq_gemm"], transB=1),
    ]
    inits.append(numpy_helper.from_array(np.array([10, 64], np.int64),
                                         "rows"))
    types = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8,
             np.float32: TensorProto.FLOAT}
    ins = [helper.make_tensor_value_info(k, types[v.dtype.type], v.shape)
           for k, v in inputs.items()]
    mat = [2, 5, 24]
    outs = [helper.make_tensor_value_info(n, TensorProto.INT32,
                                          [24] if n == "vector" else mat)
            for n in ["uu", "ss", "us", "su", "rowzero", "splatzero",
                      "batched", "vector"]]
    outs.append(helper.make_tensor_value_info("qlinear", TensorProto.UINT8,
                                              mat))
    outs += [helper.make_tensor_value_info("qdq", TensorProto.FLOAT, mat),
             helper.make_tensor_value_info("qdq_gemm", TensorProto.FLOAT,
                                           [10, 24])]
    graph = helper.make_graph(nodes, "int8", ins, outs, inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with open(os.path.join(d, "int8.onnx"), "wb") as f:
        f.write(m.SerializeToString())


def quantize(x, s, z, lo, hi):
    return np.clip(np.rint(x / s) + z, lo, hi)


def check(d):
    i, w = data()
    i64 = lambda a: a.astype(np.int64)
    au, as_, wu, ws = i64(i["au"]), i64(i["as"]), i64(w["wu"]), i64(w["ws"])
    qlin = quantize((au - 3) @ (ws - 5) * np.float32(0.02 * 0.01)
                    .astype(np.float64), SY, ZY, 0, 255)
    xq = quantize(i["x"], SX, ZX, 0, 255).astype(np.float64)
    wd = i64(w["wq"]) * w["sw"].astype(np.float64)
    qdq = ((xq - ZX) * SX) @ wd + w["bias"]
    want = {
        "uu": (au - 3) @ (wu - 7),
        "ss": (as_ + 2) @ (ws - 5),
        "us": au @ ws,
        "su": as_ @ (wu - 128),
        "rowzero": (au - i64(w["rowz"])[:, None]) @ (wu - 7),
        "splatzero": (as_ + 2) @ (ws - 4),
        "batched": (au - 3) @ i64(i["bb"]),
        "vector": (i64(i["v"]) - 3) @ (ws - 5),
        "qlinear": qlin,
        "qdq": qdq,
        "qdq_gemm": qdq.reshape(10, 24),
    }
    bad = 0
    for name, ref in want.items():
        got = np.load(os.path.join(d, name + ".npy"))
        if got.shape != ref.shape:
            print(f"{name}: shape {got.shape}, want {ref.shape}")
            bad += 1
            continue
        if name.startswith("qdq"):
            err = np.max(np.abs(got - ref) / (1 + np.abs(ref)))
            ok = err < 1e-5
        elif name == "qlinear":
            # One rounding step apart at most (f32 rescaling).
            err = np.max(np.abs(got.astype(np.int64) - ref))
            ok = err <= 1
        else:
            err = np.max(np.abs(got.astype(np.int64) - ref))
            ok = err == 0 and got.dtype == np.int32
        print(f"{name}: {'ok' if ok else f'error {err}'}")
        bad += not ok
    return bad


if __name__ == "__main__":
    if sys.argv[1] == "model":
        model(sys.argv[2])
    else:
        sys.exit(1 if check(sys.argv[2]) else 0)
