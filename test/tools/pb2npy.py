#!/usr/bin/python3
"""Converts ONNX backend test data sets (input_K.pb, output_K.pb
TensorProtos) into input_K.npy / output_K.npy files, one pair of
directories after another (one process for many sets: numpy and onnx are
slow to load).

    /usr/bin/python3 test/tools/pb2npy.py DATA_SET_DIR OUT_DIR [...]
"""
import glob
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def main(src, dst):
    os.makedirs(dst, exist_ok=True)
    for path in sorted(glob.glob(os.path.join(src, "*.pb"))):
        tensor = onnx.TensorProto()
        with open(path, "rb") as f:
            tensor.ParseFromString(f.read())
        name = os.path.splitext(os.path.basename(path))[0]
        np.save(os.path.join(dst, name + ".npy"),
                np.ascontiguousarray(numpy_helper.to_array(tensor)))


if __name__ == "__main__":
    if len(sys.argv) < 3 or len(sys.argv) % 2 != 1:
        sys.exit(__doc__)
    for i in range(1, len(sys.argv), 2):
        main(sys.argv[i], sys.argv[i + 1])
