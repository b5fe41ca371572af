#!/usr/bin/env python3
"""Gives a .loom artifact a mesh (Artifact.mesh, field 9), as `loomc train
--data-parallel` will: the tests of the runtime's distributed side need
multi-rank artifacts before the compiler makes them.

usage: set_mesh.py IN.loom OUT.loom data=2[,tensor=2] [--zero N]

An appended field of a protobuf message is merged into it (a later Mesh
replaces an earlier one), so the message is appended to as it is and the
header's length and FNV-1a checksum are rewritten; the data section after
the message (format version 3: it starts at the first multiple of 64 after
the message, and segments are relative to it) moves along.
"""
import struct
import sys


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(number, wire, payload):
    key = varint(number << 3 | wire)
    if wire == 2:
        return key + varint(len(payload)) + payload
    return key + payload


def fnv1a(data):
    # The runtime's basis (common/Artifact.cpp), which the format fixes.
    h = 1469598103934665603
    for b in data:
        h ^= b
        h = (h * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def main():
    src, dst, spec = sys.argv[1:4]
    zero = int(sys.argv[sys.argv.index("--zero") + 1]) if "--zero" in sys.argv else 0
    axes = [a.split("=") for a in spec.split(",")]
    mesh = field(1, 2, b"".join(varint(int(n)) for _, n in axes))
    for name, _ in axes:
        mesh += field(2, 2, name.encode())
    if zero:
        mesh += field(3, 0, varint(zero))
    data = open(src, "rb").read()
    (length,) = struct.unpack("<Q", data[12:20])
    section = data[align(28 + length):]
    body = data[28:28 + length] + field(9, 2, mesh)
    header = data[:12] + struct.pack("<QQ", len(body), fnv1a(body))
    pad = b"\0" * (align(28 + len(body)) - 28 - len(body)) if section else b""
    open(dst, "wb").write(header + body + pad + section)


def align(n):
    return (n + 63) // 64 * 64


if __name__ == "__main__":
    main()
