"""Compares the initializers of an export with its source model's.

    export_source.py SOURCE.onnx EXPORT.onnx same|moved FROZEN...

`same`: every initializer equals the source's (an export before any
training); `moved`: the FROZEN ones equal the source's byte for byte,
every other float one of rank >= 1 (a parameter) differs.
"""
import sys

import numpy as np
import onnx
from onnx import numpy_helper

source, export, mode = sys.argv[1:4]
frozen = set(sys.argv[4:])
a = {t.name: numpy_helper.to_array(t) for t in onnx.load(source).graph.initializer}
b = {t.name: numpy_helper.to_array(t) for t in onnx.load(export).graph.initializer}
assert a.keys() == b.keys(), (sorted(a), sorted(b))
for name in sorted(a):
    equal = a[name].dtype == b[name].dtype and np.array_equal(a[name], b[name])
    if mode == "same" or name in frozen or a[name].ndim == 0:
        assert equal, f"{name} changed"
    else:
        assert not equal, f"{name} did not move"
print(f"{len(a)} initializers: {mode} as expected")
