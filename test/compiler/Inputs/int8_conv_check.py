#!/usr/bin/python3
"""A model and numpy references for int8-conv.test.

int8_conv_check.py model DIR   writes DIR/conv8.onnx and its inputs
int8_conv_check.py check DIR   compares DIR/<output>.npy with numpy

The outputs cover the integer convolution (graph.conv_integer, the
runtime's loom_cpu_conv2d_i8: oneDNN's int8 convolution where the filter is
s8 with zero point 0, exact loops elsewhere) and what must stay exact
around it; x is [2, 8, 11, 11], u8 (xu) or s8 (xs):
  basic      ConvInteger u8 x s8, 3x3, pads 1, x zero point 255 (the top
             of u8's range)
  strided    s8 x s8, x zero point -128 (the bottom of s8's), strides 2,
             asymmetric pads [0, 1, 2, 1], dilations 2
  grouped    u8 x s8, group 2, pads 1, x zero point 0
  depthwise  s8 x s8, group 8 (one channel per group), x zero point 127
  wzero      u8 x s8 with filter zero point -128 (oneDNN has none: loops)
  uw         s8 x u8 (an unsigned filter, zero point 255: loops)
  wgraph     u8 x s8, the filter a graph input (reordered every call)
  conv1d     a 1-D ConvInteger over [2, 8, 11]
  varying    a per-channel filter zero point that varies (the f32 / f64
             convolution of the shifted operands)
  qlinear    QLinearConv u8 x s8, per-channel filter scale, an i32 bias,
             requantized to u8
  qdq        QuantizeLinear -> DequantizeLinear -> Conv (+ f32 bias) with
             an s8 filter dequantized per output channel, zero zero points
             (ONNX Runtime's static QDQ form; --loom-integer-conv)
  qdq_relu   the same, then Relu, QuantizeLinear and DequantizeLinear
             (a quantized next layer's input)
"""
import os
import sys

import numpy as np

N, C, H = 2, 8, 11


