#!/usr/bin/env python3
"""The random ops (docs/training.md, "Random ops") end to end: ONNX models
of RandomUniform, RandomNormal, their *Like forms, Bernoulli and
Multinomial compiled with loomc and run through the Python package's
sessions. Checks, against this file's NumPy reimplementation of the
counter-based generator (passes/Conversion/GraphToLinalg/Random.cpp):

* the drawn values of every run (seeded ops; unseeded ones under
  LOOM_SEED), exactly (normal: within 1e-5 of Box-Muller in f64 on the same bits);
* statistics over 1e6 draws: uniform and normal means and variances,
  Bernoulli frequencies, Multinomial frequencies (a chi-square bound);
* each run of a session draws new values, a seed reproduces the
  sequence of runs, unseeded ops differ between processes;
* shapes and dtypes (the *Like forms, dtype attributes);
* with --device cuda-sim: the CUDA program draws the same tensors as the
  CPU (uniform, Bernoulli, Multinomial exactly; normal within 1e-5: the
  CPU's log and cos are MLIR's approximations, the simulator's libm's).

usage: random_ops.py LOOMC PYTHONPATH TMPDIR [--device cuda-sim]
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

M64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
SALT = 0xD1B54A32D192ED03


def mix(z):
    """SplitMix64's finalizer on a uint64 array."""
    z = z.astype(np.uint64)
    with np.errstate(over="ignore"):
        z = z ^ (z >> np.uint64(30))
        z = z * np.uint64(0xBF58476D1CE4E5B9)
        z = z ^ (z >> np.uint64(27))
        z = z * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return z


def mix1(v):
    return int(mix(np.array([v & M64], dtype=np.uint64))[0])


def op_key(seed, key, stream):
    if seed is not None:
        return seed & M64
    return mix1((key + (stream + 1) * GOLDEN) & M64)


