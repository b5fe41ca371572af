#!/usr/bin/env python3
"""Appends to a .loom artifact's CUDA program (Artifact.cuda, field 10) what
a damaged or hand-made artifact could hold, so that the tests see the
runtime refuse it by name (test/launch/cuda-sim-collectives.test):

  wait0     a step waiting for collective 0 a second time
  badkind   a collective of kind 9 (there are 5)

usage: append_cuda.py IN.loom OUT.loom wait0|badkind

Repeated fields of an appended message are appended to the earlier ones
(protobuf's merge); the header and the data section are rewritten as
test/tools/set_mesh.py does.
"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "tools"))
from set_mesh import align, field, fnv1a, varint  # noqa: E402


def main():
    src, dst, what = sys.argv[1:4]
    if what == "wait0":
        # CudaCode.steps (4) += CudaStep{collective_wait (4): 0}
        cuda = field(4, 2, field(4, 0, varint(0)))
    elif what == "badkind":
        # CudaCode.collectives (11) += CudaCollective{kind 9, dtype F32}
        cuda = field(11, 2, field(1, 0, varint(9)) + field(2, 0, varint(1)))
    else:
        sys.exit("append_cuda.py: unknown change '%s'" % what)
    data = open(src, "rb").read()
    (length,) = struct.unpack("<Q", data[12:20])
    section = data[align(28 + length):]
    body = data[28:28 + length] + field(10, 2, cuda)
    header = data[:12] + struct.pack("<QQ", len(body), fnv1a(body))
    pad = b"\0" * (align(28 + len(body)) - 28 - len(body)) if section else b""
    open(dst, "wb").write(header + body + pad + section)


if __name__ == "__main__":
    main()
