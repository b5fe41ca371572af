#!/usr/bin/python3
"""loss-scaling.test's data and checks.

  loss_scaling.py data MLP.npz OUT.npz
        the MLP's data with the first batch of 4 multiplied by 1e4: its f16
        weight gradients overflow at a loss scale of 65536
  loss_scaling.py same A.onnx B.onnx
        every initializer of B equals A's (the skipped step changed nothing)
  loss_scaling.py moved A.onnx B.onnx
        some initializer of B differs from A's
"""
import sys

import numpy as np


def initializers(path):
    import onnx
    from onnx import numpy_helper
    return {t.name: numpy_helper.to_array(t)
            for t in onnx.load(path).graph.initializer}


if sys.argv[1] == "data":
    d = np.load(sys.argv[2])
    x = d["x"].copy()
    x[:4] *= 1e4
    np.savez(sys.argv[3], x=x, labels=d["labels"])
else:
    a, b = initializers(sys.argv[2]), initializers(sys.argv[3])
    same = all(np.array_equal(a[k], b[k]) for k in a)
    if sys.argv[1] == "same":
        assert same, "the parameters changed"
        print("parameters unchanged:", len(a), "initializers")
    else:
        assert not same, "the parameters did not change"
        print("parameters moved")
