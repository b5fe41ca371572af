"""Writes an ONNX model's float initializers as an .npz, each array named
after its initializer: what `loom-run --init` reads (a trained model's
state by name).

  onnx_weights.py MODEL.onnx OUT.npz [--scale S] [--rename OLD=NEW]
"""
import argparse

import numpy as np
import onnx
from onnx import numpy_helper


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("out")
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--rename", action="append", default=[])
    a = p.parse_args()
    names = dict(r.split("=", 1) for r in a.rename)
    arrays = {}
    for t in onnx.load(a.model).graph.initializer:
        v = numpy_helper.to_array(t)
        if v.dtype == np.float32:
            arrays[names.get(t.name, t.name)] = v * np.float32(a.scale)
    np.savez(a.out, **arrays)


if __name__ == "__main__":
    main()
