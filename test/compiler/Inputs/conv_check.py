#!/usr/bin/python3
"""A model and numpy references for conv-onednn.test.

conv_check.py model DIR   writes DIR/conv.onnx and its inputs x.npy, w.npy
conv_check.py check DIR   compares DIR/<output>.npy with numpy

The model's convolutions cover what the CPU code generator folds into the
runtime's convolution kernel and what it must leave alone:
  pad_bias_relu   zero padding, bias, ReLU (all three fused), a weight
  twice           the same weight on another input (the kept reordered
                  filter, hit within one run)
  strided         stride 2, dilation 2, asymmetric padding, no bias
  residual        conv + bias, then an add of the input and a ReLU (the
                  add stays a loop)
  shared          conv + bias used by a ReLU and by an output (no ReLU
                  fusion: the pre-activation is read too)
  input_filter    the filter is a graph input (not kept: it may change)
  grouped         groups = 2 (not the kernel's form)
  chain           conv, ReLU, conv: the tensor between them only the two
                  convolutions see (handed over in NHWC)
  wide, wide_residual, wide_chain
                  the same with 64 channels in and out, 3x3, stride 1:
                  Winograd's algorithm where oneDNN has it (AVX-512), with
                  bias and ReLU, a residual add (the sum post-op), and
                  tensors reordered between NHWC and its layout
"""
import os
import sys

import numpy as np


def conv(x, w, b=None, stride=(1, 1), dil=(1, 1), pads=(0, 0, 0, 0),
         groups=1):
    """ONNX Conv in float64: pads = (top, left, bottom, right)."""
    x = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    n, c, h, wd = x.shape
    f, cg, kh, kw = w.shape
    oh = (h - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, f, oh, ow))
    fg = f // groups
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        ws = w[g * fg:(g + 1) * fg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dil[0]:i * dil[0] + stride[0] * oh:stride[0],
                           j * dil[1]:j * dil[1] + stride[1] * ow:stride[1]]
                out[:, g * fg:(g + 1) * fg] += np.einsum(
                    "nchw,fc->nfhw", patch, ws[:, :, i, j])
    if b is not None:
        out += b[None, :, None, None]
    return out


def weights():
    rng = np.random.default_rng(11)
    return {
        "w1": rng.standard_normal((16, 8, 3, 3)).astype(np.float32),
        "b1": rng.standard_normal(16).astype(np.float32),
        "w2": rng.standard_normal((12, 8, 3, 2)).astype(np.float32),
        "w3": rng.standard_normal((8, 8, 3, 3)).astype(np.float32),
        "b3": rng.standard_normal(8).astype(np.float32),
        "wg": rng.standard_normal((6, 4, 3, 3)).astype(np.float32),
        "ww": (rng.standard_normal((64, 64, 3, 3)) / 24).astype(np.float32),
        "bw": rng.standard_normal(64).astype(np.float32),
        "ww2": (rng.standard_normal((64, 64, 3, 3)) / 24).astype(np.float32),
    }


