"""Checks the outputs of Inputs/cuda-collectives.mlir on 2 ranks against NumPy.

  check_cuda_collectives.py DIR   (gR.npy, aR.npy, iR.npy and outR/ of rank R)
"""
import sys
import numpy as np
d = sys.argv[1]
L = lambda n: np.load("%s/%s" % (d, n))
g = [L("g%d.npy" % r) for r in range(2)]
a = [L("a%d.npy" % r) for r in range(2)]
i = [L("i%d.npy" % r) for r in range(2)]
ok = True
for r in range(2):
    o = [L("out%d/output_%d.npy" % (r, k)) for k in range(5)]
    want = [np.tanh(g[0]) + np.tanh(g[1]) + g[r],
            np.maximum(a[0] * a[0], a[1] * a[1])[2 * r:2 * r + 2],
            np.concatenate(i),
            a[r][2 * r:2 * r + 2],
            g[1]]
    for k, (got, w) in enumerate(zip(o, want)):
        if got.shape != w.shape or got.dtype != w.dtype or \
                not np.allclose(got, w, rtol=1e-6, atol=1e-6):
            ok = False
            print("rank %d output %d: %s, expected %s" % (r, k, got, w))
print("ok" if ok else "bad")