def data():
    rng = np.random.default_rng(23)
    d = {
        "xu": rng.integers(0, 256, (N, C, H, H)).astype(np.uint8),
        "xs": rng.integers(-128, 128, (N, C, H, H)).astype(np.int8),
        "x1": rng.integers(0, 256, (N, C, H)).astype(np.uint8),
        "wg": rng.integers(-128, 128, (6, C, 3, 3)).astype(np.int8),
        "xf": rng.standard_normal((N, C, H, H)).astype(np.float32),
    }
    s8 = lambda *shape: rng.integers(-128, 128, shape).astype(np.int8)
    w = {
        "w3": s8(16, C, 3, 3),
        "w5": s8(12, C, 2, 3),
        "wgr": s8(10, C // 2, 3, 3),
        "wdw": s8(C, 1, 3, 3),
        "wu": rng.integers(0, 256, (6, C, 3, 3)).astype(np.uint8),
        "w1": s8(7, C, 3),
        "wq": rng.integers(-127, 128, (16, C, 3, 3)).astype(np.int8),
        "sw": (rng.random(16) * 0.01 + 0.002).astype(np.float32),
        "bias": rng.standard_normal(16).astype(np.float32),
        "bias32": rng.integers(-5000, 5000, 16).astype(np.int32),
        "zvar": rng.integers(-3, 4, 16).astype(np.int8),
    }
    return d, w


SX, ZX, SY, ZY = np.float32(0.02), np.uint8(120), np.float32(0.4), np.uint8(7)
SR, ZR = np.float32(0.05), np.uint8(0)


def model(d):
    from onnx import TensorProto, helper, numpy_helper

    inputs, w = data()
    for k, v in inputs.items():
        np.save(os.path.join(d, k + ".npy"), v)
    scalars = {
        "z255": np.uint8(255), "zm128": np.int8(-128), "zu0": np.uint8(0),
        "z127": np.int8(127), "z0": np.int8(0), "z3": np.uint8(3),
        "zw255": np.uint8(255), "zm2": np.int8(-2),
        "sxq": np.float32(0.03), "sx": SX, "zx": ZX, "sy": SY, "zy": ZY,
        "sr": SR, "zr": ZR,
    }
    inits = [numpy_helper.from_array(np.array(v), k)
             for k, v in scalars.items()]
    inits += [numpy_helper.from_array(v, k) for k, v in w.items()]
    inits.append(numpy_helper.from_array(np.zeros(16, np.int8), "zw16"))
    node = helper.make_node
    nodes = [
        node("ConvInteger", ["xu", "w3", "z255", "z0"], ["basic"],
             pads=[1, 1, 1, 1]),
        node("ConvInteger", ["xs", "w5", "zm128"], ["strided"],
             strides=[2, 2], pads=[0, 1, 2, 1], dilations=[2, 2]),
        node("ConvInteger", ["xu", "wgr", "zu0", "z0"], ["grouped"], group=2,
             pads=[1, 1, 1, 1]),
        node("ConvInteger", ["xs", "wdw", "z127"], ["depthwise"], group=C,
             pads=[1, 1, 1, 1]),
        node("ConvInteger", ["xu", "w3", "z3", "zm128"], ["wzero"],
             pads=[1, 1, 1, 1]),
        node("ConvInteger", ["xs", "wu", "z127", "zw255"], ["uw"]),
        node("ConvInteger", ["xu", "wg", "z255"], ["wgraph"],
             pads=[1, 0, 1, 0]),
        node("ConvInteger", ["x1", "w1", "z3"], ["conv1d"], pads=[2, 1],
             strides=[2]),
        node("ConvInteger", ["xs", "wq", "zm2", "zvar"], ["varying"],
             pads=[1, 1, 1, 1]),
        node("QLinearConv", ["xu", "sxq", "z3", "wq", "sw", "zw16", "sy", "zy",
                             "bias32"], ["qlinear"], pads=[1, 1, 1, 1]),
        node("QuantizeLinear", ["xf", "sx", "zx"], ["xq"]),
        node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"]),
        node("DequantizeLinear", ["wq", "sw", "zw16"], ["wd"], axis=0),
        node("Conv", ["xd", "wd", "bias"], ["qdq"], pads=[1, 1, 1, 1]),
        node("Relu", ["qdq"], ["relu"]),
        node("QuantizeLinear", ["relu", "sr", "zr"], ["rq"]),
        node("DequantizeLinear", ["rq", "sr", "zr"], ["qdq_relu"]),
    ]
    types = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8,
             np.float32: TensorProto.FLOAT}
    ins = [helper.make_tensor_value_info(k, types[v.dtype.type], v.shape)
           for k, v in inputs.items()]
    want = expected()
    outs = []
    for name, ref in want.items():
        t = (TensorProto.UINT8 if name == "qlinear" else
             TensorProto.FLOAT if name.startswith("qdq") else
             TensorProto.INT32)
        outs.append(helper.make_tensor_value_info(name, t, ref.shape))
    graph = helper.make_graph(nodes, "conv8", ins, outs, inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with open(os.path.join(d, "conv8.onnx"), "wb") as f:
        f.write(m.SerializeToString())


def conv(x, w, pads=(0, 0, 0, 0), strides=(1, 1), dilations=(1, 1),
         group=1):
    """The exact convolution of int64 arrays (NCHW), padded with zeros."""
    x = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh = (h - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd - dilations[1] * (kw - 1) - 1) // strides[1] + 1
    y = np.zeros((n, o, oh, ow), np.int64)
    og = o // group
    for g in range(group):
        xs = x[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                a = xs[:, :, i * dilations[0]:, j * dilations[1]:]
                a = a[:, :, :oh * strides[0]:strides[0],
                      :ow * strides[1]:strides[1]]
                y[:, g * og:(g + 1) * og] += np.einsum(
                    "nchw,oc->nohw", a, w[g * og:(g + 1) * og, :, i, j])
    return y


def quantize(x, s, z, lo, hi):
    return np.clip(np.rint(x / s) + z, lo, hi)


def expected():
    i, w = data()
    i64 = lambda a: a.astype(np.int64)
    xu, xs = i64(i["xu"]), i64(i["xs"])
    p1 = (1, 1, 1, 1)
    ch = lambda v: v[None, :, None, None]
    qlin_acc = conv(xu - 3, i64(w["wq"]), p1) + ch(i64(w["bias32"]))
    qlin = quantize(qlin_acc * (np.float32(0.03) * w["sw"]).astype(np.float64)
                    [None, :, None, None], SY, ZY, 0, 255)
    xq = quantize(i["xf"], SX, ZX, 0, 255)
    qdq = (SX * w["sw"].astype(np.float64)[None, :, None, None] *
           conv(i64(xq) - ZX, i64(w["wq"]), p1) + ch(w["bias"]))
    relu = quantize(np.maximum(qdq, 0), SR, ZR, 0, 255) * SR
    x1 = i64(i["x1"])[:, :, None, :]
    w1 = i64(w["w1"])[:, :, None, :]
    return {
        "basic": conv(xu - 255, i64(w["w3"]), p1),
        "strided": conv(xs + 128, i64(w["w5"]), (0, 1, 2, 1), (2, 2), (2, 2)),
        "grouped": conv(xu, i64(w["wgr"]), p1, group=2),
        "depthwise": conv(xs - 127, i64(w["wdw"]), p1, group=C),
        "wzero": conv(xu - 3, i64(w["w3"]) + 128, p1),
        "uw": conv(xs - 127, i64(w["wu"]) - 255),
        "wgraph": conv(xu - 255, i64(i["wg"]), (1, 0, 1, 0)),
        "conv1d": conv(x1 - 3, w1, (0, 2, 0, 1), (1, 2))[:, :, 0, :],
        "varying": conv(xs + 2,
                        i64(w["wq"]) - i64(w["zvar"])[:, None, None, None],
                        p1),
        "qlinear": qlin,
        "qdq": qdq,
        "qdq_relu": relu,
    }


def check(d):
    bad = 0
    for name, ref in expected().items():
        got = np.load(os.path.join(d, name + ".npy"))
        if got.shape != ref.shape:
            print(f"{name}: shape {got.shape}, want {ref.shape}")
            bad += 1
            continue
        if name == "qdq":
            err = np.max(np.abs(got - ref) / (1 + np.abs(ref)))
            ok = err < 1e-5
        elif name == "qdq_relu":
            # One quantization step where the f32 sum rounds differently at
            # a tie; never more.
            err = np.max(np.abs(got - ref)) / SR
            ok = err <= 1.0 and np.mean(got != ref.astype(np.float32)) < 1e-3
        else:
            err = np.max(np.abs(got.astype(np.int64) - ref))
            ok = err == 0
        print(f"{name}: {'ok' if ok else 'BAD'}"
              + ("" if ok else f" (max error {err})"))
        bad += not ok
    return bad


if __name__ == "__main__":
    if sys.argv[1] == "model":
        model(sys.argv[2])
    else:
        sys.exit(1 if check(sys.argv[2]) else 0)
