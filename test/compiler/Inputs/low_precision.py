#!/usr/bin/python3
"""Inputs and numpy references for the f16/bf16 tests.

low_precision.py inputs DT DIR   writes the inputs of low-precision-model.mlir
low_precision.py check DT DIR    checks DIR/<output>.npy against numpy
low_precision.py ops-inputs DT DIR   writes the inputs of low-precision-ops.mlir
                                     (DT's and, in DIR/f32, float32 ones)
low_precision.py ops-check DT DIR    checks DIR/<output>.npy against the f32
                                     model's DIR/f32/<output>.npy
low_precision.py cast-inputs DIR writes the inputs of low-precision-casts.mlir
low_precision.py cast-check DIR  checks its outputs bit for bit

NumPy has no bfloat16: bf16 tensors travel as float32 .npy files (loom-run
rounds a float32 input to bf16, and writes bf16 outputs as float32).
"""
import os
import sys
from fractions import Fraction

import numpy as np

np.seterr(over="ignore", invalid="ignore")

PRECISION = {"bf16": 8, "f16": 11}  # significand bits


def bf16_bits(x):
    """float32 -> bf16 bits, to nearest even (NaN -> quiet NaN)."""
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    u = np.uint64
    r = ((b + u(0x7FFF) + ((b >> u(16)) & u(1))) >> u(16)).astype(np.uint16)
    return np.where(np.isnan(np.asarray(x, np.float32)), np.uint16(0x7FC0), r)


def bf16_value(bits):
    b = np.atleast_1d(np.asarray(bits).astype(np.uint32)) << np.uint32(16)
    return b.astype(np.uint32).view(np.float32).reshape(np.shape(bits))


def rnd(dt, v):
    """f64 values rounded to DT (through f32 for bf16: a reference within
    one ulp), returned as float64."""
    v = np.asarray(v, np.float64)
    if dt == "f16":
        return v.astype(np.float16).astype(np.float64)
    return bf16_value(bf16_bits(v.astype(np.float32))).astype(np.float64)


def save(d, name, dt, v):
    v = rnd(dt, v)
    np.save(os.path.join(d, name + ".npy"),
            v.astype(np.float16 if dt == "f16" else np.float32))
    return v


def load(d, name):
    return np.load(os.path.join(d, name + ".npy"))


def model_inputs(dt, d):
    rng = np.random.default_rng(3)
    acc = np.full((4, 512), 0.5)
    acc[:, 0] = 64
    save(d, "acc_in", dt, acc)
    for name, shape in [("a", (8, 64)), ("b", (64, 16)), ("x", (2, 3, 8, 8)),
                        ("w", (4, 3, 3, 3)), ("e", (4, 16)), ("g", (16,)),
                        ("bias", (16,)), ("table", (10, 16))]:
        save(d, name, dt, rng.standard_normal(shape))
    np.save(os.path.join(d, "labels.npy"), np.array([0, 5, 15, 7], np.int64))
    np.save(os.path.join(d, "ids.npy"), np.array([3, 0, 9, 3, 1], np.int64))


def model_check(dt, d):
    x = {n: load(d, n).astype(np.float64)
         for n in ["acc_in", "a", "b", "x", "w", "e", "g", "bias", "table"]}
    e, r = x["e"], (lambda v: rnd(dt, v))
    ids, labels = load(d, "ids"), load(d, "labels")
    conv = np.zeros((2, 4, 6, 6))
    for i in range(6):
        for j in range(6):
            conv[:, :, i, j] = np.einsum("nchw,ochw->no",
                                         x["x"][:, :, i:i + 3, j:j + 3], x["w"])
    ls = e - e.max(1, keepdims=True)
    ls = ls - np.log(np.exp(ls).sum(1, keepdims=True))
    mean, var = e.mean(1, keepdims=True), e.var(1, keepdims=True)
    want = {
        "acc": r(x["acc_in"] @ x["acc_in"].T),
        "mm": r(x["a"] @ x["b"]),
        "conv": r(conv),
        "chain": r(np.exp(r(np.tanh(r(r(e * e) + e))))),
        "softmax": r(np.exp(ls)),
        "layer_norm": r((e - mean) / np.sqrt(var + 1e-5) * x["g"] + x["bias"]),
        "reduce_sum": r(e.sum(1)),
        "cross_entropy": r(-ls[np.arange(4), labels].mean()),
        "embedding": x["table"][ids],
        "gather": x["table"][ids],
        "transpose_concat": np.concatenate([e.T, -e.T]),
    }
    storage = np.float16 if dt == "f16" else np.float32
    for name, ref in want.items():
        got = load(d, name)
        ulp = np.exp2(np.floor(np.log2(np.maximum(np.abs(ref), 1e-30)))
                      - (PRECISION[dt] - 1))
        ok = (got.dtype == storage and got.shape == ref.shape and
              np.all(np.abs(got - ref) <= ulp + 1e-6))
        print(f"{name}: {'ok' if ok else 'MISMATCH'} {got.dtype} {got.shape}"
              + ("" if ok else f" max err {np.abs(got - ref).max():.3g}"))
    print("acc:", " ".join(f"{v:g}" for v in load(d, "acc").ravel()[:4]))
    # compare is checked against the model's own rounded softmax.
    cmp = load(d, "compare")
    ok = cmp.dtype == np.bool_ and np.array_equal(cmp, e > load(d, "softmax"))
    print(f"compare: {'ok' if ok else 'MISMATCH'}")


