"""An ONNX model whose one weight is past 2 GiB: y = Gather(w, idx), w of
f32[ROWS, 1024] with w[i, j] = i + j / 1024, in external data (as
torch.onnx writes a model past protobuf's cap). Written through a memory
map in chunks, so making it needs little memory.

usage: make_big.py DIR -> DIR/big.onnx, DIR/big.bin, DIR/idx.npy,
DIR/expected.npy
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

ROWS, COLS = 524800, 1024  # 2,149,580,800 bytes: just past 2 GiB

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
w = np.memmap(os.path.join(out, "big.bin"), np.float32, "w+",
              shape=(ROWS, COLS))
cols = np.arange(COLS, dtype=np.float32) / COLS
for start in range(0, ROWS, 65536):
    end = min(ROWS, start + 65536)
    w[start:end] = np.arange(start, end, dtype=np.float32)[:, None] + cols
w.flush()
del w

weight = helper.make_tensor_value_info("w", TensorProto.FLOAT, [ROWS, COLS])
init = TensorProto()
init.name = "w"
init.data_type = TensorProto.FLOAT
init.dims.extend([ROWS, COLS])
init.data_location = TensorProto.EXTERNAL
for key, value in (("location", "big.bin"), ("offset", "0"),
                   ("length", str(ROWS * COLS * 4))):
    entry = init.external_data.add()
    entry.key = key
    entry.value = value
graph = helper.make_graph(
    [helper.make_node("Gather", ["w", "idx"], ["y"], axis=0)], "big",
    [helper.make_tensor_value_info("idx", TensorProto.INT64, [4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, COLS])],
    [init])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
onnx.save(model, os.path.join(out, "big.onnx"))

idx = np.array([0, 1, 70000, ROWS - 1], np.int64)
np.save(os.path.join(out, "idx.npy"), idx)
np.save(os.path.join(out, "expected.npy"),
        idx.astype(np.float32)[:, None] + cols)
