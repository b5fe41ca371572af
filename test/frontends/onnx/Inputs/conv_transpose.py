"""The references of conv-transpose.onnxtext: ConvTranspose by its
definition, each input element times the kernel added into the output at
i * stride + k * dilation - pad_begin (numpy, float64). The pads that
auto_pad and output_shape stand for are written out by hand from the ONNX
spec's formulas."""
import os
import sys

import numpy as np


def conv_transpose(x, w, b, strides, pads, dilations, group, out):
    n, cin = x.shape[:2]
    spatial = x.ndim - 2
    og = w.shape[1]
    cg = cin // group
    y = np.zeros([n, og * group] + out)
    for idx in np.ndindex(*x.shape[2:]):
        for k in np.ndindex(*w.shape[2:]):
            pos = [idx[i] * strides[i] + k[i] * dilations[i] - pads[i]
                   for i in range(spatial)]
            if any(p < 0 or p >= out[i] for i, p in enumerate(pos)):
                continue
            for g in range(group):
                xs = x[(slice(None), slice(g * cg, (g + 1) * cg)) + idx]
                ws = w[(slice(g * cg, (g + 1) * cg), slice(None)) + k]
                y[(slice(None), slice(g * og, (g + 1) * og)) + tuple(pos)] += \
                    xs.astype(np.float64) @ ws
    if b is not None:
        y += b.reshape([1, -1] + [1] * spatial)
    return y


def main():
    d = sys.argv[1]
    v = {n: np.load(os.path.join(d, n + ".npy"))
         for n in ["x", "w", "b", "x1", "w1", "x3", "w3", "x4", "w4", "x5", "x6",
                  "w6"]}
    want = {
        "y": conv_transpose(v["x"], v["w"], v["b"], [2, 3], [1, 0], [2, 1], 2,
                            [7, 9]),
        # SAME_LOWER: out = 5 * 2; total padding 11 - 10 = 1, at the beginning.
        "y1": conv_transpose(v["x1"], v["w1"], None, [2], [1], [1], 1, [10]),
        # output_shape [4, 7, 5]: total padding [0, -1, 0], the -1 (one more
        # output row of zeros) at the end.
        "y3": conv_transpose(v["x3"], v["w3"], None, [2, 2, 2], [0, 0, 0],
                             [1, 1, 1], 1, [4, 7, 5]),
        # SAME_UPPER: out = [6, 8]; total padding [1, 1], at the end.
        "y4": conv_transpose(v["x4"], v["w4"], None, [2, 2], [0, 0], [1, 1], 1,
                             [6, 8]),
        # pads [2, 1, 0, 1]: the first two kernel rows fall before the output.
        "y5": conv_transpose(v["x5"], v["w4"], None, [1, 1], [2, 1], [1, 1], 1,
                             [1, 2]),
        # The full result is [x * w, 0, 0] (output_padding 2); pads [1, 0]
        # leave only the zeros.
        "y6": conv_transpose(v["x6"], v["w6"], None, [3], [1], [1], 1, [2]),
    }
    for name, ref in want.items():
        got = np.load(os.path.join(d, name + ".npy"))
        ok = got.shape == ref.shape and np.allclose(got, ref, rtol=1e-5,
                                                    atol=1e-5)
        print(name, "ok" if ok else f"MISMATCH {got.shape}: "
              f"{got.ravel()[:8]} want {ref.shape}: {ref.ravel()[:8]}")

if __name__ == "__main__":
    main()
