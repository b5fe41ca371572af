#!/usr/bin/python3
"""Integer matmuls of every path of the CUDA target, and numpy references
(int8-matmul-cuda.test).

int8_matmul_cuda_shapes.py model DIR   writes DIR/shapes.onnx and its inputs
int8_matmul_cuda_shapes.py check DIR   compares DIR/<output>.npy with numpy

The CUDA emitter (compiler/codegen/cuda/CudaEmitGemm.cpp) runs
MatMulInteger as cuBLASLt's int8 GEMM where K and N are multiples of 4,
with u8 operands read less 128, a rhs stored K x N transposed to N x K and
zero-point corrections from row sums; other shapes as an exact loop per
output. The outputs:
  kodd      u8 [3, 30] x s8 [30, 8], za 5: K = 30, the loop
  nodd      s8 [4, 32] x u8 [32, 6], zb 200: N = 6, the loop
  bcast     u8 [2, 1, 4, 16] x s8 [1, 3, 16, 8]: batch dims broadcast on
            both sides, the loop
  shared    s8 [4, 16] x u8 [3, 16, 8], za -3, zb 9: one lhs for three
            rhs batches (the GEMM's lhs batch stride 0), both corrections
  runzero   u8 [6, 32] x s8 [32, 12] with zero points that are graph
            inputs (read by the kernels at run time)
  extremes  u8 all 255 x s8 all -128, za 0, zb 127, K = 256: the largest
            magnitudes of the shifted products
  dq        DynamicQuantizeLinear -> MatMulInteger -> Cast: the dynamic
            form (loomc quantize --mode dynamic); checked exactly against
            loom's own quantized activation (xq, xzp, also outputs), and
            xq against numpy's within one step
"""
import os
import sys

import numpy as np


def data():
    rng = np.random.default_rng(23)
    u8 = lambda *s: rng.integers(0, 256, s).astype(np.uint8)
    s8 = lambda *s: rng.integers(-128, 128, s).astype(np.int8)
    inputs = {
        "a_kodd": u8(3, 30), "a_nodd": s8(4, 32), "a_bcast": u8(2, 1, 4, 16),
        "a_shared": s8(4, 16), "a_run": u8(6, 32),
        "za_run": np.array(77, np.uint8), "zb_run": np.array(-9, np.int8),
        "a_ext": np.full((4, 256), 255, np.uint8),
        "x": rng.standard_normal((6, 32)).astype(np.float32),
    }
    weights = {
        "b_kodd": s8(30, 8), "b_nodd": u8(32, 6), "b_bcast": s8(1, 3, 16, 8),
        "b_shared": u8(3, 16, 8), "b_run": s8(32, 12),
        "b_ext": np.full((256, 8), -128, np.int8), "w_dq": s8(32, 16),
    }
    return inputs, weights


def model(d):
    from onnx import TensorProto, helper, numpy_helper

    inputs, weights = data()
    for k, v in inputs.items():
        np.save(os.path.join(d, k + ".npy"), v)
    scalars = {"z5": np.uint8(5), "z200": np.uint8(200), "zm3": np.int8(-3),
               "z9": np.uint8(9), "z0": np.uint8(0), "z127": np.int8(127)}
    inits = [numpy_helper.from_array(np.array(v), k)
             for k, v in scalars.items()]
    inits += [numpy_helper.from_array(v, k) for k, v in weights.items()]
    node = helper.make_node
    nodes = [
        node("MatMulInteger", ["a_kodd", "b_kodd", "z5"], ["kodd"]),
        node("MatMulInteger", ["a_nodd", "b_nodd", "", "z200"], ["nodd"]),
        node("MatMulInteger", ["a_bcast", "b_bcast"], ["bcast"]),
        node("MatMulInteger", ["a_shared", "b_shared", "zm3", "z9"],
             ["shared"]),
        node("MatMulInteger", ["a_run", "b_run", "za_run", "zb_run"],
             ["runzero"]),
        node("MatMulInteger", ["a_ext", "b_ext", "z0", "z127"], ["extremes"]),
        node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xzp"]),
        node("MatMulInteger", ["xq", "w_dq", "xzp"], ["dq"]),
    ]
    types = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8,
             np.float32: TensorProto.FLOAT}
    ins = [helper.make_tensor_value_info(k, types[v.dtype.type], v.shape)
           for k, v in inputs.items()]
    shapes = {"kodd": [3, 8], "nodd": [4, 6], "bcast": [2, 3, 4, 8],
              "shared": [3, 4, 8], "runzero": [6, 12], "extremes": [4, 8],
              "dq": [6, 16]}
    outs = [helper.make_tensor_value_info(k, TensorProto.INT32, s)
            for k, s in shapes.items()]
    outs += [helper.make_tensor_value_info("xq", TensorProto.UINT8, [6, 32]),
             helper.make_tensor_value_info("xzp", TensorProto.UINT8, [])]
    graph = helper.make_graph(nodes, "int8_shapes", ins, outs, inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with open(os.path.join(d, "shapes.onnx"), "wb") as f:
        f.write(m.SerializeToString())


def check(d):
    i, w = data()
    i64 = lambda a: np.asarray(a).astype(np.int64)
    got = lambda n: np.load(os.path.join(d, n + ".npy"))
    xq, xzp = got("xq"), got("xzp")
    # DynamicQuantizeLinear in numpy: one rounding step apart at most.
    x = i["x"]
    lo, hi = min(0.0, float(x.min())), max(0.0, float(x.max()))
    scale = np.float32((hi - lo) / 255)
    zp = np.clip(np.rint(-lo / scale), 0, 255)
    want_xq = np.clip(np.rint(x / scale) + zp, 0, 255)
    want = {
        "kodd": (i64(i["a_kodd"]) - 5) @ i64(w["b_kodd"]),
        "nodd": i64(i["a_nodd"]) @ (i64(w["b_nodd"]) - 200),
        "bcast": i64(i["a_bcast"]) @ i64(w["b_bcast"]),
        "shared": (i64(i["a_shared"]) + 3) @ (i64(w["b_shared"]) - 9),
        "runzero": (i64(i["a_run"]) - i64(i["za_run"])) @
                   (i64(w["b_run"]) - i64(i["zb_run"])),
        "extremes": i64(i["a_ext"]) @ (i64(w["b_ext"]) - 127),
        "dq": (i64(xq) - i64(xzp)) @ i64(w["w_dq"]),
    }
    bad = 0
    for name, ref in want.items():
        g = got(name)
        if g.shape != ref.shape or g.dtype != np.int32:
            print(f"{name}: {g.dtype}{list(g.shape)}, want "
                  f"int32{list(ref.shape)}")
            bad += 1
            continue
        err = int(np.max(np.abs(g.astype(np.int64) - ref)))
        print(f"{name}: {'ok' if err == 0 else f'error {err}'}")
        bad += err != 0
    err = max(int(np.max(np.abs(i64(xq) - want_xq))), abs(int(xzp) - int(zp)))
    print(f"xq: {'ok' if err <= 1 else f'error {err}'}")
    bad += err > 1
    return bad


if __name__ == "__main__":
    if sys.argv[1] == "model":
        model(sys.argv[2])
    else:
        sys.exit(1 if check(sys.argv[2]) else 0)
