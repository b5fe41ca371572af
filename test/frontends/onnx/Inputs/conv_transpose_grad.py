"""Checks the gradients of conv-transpose-grad.onnxtext (two ConvTranspose
nodes under an MSE loss) that `loomc train --gradients` computed against
central finite differences of the same loss in numpy (float64), the
ConvTranspose written by its definition as in conv_transpose.py."""
import os
import sys

import numpy as np
import onnx
import onnx.parser
from onnx import numpy_helper

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conv_transpose import conv_transpose  # noqa: E402

model, d = sys.argv[1], sys.argv[2]
text = "".join(line for line in open(model) if not line.startswith("#"))
params = {t.name: numpy_helper.to_array(t).astype(np.float64)
          for t in onnx.parser.parse_model(text).graph.initializer}
x = np.load(os.path.join(d, "x.npy")).astype(np.float64)
labels = np.load(os.path.join(d, "labels.npy")).astype(np.float64)


def loss(p):
    # h: group 2, strides [2, 1], dilations [1, 2], pads [1, 0, 0, 1],
    # output_padding [1, 0]: [2, 2, 6, 4].
    h = conv_transpose(x, p["w1"], p["b1"], [2, 1], [1, 0], [1, 2], 2,
                       [6, 4])
    # y: SAME_UPPER, strides [1, 2]: out [6, 8]; total padding [1, 1] at
    # the end, so no begin pads.
    y = conv_transpose(h, p["w2"], None, [1, 2], [0, 0], [1, 1], 1, [6, 8])
    return np.mean((y - labels) ** 2)


print("loss", "ok" if np.isclose(np.load(os.path.join(d, "loss.npy")),
                                 loss(params), rtol=1e-5) else "MISMATCH")
eps = 1e-6
for name in ["w1", "b1", "w2"]:
    got = np.load(os.path.join(d, name + ".grad.npy"))
    want = np.zeros_like(params[name])
    for i in np.ndindex(*want.shape):
        p = {k: v.copy() for k, v in params.items()}
        p[name][i] += eps
        up = loss(p)
        p[name][i] -= 2 * eps
        want[i] = (up - loss(p)) / (2 * eps)
    ok = got.shape == want.shape and np.allclose(got, want, rtol=1e-3,
                                                 atol=1e-5)
    print(name, "ok" if ok else f"MISMATCH {got.ravel()[:8]} want "
          f"{want.ravel()[:8]}")