def model(d):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 8, 11, 13)).astype(np.float32)
    x2 = rng.standard_normal((2, 8, 11, 13)).astype(np.float32)
    w = rng.standard_normal((5, 8, 3, 3)).astype(np.float32)
    xw = rng.standard_normal((2, 64, 9, 10)).astype(np.float32)
    np.save(os.path.join(d, "xw.npy"), xw)
    np.save(os.path.join(d, "x.npy"), x)
    np.save(os.path.join(d, "x2.npy"), x2)
    np.save(os.path.join(d, "w.npy"), w)
    inits = [numpy_helper.from_array(v, k) for k, v in weights().items()]
    node = helper.make_node
    nodes = [
        node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        node("Relu", ["c1"], ["pad_bias_relu"]),
        node("Conv", ["x2", "w1", "b1"], ["c1b"], pads=[1, 1, 1, 1]),
        node("Relu", ["c1b"], ["twice"]),
        node("Conv", ["x", "w2"], ["strided"], strides=[2, 2],
             dilations=[2, 2], pads=[2, 0, 1, 3]),
        node("Conv", ["x", "w3", "b3"], ["c3"], pads=[1, 1, 1, 1]),
        node("Add", ["c3", "x"], ["s3"]),
        node("Relu", ["s3"], ["residual"]),
        node("Conv", ["x2", "w3", "b3"], ["shared"], pads=[1, 1, 1, 1]),
        node("Relu", ["shared"], ["shared_relu"]),
        node("Conv", ["x", "w"], ["input_filter"], pads=[0, 1, 0, 1]),
        node("Conv", ["x", "wg"], ["grouped"], group=2, pads=[1, 1, 1, 1]),
        node("Conv", ["x2", "w3", "b3"], ["h"], pads=[1, 1, 1, 1]),
        node("Relu", ["h"], ["hr"]),
        node("Conv", ["hr", "w1", "b1"], ["chain"], strides=[2, 1],
             pads=[0, 1, 1, 0]),
        node("Conv", ["xw", "ww", "bw"], ["cw"], pads=[1, 1, 1, 1]),
        node("Relu", ["cw"], ["wide"]),
        node("Conv", ["xw", "ww2", "bw"], ["cw2"], pads=[1, 1, 1, 1]),
        node("Add", ["cw2", "xw"], ["sw"]),
        node("Relu", ["sw"], ["wide_residual"]),
        node("Conv", ["wide", "ww2"], ["wide_chain"], pads=[1, 1, 1, 1]),
    ]
    shape = [2, 8, 11, 13]
    outputs = ["pad_bias_relu", "twice", "strided", "residual", "shared",
               "shared_relu", "input_filter", "grouped", "chain", "wide",
               "wide_residual", "wide_chain"]
    graph = helper.make_graph(
        nodes, "convs",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape),
         helper.make_tensor_value_info("x2", TensorProto.FLOAT, shape),
         helper.make_tensor_value_info("w", TensorProto.FLOAT, [5, 8, 3, 3]),
         helper.make_tensor_value_info("xw", TensorProto.FLOAT,
                                       [2, 64, 9, 10])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
         for o in outputs],
        inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(m, os.path.join(d, "conv.onnx"))


def check(d):
    p = {k: v.astype(np.float64) for k, v in weights().items()}
    x = np.load(os.path.join(d, "x.npy")).astype(np.float64)
    x2 = np.load(os.path.join(d, "x2.npy")).astype(np.float64)
    w = np.load(os.path.join(d, "w.npy")).astype(np.float64)
    xw = np.load(os.path.join(d, "xw.npy")).astype(np.float64)
    relu = lambda v: np.maximum(v, 0)  # noqa: E731
    shared = conv(x2, p["w3"], p["b3"], pads=(1, 1, 1, 1))
    want = {
        "pad_bias_relu": relu(conv(x, p["w1"], p["b1"], pads=(1, 1, 1, 1))),
        "twice": relu(conv(x2, p["w1"], p["b1"], pads=(1, 1, 1, 1))),
        "strided": conv(x, p["w2"], stride=(2, 2), dil=(2, 2),
                        pads=(2, 0, 1, 3)),
        "residual": relu(conv(x, p["w3"], p["b3"], pads=(1, 1, 1, 1)) + x),
        "shared": shared,
        "shared_relu": relu(shared),
        "input_filter": conv(x, w, pads=(0, 1, 0, 1)),
        "grouped": conv(x, p["wg"], pads=(1, 1, 1, 1), groups=2),
        "chain": conv(relu(conv(x2, p["w3"], p["b3"], pads=(1, 1, 1, 1))),
                      p["w1"], p["b1"], stride=(2, 1), pads=(0, 1, 1, 0)),
        "wide": relu(conv(xw, p["ww"], p["bw"], pads=(1, 1, 1, 1))),
        "wide_residual": relu(conv(xw, p["ww2"], p["bw"], pads=(1, 1, 1, 1))
                              + xw),
        "wide_chain": conv(relu(conv(xw, p["ww"], p["bw"], pads=(1, 1, 1, 1))),
                           p["ww2"], pads=(1, 1, 1, 1)),
    }
    bad = 0
    for name, ref in want.items():
        got = np.load(os.path.join(d, name + ".npy")).astype(np.float64)
        if got.shape != ref.shape:
            print(f"{name}: MISMATCH shape {got.shape} want {ref.shape}")
            bad += 1
            continue
        err = np.max(np.abs(got - ref) / (1 + np.abs(ref)))
        ok = err < 1e-4
        bad += not ok
        print(f"{name}: {'ok' if ok else 'MISMATCH'} (max rel err {err:.1e})")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    {"model": model, "check": check}[sys.argv[1]](sys.argv[2])
