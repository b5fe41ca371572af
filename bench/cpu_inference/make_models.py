#!/usr/bin/python3
"""Writes the CPU inference benchmark's models and inputs into OUT_DIR:

  mlp.onnx    1024-4096-4096-1024 MLP (MatMul + Add + Relu), dynamic batch,
              seeded random weights; mlp_b1.npy, mlp_b64.npy inputs
  gpt2.onnx, resnet.onnx and their inputs: copies of the PyTorch-exported
              models of test/models (small, made by make_models.py there)

usage: /usr/bin/python3 make_models.py OUT_DIR
"""
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def mlp(path):
    rng = np.random.default_rng(0)
    sizes = [1024, 4096, 4096, 1024]
    nodes, inits = [], []
    x = "x"
    for i, (n_in, n_out) in enumerate(zip(sizes, sizes[1:])):
        w = (rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(np.float32)
        b = (rng.standard_normal(n_out) * 0.01).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"),
                  numpy_helper.from_array(b, f"b{i}")]
        nodes.append(helper.make_node("MatMul", [x, f"w{i}"], [f"mm{i}"]))
        out = "y" if i == len(sizes) - 2 else f"h{i}"
        if i == len(sizes) - 2:
            nodes.append(helper.make_node("Add", [f"mm{i}", f"b{i}"], [out]))
        else:
            nodes.append(helper.make_node("Add", [f"mm{i}", f"b{i}"], [f"a{i}"]))
            nodes.append(helper.make_node("Relu", [f"a{i}"], [out]))
        x = out
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 1024])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 1024])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


def main(out):
    os.makedirs(out, exist_ok=True)
    mlp(os.path.join(out, "mlp.onnx"))
    rng = np.random.default_rng(1)
    for b in (1, 64):
        np.save(os.path.join(out, f"mlp_b{b}.npy"),
                rng.standard_normal((b, 1024)).astype(np.float32))
    models = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          "..", "..", "test", "models")
    for m in ("gpt2", "resnet"):
        shutil.copy(os.path.join(models, f"{m}.onnx"), out)
        shutil.copy(os.path.join(models, f"{m}.input_0.npy"),
                    os.path.join(out, f"{m}_in.npy"))


if __name__ == "__main__":
    main(sys.argv[1])