def draws(seed, key, stream, counter, n):
    base = mix1(op_key(seed, key, stream) ^ mix1((counter + SALT) & M64))
    idx = np.arange(1, n + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        return mix(np.uint64(base) + idx * np.uint64(GOLDEN))


def uniform01(z, f64):
    if f64:
        return (z >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    return (z >> np.uint64(40)).astype(np.float64) * 2.0 ** -24


def seed_bits(seed):
    return int(np.array([seed], dtype=np.float32).view(np.uint32)[0])


def ref_uniform(seed, key, stream, counter, shape, low, high, dtype):
    n = int(np.prod(shape))
    f64 = dtype == np.float64
    u = uniform01(draws(seed, key, stream, counter, n), f64)
    return (low + (high - low) * u).astype(dtype).reshape(shape)


def ref_normal(seed, key, stream, counter, shape, mean, scale, dtype):
    n = int(np.prod(shape))
    z = draws(seed, key, stream, counter, n)
    # In f64: the op computes in f32 with libm's logf and cosf, which
    # NumPy's float32 functions do not round alike.
    ct = np.float64
    u1 = ((z >> np.uint64(40)) + np.uint64(1)).astype(ct) * ct(2.0 ** -24)
    u2 = ((z >> np.uint64(16)) & np.uint64(0xFFFFFF)).astype(ct) * ct(2.0 ** -24)
    g = np.sqrt(ct(-2.0) * np.log(u1)) * np.cos(ct(2 * np.pi) * u2)
    return (ct(mean) + ct(scale) * g).astype(dtype).reshape(shape)


def ref_bernoulli(seed, key, stream, counter, p, dtype):
    f64 = p.dtype == np.float64
    u = uniform01(draws(seed, key, stream, counter, p.size), f64)
    return (u.reshape(p.shape) < p).astype(dtype)


def ref_multinomial(seed, key, stream, counter, logits, samples, dtype):
    batch, classes = logits.shape
    u = uniform01(draws(seed, key, stream, counter, batch * samples), True)
    out = np.zeros((batch, samples), dtype=dtype)
    for b in range(batch):
        w = np.exp(logits[b].astype(np.float64) - logits[b].max())
        total = 0.0
        for x in w:
            total += x
        cum = []
        s = 0.0
        for x in w:
            s += x
            cum.append(s)
        cum = np.array(cum)
        t = u[b * samples:(b + 1) * samples] * total
        out[b] = np.minimum(np.searchsorted(cum, t, side="right"), classes - 1)
    return out


FAILURES = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        FAILURES.append(what)


def model(nodes, inputs, outputs, path, opset=15):
    g = helper.make_graph(nodes, "random", inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(m)
    onnx.save(m, path)
    return path


def compile_model(loomc, src, out, target):
    args = [loomc, "compile", src, "-o", out]
    if target == "cuda":
        args += ["--target", "cuda"]
    subprocess.run(args, check=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("loomc")
    ap.add_argument("pythonpath")
    ap.add_argument("tmp")
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    sys.path.insert(0, a.pythonpath)
    import loom  # noqa: E402

    os.makedirs(a.tmp, exist_ok=True)
    N = 1_000_000
    f32 = TensorProto.FLOAT
    V = helper.make_tensor_value_info

    # One model with every op: seeded uniform and normal over 1e6
    # draws, an unseeded uniform, the *Like forms, Bernoulli, Multinomial.
    probs = np.repeat(np.array([0.05, 0.3, 0.5, 0.9], np.float32), N // 4)
    logits = np.log(np.array([[0.1, 0.2, 0.3, 0.4], [0.7, 0.1, 0.1, 0.1]],
                             np.float32))
    S = 200_000
    nodes = [
        helper.make_node("RandomUniform", [], ["u"], shape=[N], low=-2.0,
                         high=3.0, seed=5.0),
        helper.make_node("RandomNormal", [], ["n"], shape=[N], mean=1.0,
                         scale=2.0, seed=6.0),
        helper.make_node("RandomUniform", [], ["free"], shape=[1000]),
        helper.make_node("RandomUniformLike", ["like"], ["ul"],
                         dtype=TensorProto.DOUBLE, seed=1.0),
        helper.make_node("RandomNormalLike", ["like"], ["nl"], seed=2.0),
        helper.make_node("Bernoulli", ["p"], ["b"], seed=3.0,
                         dtype=TensorProto.INT32),
        helper.make_node("Multinomial", ["logits"], ["m"], sample_size=S,
                         seed=4.0, dtype=TensorProto.INT64),
    ]
    src = model(nodes,
                [V("like", f32, [3, 4]), V("p", f32, [N]),
                 V("logits", f32, [2, 4])],
                [V("u", f32, [N]), V("n", f32, [N]), V("free", f32, [1000]),
                 V("ul", TensorProto.DOUBLE, [3, 4]), V("nl", f32, [3, 4]),
                 V("b", TensorProto.INT32, [N]),
                 V("m", TensorProto.INT64, [2, S])],
                os.path.join(a.tmp, "random.onnx"))
    art = compile_model(a.loomc, src, os.path.join(a.tmp, "random.loom"), "cpu")
    feed = {"like": np.zeros((3, 4), np.float32), "p": probs, "logits": logits}

    os.environ["LOOM_SEED"] = "7"
    sess = loom.Session(art, device="cpu")
    check([i.name for i in sess.inputs] == ["like", "p", "logits"],
          "loom.rng_state is hidden from the signature")
    runs = [{k: np.array(v) for k, v in sess.run(feed).items()} for _ in range(2)]
    again = {k: np.array(v) for k, v in
             loom.Session(art, device="cpu").run(feed).items()}
    os.environ.pop("LOOM_SEED")
    other = {k: np.array(v) for k, v in
             loom.Session(art, device="cpu").run(feed).items()}

    r0, r1 = runs
    for c, r in enumerate(runs):
        check(np.array_equal(r["u"], ref_uniform(seed_bits(5.0), 0, 0, c, [N],
                                                 -2.0, 3.0, np.float32)),
              f"run {c}: uniform equals the NumPy generator")
        check(np.allclose(r["n"], ref_normal(seed_bits(6.0), 0, 0, c, [N], 1.0,
                                             2.0, np.float32),
                          rtol=1e-5, atol=1e-5),
              f"run {c}: normal equals the NumPy generator (1e-5)")
        check(np.array_equal(r["free"], ref_uniform(None, 7, 2,
                                                    c, [1000], 0.0, 1.0,
                                                    np.float32)),
              f"run {c}: unseeded uniform under LOOM_SEED=7 equals NumPy's")
        check(np.array_equal(r["b"], ref_bernoulli(seed_bits(3.0), 0, 0, c,
                                                   probs, np.int32)),
              f"run {c}: bernoulli equals the NumPy generator")
        check(np.array_equal(r["m"], ref_multinomial(seed_bits(4.0), 0, 0, c,
                                                     logits, S, np.int64)),
              f"run {c}: multinomial equals the NumPy generator")
    for k in ("u", "n", "free", "ul", "nl", "b", "m"):
        check(not np.array_equal(r0[k], r1[k]), f"{k}: the second run differs")
        check(np.array_equal(r0[k], again[k]),
              f"{k}: a new session with the same seed repeats run 0")
    for k in ("u", "n", "b", "m"):
        check(np.array_equal(r0[k], other[k]),
              f"{k}: a seeded op ignores the run's seed")
    check(not np.array_equal(r0["free"], other["free"]),
          "free: an unseeded op differs between processes' seeds")

    # Shapes and dtypes.
    check(r0["ul"].dtype == np.float64 and r0["ul"].shape == (3, 4),
          "RandomUniformLike: dtype double, the input's shape")
    check(r0["nl"].dtype == np.float32 and r0["nl"].shape == (3, 4),
          "RandomNormalLike: the input's dtype and shape")
    check(r0["b"].dtype == np.int32 and r0["m"].dtype == np.int64,
          "Bernoulli and Multinomial: the dtype attribute")

    # Statistics (5 standard errors; variances within 1%).
    for r in runs:
        u, n = r["u"].astype(np.float64), r["n"].astype(np.float64)
        check(abs(u.mean() - 0.5) < 5 * np.sqrt(25 / 12 / N) and
              abs(u.var() / (25 / 12) - 1) < 0.01 and u.min() >= -2 and
              u.max() < 3, f"uniform [-2, 3): mean {u.mean():.4f}, var "
              f"{u.var():.4f}")
        check(abs(n.mean() - 1) < 5 * 2 / np.sqrt(N) and
              abs(n.var() / 4 - 1) < 0.01,
              f"normal (1, 2): mean {n.mean():.4f}, var {n.var():.4f}")
        freq = r["b"].reshape(4, N // 4).mean(axis=1)
        p = np.array([0.05, 0.3, 0.5, 0.9])
        check(np.all(np.abs(freq - p) < 5 * np.sqrt(p * (1 - p) / (N // 4))),
              f"bernoulli frequencies {np.round(freq, 4).tolist()}")
        for b in range(2):
            counts = np.bincount(r["m"][b], minlength=4)
            expect = S * np.exp(logits[b]) / np.exp(logits[b]).sum()
            chi2 = float(((counts - expect) ** 2 / expect).sum())
            # 3 degrees of freedom: P(chi2 > 21.1) = 1e-4.
            check(chi2 < 21.1 and counts.sum() == S,
                  f"multinomial row {b}: chi-square {chi2:.2f} (3 dof)")

    if a.device == "cuda-sim":
        cart = compile_model(a.loomc, src, os.path.join(a.tmp, "random.cuda.loom"),
                             "cuda")
        os.environ["LOOM_SEED"] = "7"
        cs = loom.Session(cart, device="cuda-sim")
        for c in range(2):
            g = {k: np.array(v) for k, v in cs.run(feed).items()}
            for k in ("u", "free", "ul", "b", "m"):
                check(np.array_equal(g[k], runs[c][k]),
                      f"cuda-sim run {c}: {k} equals the CPU's")
            for k in ("n", "nl"):
                check(np.allclose(g[k], runs[c][k], rtol=1e-5, atol=1e-5),
                      f"cuda-sim run {c}: {k} equals the CPU's (1e-5)")
        os.environ.pop("LOOM_SEED")

    if FAILURES:
        sys.exit(f"random_ops: {len(FAILURES)} checks failed")
    print("random_ops: all checks passed")


if __name__ == "__main__":
    main()
