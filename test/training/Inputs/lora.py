#!/usr/bin/python3
"""lora.test's data and checks.

  lora.py data OUT.npz     x [64, 4] and target = x (base + delta), delta of
                           rank 1, so that the rank-2 adapter can learn it
  lora.py check TRAINED.onnx
                           base kept its value, the adapter moved
"""
import sys

import numpy as np

BASE = np.array([[1.0, 0.5, 0.0, -0.5], [0.0, 1.0, 0.5, 0.0],
                 [-0.5, 0.0, 1.0, 0.5], [0.5, -0.5, 0.0, 1.0]], np.float32)

if sys.argv[1] == "data":
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 4)).astype(np.float32)
    delta = np.outer([0.5, -0.3, 0.2, 0.4], [0.3, 0.6, -0.4, 0.2])
    np.savez(sys.argv[2], x=x, target=(x @ (BASE + delta)).astype(np.float32))
else:
    import onnx
    from onnx import numpy_helper
    init = {t.name: numpy_helper.to_array(t)
            for t in onnx.load(sys.argv[2]).graph.initializer}
    assert np.array_equal(init["base"], BASE), "the frozen base changed"
    assert np.abs(init["lora_b"]).max() > 0.05, "the adapter did not move"
    print("base frozen, adapter trained: |lora_b| max",
          round(float(np.abs(init["lora_b"]).max()), 3))