def ops_inputs(dt, d):
    rng = np.random.default_rng(5)
    shape = (2, 3, 4, 4)
    x, y = rng.standard_normal(shape), rng.standard_normal(shape)
    values = {"x": x, "y": y, "p": np.abs(x) + 0.5, "c": [0.5, 1.0, 2.0]}
    os.makedirs(os.path.join(d, "f32"), exist_ok=True)
    for name, v in values.items():
        v = save(d, name, dt, v)
        np.save(os.path.join(d, "f32", name + ".npy"), v.astype(np.float32))
    idx = rng.integers(0, 4, (2, 3, 4, 1)).astype(np.int64)
    for where in [d, os.path.join(d, "f32")]:
        np.save(os.path.join(where, "idx.npy"), idx)


def ops_check(dt, d):
    storage = np.float16 if dt == "f16" else np.float32
    for f in sorted(os.listdir(os.path.join(d, "f32"))):
        name = f[:-4]
        if name in ["x", "y", "p", "c", "idx"]:
            continue
        got, f32 = load(d, name), load(os.path.join(d, "f32"), name)
        if f32.dtype == np.int64:
            ok = got.dtype == np.int64 and np.array_equal(got, f32)
        else:
            ref = rnd(dt, f32.astype(np.float64))
            ulp = np.exp2(np.floor(np.log2(np.maximum(np.abs(ref), 1e-30)))
                          - (PRECISION[dt] - 1))
            ok = (got.dtype == storage and got.shape == ref.shape and
                  np.all(np.abs(got - ref) <= ulp + 1e-6))
        print(f"{name}: {'ok' if ok else 'MISMATCH'} {got.dtype} {got.shape}")


# ---- casts: exact, bit for bit ----

# f32 values: RNE ties (bf16 at 1 + 2^-8, f16 at 1 + 2^-11 and 2049),
# overflow (f16 beyond 65504, bf16 beyond 3.39e38), subnormals, NaN, inf.
F32 = [0.0, -0.0, 1.0, 1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-20,
       -(1 + 2**-8), 1 + 2**-11, 1 + 3 * 2**-11, 2049.0, 2051.0, 65504.0,
       65519.0, 65520.0, 1e5, -1e5, 2**-24, 2**-25, 3 * 2**-26, 1e-8, 1e-45,
       3.4e38, 3.3895e38, float(np.finfo(np.float32).max), float("inf"),
       float("-inf"), float("nan"), 1 / 3, -2 / 3, 0.1, 1234.5678, -7e-5]
# f64 values that a rounding through f32 gets wrong (double rounding), and
# values past f32's range.
F64 = [1 + 2**-8 + 2**-40, 1 + 2**-11 + 2**-40, -(1 + 2**-8 + 2**-40),
       2049 + 2**-30, 1 + 2**-8 - 2**-40, 1e300, -1e300, 1e-300, -1e-300,
       65520 - 1e-9, 3.3961e38, float("nan"), float("inf"), 0.1, 1 / 3]
I32 = [0, 1, -1, 257, 259, 2049, 2051, 65504, 65520, 70000, 2**24 + 1,
       2**25 + 2**17 + 1, -(2**25 + 2**17 + 1), -2**31, 2**31 - 1, 12345]
F16 = [0.0, -0.0, 1.0, 65504.0, -65504.0, 2**-24, -2**-24, 2**-14,
       float("inf"), float("-inf"), float("nan"), 0.333251953125, 1000.5]


def pad(values, n=32):
    return (values * n)[:n]


