#!/usr/bin/env python3
"""The fused attention kernels (graph.attention, graph.attention_grad)
against NumPy, on the CUDA device or in the CUDA simulator.

Each case (shapes that take several query and key tiles, causal and
masked and plain attention, head sizes from 16 to 128, f32, f16 and bf16)
is three CUDA artifacts compiled here by `loomc compile --target cuda`:
  fwd     softmax attention written op by op (matmul, scale, where,
          softmax, matmul), which --loom-fuse-attention must fuse (its
          summary is checked);
  lse     graph.attention itself: the output and the log-sum-exp;
  grad    graph.attention_grad: dq, dk, dv from NumPy's out, lse and a
          random dout.
16-bit cases cast f32 inputs inside the function (loom-run reads f32).

  cuda-attention.py prepare LOOMC DIR          # here (NumPy)
  cuda-attention.py run LOOM_RUN DIR [--device cuda|cuda-sim]
  cuda-attention.py ctest LOOMC LOOM_RUN [--device cuda-sim]   # 77: none
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

NO_DEVICE = ("no CUDA driver", "cuInit failed", "no CUDA device",
             "no host C++ compiler", "runs on x86-64 Linux only")

# name: batch dims, S, T, D, Dv, dtype, mask ("causal", "random", "none"),
# scale, fill.
CASES = {
    "causal_f32_d64": ([2, 3], 100, 100, 64, 64, "f32", "causal", 0.125,
                       -1e9),
    "masked_f32_d32_dv48": ([3], 40, 70, 32, 48, "f32", "random", 0.3,
                            -1e4),
    "plain_f16_d16": ([2], 33, 65, 16, 16, "f16", "none", 0.25, 0.0),
    "causal_bf16_d128": ([2], 64, 64, 128, 128, "bf16", "causal", 0.088,
                         float("-inf")),
}
TOL = {"f32": (2e-4, 2e-5), "f16": (2e-2, 2e-3), "bf16": (5e-2, 1e-2)}


def mlir_type(shape, dtype):
    return "tensor<" + "x".join(str(d) for d in shape) + "x" + dtype + ">"


def mask_bits(kind, s, t, seed):
    if kind == "causal":
        return np.triu(np.ones((s, t), bool), 1)
    if kind == "random":
        bits = np.random.default_rng(seed).random((s, t)) < 0.3
        bits[:, 0] = False  # every row keeps a key
        return bits
    return None


def dense_bool(bits):
    rows = ", ".join("[" + ", ".join("true" if b else "false" for b in row)
                     + "]" for row in bits)
    return f"dense<[{rows}]>"


def fill_text(fill, dtype):
    """`fill` as an MLIR literal of `dtype` (-inf as its bits)."""
    if not np.isneginf(fill):
        return repr(float(fill))
    return {"f32": "0xFF800000", "f16": "0xFC00", "bf16": "0xFF80",
            "f64": "0xFFF0000000000000"}[dtype]


def reference(q, k, v, bits, scale, fill, dout):
    """out, lse, dq, dk, dv in float64."""
    s = np.einsum("...sd,...td->...st", q, k) * scale
    if bits is not None:
        s = np.where(bits, fill, s)
    m = s.max(-1, keepdims=True)
    e = np.exp(s - m)
    l = e.sum(-1, keepdims=True)
    p = e / l
    out = p @ v
    lse = (m + np.log(l))[..., 0]
    dv = np.swapaxes(p, -1, -2) @ dout
    dp = dout @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (dout * out).sum(-1, keepdims=True))
    if bits is not None:
        ds = np.where(bits, 0.0, ds)
    dq = ds @ k * scale
    dk = np.swapaxes(ds, -1, -2) @ q * scale
    return out, lse, dq, dk, dv


def functions(case):
    batch, s, t, d, dv, dtype, kind, scale, fill = case
    q_shape, k_shape = batch + [s, d], batch + [t, d]
    v_shape, o_shape = batch + [t, dv], batch + [s, dv]
    lse_shape = batch + [s]
    bits = mask_bits(kind, s, t, 0)
    f32 = lambda shape: mlir_type(shape, "f32")
    low = lambda shape: mlir_type(shape, dtype)

    def cast_in(lines, name, shape):
        if dtype == "f32":
            return "%" + name
        lines.append(f"    %{name}l = graph.cast %{name} to {dtype} : "
                     f"{f32(shape)}")
        return f"%{name}l"

    def qkv_in(lines):
        return (cast_in(lines, "q", q_shape), cast_in(lines, "k", k_shape),
                cast_in(lines, "v", v_shape))

    def cast_out(lines, value, shape):
        if dtype == "f32":
            return value
        lines.append(f"    {value}f = graph.cast {value} to f32 : "
                     f"{low(shape)}")
        return value + "f"

    mask_const = (f"    %m = graph.constant {dense_bool(bits)} : "
                  f"tensor<{s}x{t}xi1>") if bits is not None else None
    fill_const = (f"    %fill = graph.constant dense<{fill_text(fill, dtype)}> : "
                  f"tensor<{dtype}>")

    # fwd: the pattern --loom-fuse-attention fuses.
    lines = []
    q, k, v = qkv_in(lines)
    st = low(batch + [s, t])
    lines.append(f"    %s0 = graph.matmul {q}, {k} {{transpose_rhs}} : "
                 f"({low(q_shape)}, {low(k_shape)}) -> {st}")
    lines.append(f"    %c = graph.constant dense<{1.0 / scale!r}> : "
                 f"tensor<{dtype}>")
    lines.append(f"    %s1 = graph.div %s0, %c : ({st}, tensor<{dtype}>) "
                 f"-> {st}")
    x = "%s1"
    if bits is not None:
        lines += [mask_const, fill_const]
        lines.append(f"    %s2 = graph.where %m, %fill, %s1 : "
                     f"(tensor<{s}x{t}xi1>, tensor<{dtype}>, {st}) -> {st}")
        x = "%s2"
    lines.append(f"    %p = graph.softmax {x} {{axis = {len(batch) + 1} : "
                 f"i64}} : ({st}) -> {st}")
    lines.append(f"    %o = graph.matmul %p, {v} : ({st}, {low(v_shape)}) "
                 f"-> {low(o_shape)}")
    o = cast_out(lines, "%o", o_shape)
    fwd = (f"func.func @fwd(%q: {f32(q_shape)}, %k: {f32(k_shape)}, "
           f"%v: {f32(v_shape)}) -> {f32(o_shape)} {{\n" + "\n".join(lines)
           + f"\n    return {o} : {f32(o_shape)}\n}}\n")

    attrs = (f"{{scale = {scale!r} : f64, fill = {fill_text(fill, 'f64')} : f64"
             + (", causal" if kind == "causal" else "") + "}")
    mask_use = " mask %m" if kind == "random" else ""
    mask_type = f", tensor<{s}x{t}xi1>" if kind == "random" else ""
    # lse: graph.attention itself.
    lines = []
    q, k, v = qkv_in(lines)
    if kind == "random":
        lines.append(mask_const)
    lines.append(f"    %o, %lse = graph.attention {q}, {k}, {v}{mask_use} "
                 f"{attrs} : ({low(q_shape)}, {low(k_shape)}, "
                 f"{low(v_shape)}{mask_type}) -> ({low(o_shape)}, "
                 f"{f32(lse_shape)})")
    o = cast_out(lines, "%o", o_shape)
    lse_fn = (f"func.func @lse(%q: {f32(q_shape)}, %k: {f32(k_shape)}, "
              f"%v: {f32(v_shape)}) -> ({f32(o_shape)}, {f32(lse_shape)}) "
              "{\n" + "\n".join(lines) +
              f"\n    return {o}, %lse : {f32(o_shape)}, "
              f"{f32(lse_shape)}\n}}\n")

    # grad: graph.attention_grad.
    lines = []
    q, k, v = qkv_in(lines)
    o = cast_in(lines, "o", o_shape)
    do = cast_in(lines, "do", o_shape)
    if kind == "random":
        lines.append(mask_const)
    lines.append(f"    %dq, %dk, %dv = graph.attention_grad {q}, {k}, {v}, "
                 f"{o}, %lse, {do}{mask_use} {attrs} : ({low(q_shape)}, "
                 f"{low(k_shape)}, {low(v_shape)}, {low(o_shape)}, "
                 f"{f32(lse_shape)}, {low(o_shape)}{mask_type}) -> "
                 f"({low(q_shape)}, {low(k_shape)}, {low(v_shape)})")
    dq = cast_out(lines, "%dq", q_shape)
    dk = cast_out(lines, "%dk", k_shape)
    dv_ = cast_out(lines, "%dv", v_shape)
    grad = (f"func.func @grad(%q: {f32(q_shape)}, %k: {f32(k_shape)}, "
            f"%v: {f32(v_shape)}, %o: {f32(o_shape)}, "
            f"%lse: {f32(lse_shape)}, %do: {f32(o_shape)}) -> "
            f"({f32(q_shape)}, {f32(k_shape)}, {f32(v_shape)}) {{\n"
            + "\n".join(lines) + f"\n    return {dq}, {dk}, {dv_} : "
            f"{f32(q_shape)}, {f32(k_shape)}, {f32(v_shape)}\n}}\n")
    return {"fwd": fwd, "lse": lse_fn, "grad": grad}, bits


def rounded(x, dtype):
    """x as the 16-bit type would hold it (bf16: round to nearest even)."""
    if dtype == "f16":
        return x.astype(np.float16).astype(np.float64)
    if dtype == "bf16":
        b = x.astype(np.float32).view(np.uint32).astype(np.uint64)
        b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
        return b.astype(np.uint32).view(np.float32).astype(np.float64)
    return x.astype(np.float32).astype(np.float64)


def prepare(loomc, root):
    os.makedirs(root, exist_ok=True)
    plan = {}
    for name, case in CASES.items():
        batch, s, t, d, dv, dtype, kind, scale, fill = case
        texts, bits = functions(case)
        rng = np.random.default_rng(1)
        q = rounded(rng.standard_normal(batch + [s, d]), dtype)
        k = rounded(rng.standard_normal(batch + [t, d]), dtype)
        v = rounded(rng.standard_normal(batch + [t, dv]), dtype)
        dout = rounded(rng.standard_normal(batch + [s, dv]), dtype)
        out, lse, _, _, _ = reference(q, k, v, bits, scale, fill, dout)
        # The kernels' inputs as they will read them: out rounded to the
        # type, lse to f32; the gradient's reference from those.
        out_in = rounded(out, dtype)
        lse = lse.astype(np.float32).astype(np.float64)
        dq, dk, dvv = grad_given_out(q, k, v, bits, scale, fill, dout,
                                     out_in, lse)
        d = os.path.join(root, name)
        os.makedirs(d, exist_ok=True)
        arrays = {"q": q, "k": k, "v": v, "o": out_in, "lse": lse,
                  "do": dout, "want_out": out, "want_lse": lse,
                  "want_dq": dq, "want_dk": dk, "want_dv": dvv}
        for key, a in arrays.items():
            np.save(os.path.join(d, key + ".npy"), a.astype(np.float32))
        for fn, text in texts.items():
            src = os.path.join(d, fn + ".mlir")
            with open(src, "w") as f:
                f.write(text)
            p = subprocess.run([loomc, "compile", src, "--target", "cuda",
                                "--print-fusion", "--fused-attention=on",
                                "-o",
                                os.path.join(d, fn + ".loom")],
                               capture_output=True, text=True, timeout=600)
            if p.returncode:
                print(f"{name}/{fn}: loomc failed: {p.stderr.strip()}")
                return 1
            if fn == "fwd" and "fused attention at" not in p.stderr:
                print(f"{name}/fwd: the attention was not fused: "
                      + " ".join(l for l in p.stderr.splitlines()
                                 if "attention" in l))
                return 1
        plan[name] = {"dtype": dtype}
    with open(os.path.join(root, "attention.json"), "w") as f:
        json.dump(plan, f)
    print(f"prepared {len(plan)} attention cases in {root}")
    return 0


def grad_given_out(q, k, v, bits, scale, fill, dout, out, lse):
    """dq, dk, dv as the kernels define them: probabilities recomputed
    from lse, delta from the given (rounded) out."""
    s = np.einsum("...sd,...td->...st", q, k) * scale
    if bits is not None:
        s = np.where(bits, fill, s)
    p = np.exp(s - lse[..., None])
    dv = np.swapaxes(p, -1, -2) @ dout
    dp = dout @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (dout * out).sum(-1, keepdims=True))
    if bits is not None:
        ds = np.where(bits, 0.0, ds)
    return ds @ k * scale, np.swapaxes(ds, -1, -2) @ q * scale, dv


def run_one(loom_run, d, fn, inputs, device):
    out_dir = os.path.join(d, fn + "." + device)
    args = [loom_run, os.path.join(d, fn + ".loom"), "--device", device,
            "--out-dir", out_dir]
    for i, name in enumerate(inputs):  # an MLIR function's: input_K
        args += ["--in", f"input_{i}={os.path.join(d, name + '.npy')}"]
    p = subprocess.run(args, capture_output=True, text=True, timeout=1200)
    if p.returncode:
        return None, p.stderr.strip()
    files = sorted(f for f in os.listdir(out_dir) if f.endswith(".npy"))
    return [np.load(os.path.join(out_dir, f)).astype(np.float64)
            for f in files], ""


def close(got, want, dtype):
    rtol, atol = TOL[dtype]
    scale = max(1.0, float(np.abs(want).max()))
    err = float((np.abs(got - want) / scale).max())
    return err <= rtol + atol, err


def run_all(loom_run, root, device):
    with open(os.path.join(root, "attention.json")) as f:
        plan = json.load(f)
    wrong = 0
    for name, info in sorted(plan.items()):
        d = os.path.join(root, name)
        want = {k: np.load(os.path.join(d, f"want_{k}.npy")).astype(np.float64)
                for k in ("out", "lse", "dq", "dk", "dv")}
        results = []
        for fn, inputs, names in (("fwd", ["q", "k", "v"], ["out"]),
                                  ("lse", ["q", "k", "v"], ["out", "lse"]),
                                  ("grad", ["q", "k", "v", "o", "lse", "do"],
                                   ["dq", "dk", "dv"])):
            got, err = run_one(loom_run, d, fn, inputs, device)
            if got is None:
                if any(s in err for s in NO_DEVICE):
                    print(f"skipped: no {device} device ({err})")
                    return 77
                results.append(f"{fn} FAIL ({err.splitlines()[-1]})")
                wrong += 1
                continue
            for key, g in zip(names, got):
                ok, e = close(g, want[key], info["dtype"])
                results.append(f"{fn}.{key} {'ok' if ok else 'FAIL'} {e:.2g}")
                wrong += not ok
        print(f"{name}: " + ", ".join(results))
    print(f"{len(plan)} attention cases, {wrong} mismatches on {device}")
    return 1 if wrong else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["prepare", "run", "ctest"])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--device", choices=["cuda", "cuda-sim"], default="cuda")
    a = ap.parse_args()
    if a.mode == "prepare":
        return prepare(*a.paths)
    if a.mode == "run":
        loom_run, root = a.paths
        return run_all(os.path.abspath(loom_run), root, a.device)
    loomc, loom_run = a.paths
    with tempfile.TemporaryDirectory() as tmp:
        if a.device == "cuda-sim":
            os.environ["LOOM_CUDA_CACHE"] = os.path.join(tmp, "cache")
        rc = prepare(loomc, tmp)
        return rc or run_all(os.path.abspath(loom_run), tmp, a.device)


if __name__ == "__main__":
    sys.exit(main())
