"""Writes ONNX models that ask the importer for too much (limits.test):

    make_hostile.py OUTDIR
"""
import os
import sys

from onnx import TensorProto, helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [10, 10])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [10, 10])


def save(name, nodes, inits):
    g = helper.make_graph(nodes, name, [x], [y], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    with open(os.path.join(out, name + ".onnx"), "wb") as f:
        f.write(m.SerializeToString())


add = helper.make_node("Add", ["x", "w"], ["y"], name="add")
# A 10x10 f32 weight: 400 bytes.
w = helper.make_tensor("w", TensorProto.FLOAT, [10, 10], [0.5] * 100)
save("weight", [add], [w])
# Dims whose product overflows 64 bits, no data.
huge = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1 << 40, 1 << 40])
save("huge", [add], [huge])
# Three nodes.
save("three", [helper.make_node("Relu", ["x"], ["a"], name="r1"),
               helper.make_node("Relu", ["a"], ["b"], name="r2"),
               helper.make_node("Relu", ["b"], ["y"], name="r3")], [])


def external(name, location):
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[10, 10])
    t.data_location = TensorProto.EXTERNAL
    e = t.external_data.add()
    e.key, e.value = "location", location
    save(name, [add], [t])


# Outside the model's folder, or not a regular file.
external("ext-absolute", "/dev/zero")
external("ext-parent", "../weights.bin")
os.makedirs(os.path.join(out, "adir"), exist_ok=True)
external("ext-dir", "adir")
