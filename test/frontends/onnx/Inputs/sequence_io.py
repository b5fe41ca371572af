"""Models and data for sequence-io.test: sequence and optional graph inputs
and outputs, with NumPy's results as the reference.

usage: sequence_io.py make DIR | check DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto


def seq_type(elem, shape):
    return helper.make_sequence_type_proto(
        helper.make_tensor_type_proto(elem, shape))


def seq_proto(name, arrays):
    s = onnx.SequenceProto()
    s.name = name
    s.elem_type = onnx.SequenceProto.TENSOR
    for a in arrays:
        s.tensor_values.append(numpy_helper.from_array(a))
    return s


def save(path, proto):
    with open(path, "wb") as f:
        f.write(proto.SerializeToString())


def make(d):
    rng = np.random.default_rng(0)
    # seq.onnx: y = SequenceInsert(x, t) at the front, n = its length, s
    # the concatenation; x's elements have a dynamic first dim.
    g = helper.make_graph(
        [helper.make_node("Constant", [], ["zero"],
                          value=numpy_helper.from_array(np.array(0, np.int64))),
         helper.make_node("SequenceInsert", ["x", "t", "zero"], ["y"]),
         helper.make_node("SequenceLength", ["y"], ["n"]),
         helper.make_node("ConcatFromSequence", ["y"], ["s"], axis=0)],
        "seq",
        [helper.make_value_info("x", seq_type(TensorProto.FLOAT, ["k", 2])),
         helper.make_tensor_value_info("t", TensorProto.FLOAT, [1, 2])],
        [helper.make_value_info("y", seq_type(TensorProto.FLOAT, None)),
         helper.make_tensor_value_info("n", TensorProto.INT64, []),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
              os.path.join(d, "seq.onnx"))
    x = [rng.standard_normal((1, 2)).astype(np.float32),
         rng.standard_normal((3, 2)).astype(np.float32)]
    t = rng.standard_normal((1, 2)).astype(np.float32)
    os.makedirs(os.path.join(d, "in"), exist_ok=True)
    save(os.path.join(d, "in", "input_0.pb"), seq_proto("x", x))
    save(os.path.join(d, "in", "input_1.pb"), numpy_helper.from_array(t, "t"))
    np.save(os.path.join(d, "t.npy"), t)
    for k, a in enumerate(x):
        np.save(os.path.join(d, f"x{k}.npy"), a)
    # Three elements where the artifact takes two; mixed element types.
    os.makedirs(os.path.join(d, "in3"), exist_ok=True)
    save(os.path.join(d, "in3", "input_0.pb"), seq_proto("x", x + [x[0]]))
    save(os.path.join(d, "in3", "input_1.pb"), numpy_helper.from_array(t, "t"))
    os.makedirs(os.path.join(d, "mixed"), exist_ok=True)
    save(os.path.join(d, "mixed", "input_0.pb"),
         seq_proto("x", [x[0], np.array([1, 2], np.int64)]))
    save(os.path.join(d, "mixed", "input_1.pb"), numpy_helper.from_array(t, "t"))

    # opt.onnx: h = OptionalHasElement(o), w = OptionalGetElement(o) * 2,
    # and e, an optional output: o again.
    g = helper.make_graph(
        [helper.make_node("OptionalHasElement", ["o"], ["h"]),
         helper.make_node("OptionalGetElement", ["o"], ["v"], name="get"),
         helper.make_node("Add", ["v", "v"], ["w"]),
         helper.make_node("Identity", ["o"], ["e"])],
        "opt",
        [helper.make_value_info("o", helper.make_optional_type_proto(
            helper.make_tensor_type_proto(TensorProto.FLOAT, [3])))],
        [helper.make_tensor_value_info("h", TensorProto.BOOL, []),
         helper.make_tensor_value_info("w", TensorProto.FLOAT, [3]),
         helper.make_value_info("e", helper.make_optional_type_proto(
             helper.make_tensor_type_proto(TensorProto.FLOAT, [3])))])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)]),
              os.path.join(d, "opt.onnx"))
    # has.onnx: h = OptionalHasElement(o), e = o (compiled absent: false,
    # and no output e).
    g = helper.make_graph(
        [helper.make_node("OptionalHasElement", ["o"], ["h"]),
         helper.make_node("Identity", ["o"], ["e"])],
        "has",
        [helper.make_value_info("o", helper.make_optional_type_proto(
            helper.make_tensor_type_proto(TensorProto.FLOAT, [3])))],
        [helper.make_tensor_value_info("h", TensorProto.BOOL, []),
         helper.make_value_info("e", helper.make_optional_type_proto(
             helper.make_tensor_type_proto(TensorProto.FLOAT, [3])))])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)]),
              os.path.join(d, "has.onnx"))
    # loopN.onnx: a Loop of N iterations carrying a sequence (unrolled at
    # import), n its final length.
    for trips in (20, 5000):
        body = helper.make_graph(
            [helper.make_node("Identity", ["ci"], ["co"]),
             helper.make_node("Cast", ["i"], ["f"], to=TensorProto.FLOAT),
             helper.make_node("SequenceInsert", ["t", "f"], ["t2"])],
            "body",
            [helper.make_tensor_value_info("i", TensorProto.INT64, []),
             helper.make_tensor_value_info("ci", TensorProto.BOOL, []),
             helper.make_value_info("t", seq_type(TensorProto.FLOAT, []))],
            [helper.make_tensor_value_info("co", TensorProto.BOOL, []),
             helper.make_value_info("t2", seq_type(TensorProto.FLOAT, []))])
        g = helper.make_graph(
            [helper.make_node("Constant", [], ["m"], value=numpy_helper.from_array(
                np.array(trips, np.int64))),
             helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(
                 np.array(True))),
             helper.make_node("SequenceEmpty", [], ["e"],
                              dtype=TensorProto.FLOAT),
             helper.make_node("Loop", ["m", "c", "e"], ["r"], body=body),
             helper.make_node("SequenceLength", ["r"], ["n"])],
            "loop", [], [helper.make_tensor_value_info("n", TensorProto.INT64,
                                                       [])])
        onnx.save(helper.make_model(
            g, opset_imports=[helper.make_opsetid("", 17)]),
            os.path.join(d, f"loop{trips}.onnx"))
    o = onnx.OptionalProto()
    o.name = "o"
    o.elem_type = onnx.OptionalProto.TENSOR
    o.tensor_value.CopyFrom(numpy_helper.from_array(
        np.array([1, 2, 3], np.float32)))
    os.makedirs(os.path.join(d, "opt"), exist_ok=True)
    save(os.path.join(d, "opt", "input_0.pb"), o)
    empty = onnx.OptionalProto()
    empty.name = "o"
    os.makedirs(os.path.join(d, "opt-empty"), exist_ok=True)
    save(os.path.join(d, "opt-empty", "input_0.pb"), empty)


def check(d):
    x = [np.load(os.path.join(d, f"x{k}.npy")) for k in range(2)]
    t = np.load(os.path.join(d, "t.npy"))
    want_y = [t] + x
    out = os.path.join(d, "out")
    y = onnx.SequenceProto()
    with open(os.path.join(out, "output_0.pb"), "rb") as f:
        y.ParseFromString(f.read())
    got = [numpy_helper.to_array(v) for v in y.tensor_values]
    ok = len(got) == len(want_y) and all(
        g.shape == w.shape and np.array_equal(g, w)
        for g, w in zip(got, want_y))
    print(f"y: SequenceProto '{y.name}' of {len(got)}: "
          f"{'equal' if ok else 'DIFFERS'}")
    for k, want in ((1, np.array(3, np.int64)),
                    (2, np.concatenate(want_y, 0))):
        with open(os.path.join(out, f"output_{k}.pb"), "rb") as f:
            p = onnx.TensorProto()
            p.ParseFromString(f.read())
        a = numpy_helper.to_array(p)
        same = a.shape == want.shape and np.array_equal(a, want)
        print(f"{p.name}: {'equal' if same else 'DIFFERS'}")


if __name__ == "__main__":
    {"make": make, "check": check}[sys.argv[1]](sys.argv[2])
