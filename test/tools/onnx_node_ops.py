#!/usr/bin/python3
"""Prints, for each ONNX model directory given, its name and the op types
of its main graph's nodes (domain-qualified outside ai.onnx):

    /usr/bin/python3 test/tools/onnx_node_ops.py DIR...
    test_add Add
"""
import os
import sys

import onnx


def ops_of(d):
    """The sorted op types of DIR/model.onnx, None when it does not load."""
    try:
        model = onnx.load(os.path.join(d, "model.onnx"),
                          load_external_data=False)
    except Exception:  # noqa: BLE001: any unreadable model
        return None
    return sorted({(n.domain + "." if n.domain not in ("", "ai.onnx")
                    else "") + n.op_type for n in model.graph.node})


def main(dirs):
    for d in dirs:
        name = os.path.basename(os.path.normpath(d))
        ops = ops_of(d)
        print(name, " ".join(ops) if ops is not None else "<unreadable>")


if __name__ == "__main__":
    main(sys.argv[1:])
