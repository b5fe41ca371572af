#!/usr/bin/python3
"""f32 models and their static int8 QDQ versions for bench/quant/run.sh.

make_quant_models.py OUT   writes OUT/<name>.onnx, OUT/<name>_int8.onnx,
                           OUT/<name>_dyn8.onnx, OUT/<name>_in.npy and
                           OUT/<name>_calib.npz (the int8 versions'
                           calibration batch) for each model below

  bert-ffn   two BERT-base feed-forward blocks (768 -> 3072 -> ReLU -> 768,
             bias, residual) on 128 tokens
  mlp-b64    the MLP of bench/cpu_inference (1024-4096-4096-1024, ReLU) at
             batch 64

The int8 versions are what ONNX Runtime's quantize_static writes with
QuantFormat.QDQ, per_channel=True, activations QUInt8 and weights QInt8:
each MatMul's input quantized and dequantized per tensor (u8, its scale
and zero point from the min / max over a calibration batch), its weight
stored s8 with a symmetric per-column scale and zero zero points, the
bias and the rest in f32.

The dyn8 versions are what quantize_dynamic writes (its defaults: QInt8
weights per tensor): each MatMul's input goes through DynamicQuantizeLinear
(u8, its range measured at run time), MatMulInteger with the s8 weight,
Cast to f32 and a Mul by the product of the two scales.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def layers(name):
    """(input shape, [(in, out, relu, residual)...]) of a model."""
    if name == "bert-ffn":
        block = [(768, 3072, True, False), (3072, 768, False, True)]
        return (1, 128, 768), block * 2
    return (64, 1024), [(1024, 4096, True, False), (4096, 4096, True, False),
                        (4096, 1024, False, False)]


def weights(name):
    rng = np.random.default_rng(3)
    shape, ls = layers(name)
    return [((rng.standard_normal((i, o)) / np.sqrt(i)).astype(np.float32),
             (rng.standard_normal(o) * 0.1).astype(np.float32))
            for i, o, _, _ in ls]


def forward(name, x):
    """The f32 model in numpy, and each MatMul's input (calibration)."""
    _, ls = layers(name)
    seen, skip = [], x
    for (i, o, relu, residual), (w, b) in zip(ls, weights(name)):
        seen.append(x)
        y = x @ w + b
        if relu:
            y = np.maximum(y, 0)
        if residual:
            y = y + skip
            skip = y
        x = y
    return x, seen


def build(name, out, mode):
    """mode: "f32", "int8" (static QDQ) or "dyn8" (dynamic)."""
    int8 = mode == "int8"
    shape, ls = layers(name)
    rng = np.random.default_rng(8)
    x = rng.standard_normal(shape).astype(np.float32)
    calib = rng.standard_normal(shape).astype(np.float32)
    _, seen = forward(name, calib)
    nodes, inits = [], []
    node = helper.make_node
    cur, skip = "x", "x"
    for k, ((i, o, relu, residual), (w, b), act) in enumerate(
            zip(ls, weights(name), seen)):
        inits.append(numpy_helper.from_array(b, f"b{k}"))
        lhs, rhs = cur, f"w{k}"
        if mode == "dyn8":
            sw = np.float32(np.abs(w).max() / 127)
            wq = np.clip(np.rint(w / sw), -127, 127).astype(np.int8)
            inits += [numpy_helper.from_array(wq, f"wq{k}"),
                      numpy_helper.from_array(np.array(sw), f"sw{k}")]
            nodes += [
                node("DynamicQuantizeLinear", [cur],
                     [f"xq{k}", f"xs{k}", f"xz{k}"]),
                node("MatMulInteger", [f"xq{k}", f"wq{k}", f"xz{k}"],
                     [f"mi{k}"]),
                node("Cast", [f"mi{k}"], [f"mf{k}"], to=TensorProto.FLOAT),
                node("Mul", [f"xs{k}", f"sw{k}"], [f"ms{k}"]),
                node("Mul", [f"mf{k}", f"ms{k}"], [f"m{k}"]),
                node("Add", [f"m{k}", f"b{k}"], [f"a{k}"])]
        elif int8:
            lo, hi = min(0.0, float(act.min())), max(0.0, float(act.max()))
            s = np.float32((hi - lo) / 255)
            z = np.uint8(np.clip(np.rint(-lo / s), 0, 255))
            sw = (np.abs(w).max(axis=0) / 127).astype(np.float32)
            wq = np.clip(np.rint(w / sw), -127, 127).astype(np.int8)
            inits += [numpy_helper.from_array(np.array(s), f"s{k}"),
                      numpy_helper.from_array(np.array(z), f"z{k}"),
                      numpy_helper.from_array(wq, f"wq{k}"),
                      numpy_helper.from_array(sw, f"sw{k}"),
                      numpy_helper.from_array(np.zeros(o, np.int8), f"zw{k}")]
            nodes += [
                node("QuantizeLinear", [cur, f"s{k}", f"z{k}"], [f"xq{k}"]),
                node("DequantizeLinear", [f"xq{k}", f"s{k}", f"z{k}"],
                     [f"xd{k}"]),
                node("DequantizeLinear", [f"wq{k}", f"sw{k}", f"zw{k}"],
                     [f"wd{k}"], axis=1)]
            lhs, rhs = f"xd{k}", f"wd{k}"
        else:
            inits.append(numpy_helper.from_array(w, f"w{k}"))
        if mode != "dyn8":
            nodes += [node("MatMul", [lhs, rhs], [f"m{k}"]),
                      node("Add", [f"m{k}", f"b{k}"], [f"a{k}"])]
        cur = f"a{k}"
        if relu:
            nodes.append(node("Relu", [cur], [f"r{k}"]))
            cur = f"r{k}"
        if residual:
            nodes.append(node("Add", [cur, skip], [f"res{k}"]))
            cur = skip = f"res{k}"
    nodes.append(node("Identity", [cur], ["y"]))
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                    shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape[:-1] +
                                       (ls[-1][1],))], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    suffix = "" if mode == "f32" else "_" + mode
    with open(os.path.join(out, f"{name}{suffix}.onnx"), "wb") as f:
        f.write(m.SerializeToString())
    np.save(os.path.join(out, f"{name}_in.npy"), x)
    # The calibration batch as one sample, for `loomc quantize --mode
    # static` (the "ls8" form of run.sh).
    np.savez(os.path.join(out, f"{name}_calib.npz"), x=calib[None])


if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name in ["bert-ffn", "mlp-b64"]:
        for mode in ["f32", "int8", "dyn8"]:
            build(name, out, mode)