def bf16_exact(v):
    """The correctly rounded bf16 value of the number v (a float or an int;
    no double rounding through f32): the nearest of the neighbours of a
    candidate, ties to the even one, in exact arithmetic."""
    v = float(v) if isinstance(v, (float, np.floating)) else int(v)
    if isinstance(v, float) and not np.isfinite(v):
        return v
    exact = Fraction(v)
    # From bf16's largest value (255 * 2^120) plus half an ulp: infinity.
    if abs(exact) >= 511 * 2**119:
        return float(np.copysign(np.inf, v))
    best = None
    cand = int(bf16_bits(np.float32(float(v))))
    for bits in [cand - 1, cand, cand + 1]:
        val = float(bf16_value(np.uint16(bits & 0xFFFF)))
        if np.isfinite(val):
            key = (abs(Fraction(val) - exact), bits & 1)
            best = min(best, (key, val)) if best else (key, val)
    return float(np.copysign(best[1], v)) if best[1] == 0 else best[1]


def chain(values, q, round_to):
    """(v + q) + q, each sum rounded by round_to from its exact value."""
    out = []
    for v in values:
        v = float(v)
        for _ in range(2):
            v = round_to(v + q) if np.isfinite(v) and abs(v) < 2**60 else v + q
        out.append(v)
    return out


def cast_inputs(d):
    np.save(os.path.join(d, "x.npy"), np.array(pad(F32), np.float32))
    np.save(os.path.join(d, "d.npy"), np.array(pad(F64), np.float64))
    np.save(os.path.join(d, "i.npy"), np.array(pad(I32), np.int32))
    np.save(os.path.join(d, "h.npy"), np.array(pad(F16), np.float16))


def same(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return got.shape == want.shape and all(
        (np.isnan(g) and np.isnan(w)) or (g == w and
                                          np.signbit(g) == np.signbit(w))
        for g, w in zip(got, want))


def cast_check(d):
    x, dd = load(d, "x"), load(d, "d")
    i, h = load(d, "i"), load(d, "h")

    def bf16_of(values):
        return [bf16_exact(v) for v in values]

    want = {
        "x_bf16": (bf16_value(bf16_bits(x)), np.float32),
        "x_f16": (x.astype(np.float16), np.float16),
        "d_bf16": (bf16_of(dd), np.float32),
        "d_f16": (dd.astype(np.float16), np.float16),
        "i_bf16": (bf16_of(i), np.float32),
        "i_f16": (i.astype(np.float64).astype(np.float16), np.float16),
        # the bf16 input: x rounded by loom-run, returned as it is
        "b": (bf16_value(bf16_bits(x)), np.float32),
        "b_f16": (bf16_value(bf16_bits(x)).astype(np.float16), np.float16),
        "b_f64": (bf16_value(bf16_bits(x)).astype(np.float64), np.float64),
        "b_i32": (None, np.int32),
        "h_bf16": (bf16_value(bf16_bits(h.astype(np.float32))), np.float32),
        "h_f32": (h.astype(np.float32), np.float32),
        "h_f64": (h.astype(np.float64), np.float64),
        "h_i32": (None, np.int32),
        "b_chain": (chain(bf16_value(bf16_bits(x)), 2.0**-8, bf16_exact),
                    np.float32),
        "h_chain": (chain(h, 2.0**-11,
                          lambda v: float(np.float64(v).astype(np.float16))),
                    np.float16),
    }
    for name, (ref, dtype) in want.items():
        got = load(d, name)
        if name.endswith("_i32"):
            # Out-of-range and NaN conversions are undefined: compare the
            # finite in-range elements only.
            src = bf16_value(bf16_bits(x)) if name == "b_i32" else h
            keep = np.isfinite(src) & (np.abs(src.astype(np.float64)) < 2**31)
            ok = got.dtype == dtype and np.array_equal(
                got[keep], np.trunc(src[keep].astype(np.float64)))
        else:
            ok = got.dtype == dtype and same(got, ref)
        bad = "" if ok else " got %s want %s" % (list(got), list(ref))
        print(f"{name}: {'ok' if ok else 'MISMATCH'}{bad}")


mode = sys.argv[1]
if mode == "inputs":
    model_inputs(sys.argv[2], sys.argv[3])
elif mode == "check":
    model_check(sys.argv[2], sys.argv[3])
elif mode == "ops-inputs":
    ops_inputs(sys.argv[2], sys.argv[3])
elif mode == "ops-check":
    ops_check(sys.argv[2], sys.argv[3])
elif mode == "cast-inputs":
    cast_inputs(sys.argv[2])
else:
    cast_check(sys.argv[2])
