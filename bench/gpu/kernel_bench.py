#!/usr/bin/env python3
"""Loom's generated CUDA kernels on a GPU, without the Loom runtime: the
kernels of a `loomc --target cuda --emit cuda` source are compiled with
NVRTC and launched through the driver API (ctypes), and timed with CUDA
events against references measured in the same run.

  kernel_bench.py chain CHAIN.cu    # fused elementwise chain vs a device-to-device copy
  kernel_bench.py ln LN.cu          # LayerNorm+GELU+residual vs PyTorch eager and torch.compile
  kernel_bench.py nvrtc FILE.cu     # NVRTC compile time per kernel

The shapes are bench/gpu/make_sources.sh's: chain tanh(x * y) + x over
4096 x 4096 f32; ln gelu_tanh(layer_norm(x) * gamma + beta) + x over
4096 x 768 f32. Each kernel's output is checked against NumPy on random
inputs before it is timed; the bytes moved count each parameter at its
own size (gamma and beta are 768 floats). Prints one line per figure,
ratios first. Needs libcuda, libnvrtc and (for `ln`) PyTorch with CUDA.
"""
import ctypes
import re
import sys
import time

import numpy as np

cuda = ctypes.CDLL("libcuda.so.1")
nvrtc = ctypes.CDLL("libnvrtc.so")


def check(rc, what):
    if rc != 0:
        raise SystemExit(f"{what} failed: {rc}")


def init():
    check(cuda.cuInit(0), "cuInit")
    dev = ctypes.c_int()
    check(cuda.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    major, minor = ctypes.c_int(), ctypes.c_int()
    cuda.cuDeviceGetAttribute(ctypes.byref(major), 75, dev)
    cuda.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev)
    ctx = ctypes.c_void_p()
    check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "ctx")
    check(cuda.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return f"sm_{major.value}{minor.value}"


def compile_source(src, arch):
    prog = ctypes.c_void_p()
    check(nvrtc.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"k.cu",
                                   0, None, None), "nvrtcCreateProgram")
    opts = [f"--gpu-architecture={arch}".encode(), b"-std=c++17",
            b"-I/usr/local/cuda/include"]
    arr = (ctypes.c_char_p * len(opts))(*opts)
    t = time.perf_counter()
    rc = nvrtc.nvrtcCompileProgram(prog, len(opts), arr)
    dt = time.perf_counter() - t
    if rc != 0:
        size = ctypes.c_size_t()
        nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        nvrtc.nvrtcGetProgramLog(prog, log)
        raise SystemExit(log.value.decode())
    size = ctypes.c_size_t()
    nvrtc.nvrtcGetCUBINSize(prog, ctypes.byref(size))
    cubin = ctypes.create_string_buffer(size.value)
    nvrtc.nvrtcGetCUBIN(prog, cubin)
    return cubin, dt


def kernels_of(src):
    """(name, grid, block, number of pointer params) of each kernel."""
    out = []
    for m in re.finditer(r"// launch: grid (\d+), block (\d+)\n"
                         r"LOOM_KERNEL void (\w+)\(([^)]*)\)", src):
        out.append((m.group(3), int(m.group(1)), int(m.group(2)),
                    m.group(4).count("*")))
    return out


def alloc(nbytes):
    p = ctypes.c_uint64()
    check(cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(nbytes)), "alloc")
    return p


def time_ms(fn, iters=50):
    start, stop = ctypes.c_void_p(), ctypes.c_void_p()
    cuda.cuEventCreate(ctypes.byref(start), 0)
    cuda.cuEventCreate(ctypes.byref(stop), 0)
    fn()
    cuda.cuEventRecord(start, None)
    for _ in range(iters):
        fn()
    cuda.cuEventRecord(stop, None)
    cuda.cuEventSynchronize(stop)
    ms = ctypes.c_float()
    cuda.cuEventElapsedTime(ctypes.byref(ms), start, stop)
    return ms.value / iters


def launcher(cubin, name, grid, block, ptrs):
    mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
    check(cuda.cuModuleLoadData(ctypes.byref(mod), cubin), "cuModuleLoadData")
    check(cuda.cuModuleGetFunction(ctypes.byref(fn), mod, name.encode()), name)
    args = (ctypes.c_void_p * len(ptrs))(
        *[ctypes.cast(ctypes.byref(p), ctypes.c_void_p) for p in ptrs])

    def run():
        check(cuda.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, None, args,
                                  None), name)
    return run


def main():
    what, path = sys.argv[1], sys.argv[2]
    src = open(path).read()
    arch = init()
    if what == "nvrtc":
        ks = kernels_of(src)
        _, dt = compile_source(src, arch)
        print(f"nvrtc {arch}: {len(ks)} kernels in {dt:.3f} s, "
              f"{1000 * dt / max(1, len(ks)):.1f} ms per kernel")
        return
    cubin, _ = compile_source(src, arch)
    (name, grid, block, nptr), = kernels_of(src)[-1:]
    rng = np.random.default_rng(0)
    if what == "chain":
        x = rng.standard_normal((4096, 4096), dtype=np.float32)
        y = rng.standard_normal((4096, 4096), dtype=np.float32)
        inputs, want = [x, y], np.tanh(x * y) + x
    else:
        rows, cols = 4096, 768
        x = rng.standard_normal((rows, cols), dtype=np.float32)
        g = (1 + 0.1 * rng.standard_normal(cols)).astype(np.float32)
        b = (0.1 * rng.standard_normal(cols)).astype(np.float32)
        mean = x.mean(1, keepdims=True, dtype=np.float64)
        var = x.var(1, keepdims=True, dtype=np.float64)
        n = (x - mean) / np.sqrt(var + 1e-5) * g + b
        gelu = 0.5 * n * (1 + np.tanh(0.7978845608 * (n + 0.044715 * n ** 3)))
        inputs, want = [x, g, b], (gelu + x).astype(np.float32)
    if nptr != len(inputs) + 1:
        raise SystemExit(f"{name} takes {nptr} pointers, the bench passes "
                         f"{len(inputs) + 1}")
    ptrs = []
    for a in inputs:
        p = alloc(a.nbytes)
        check(cuda.cuMemcpyHtoD_v2(p, a.ctypes.data_as(ctypes.c_void_p),
                                   ctypes.c_size_t(a.nbytes)), "upload")
        ptrs.append(p)
    ptrs.append(alloc(want.nbytes))
    run = launcher(cubin, name, grid, block, ptrs)
    run()
    got = np.empty_like(want)
    check(cuda.cuCtxSynchronize(), "cuCtxSynchronize")
    check(cuda.cuMemcpyDtoH_v2(got.ctypes.data_as(ctypes.c_void_p), ptrs[-1],
                               ctypes.c_size_t(want.nbytes)), "download")
    err = float(np.max(np.abs(got - want)))
    if not err <= 1e-4 * (1 + float(np.max(np.abs(want)))):
        raise SystemExit(f"{what} {name}: wrong output (max abs err {err:.3g})")
    ms = time_ms(run)
    # Bytes moved: each input read once, the output written once.
    moved = sum(a.nbytes for a in inputs) + want.nbytes
    nbytes = want.nbytes
    copy_src, copy_dst = alloc(nbytes), alloc(nbytes)
    copy_ms = time_ms(lambda: cuda.cuMemcpyDtoD_v2(copy_dst, copy_src,
                                                    ctypes.c_size_t(nbytes)))
    print(f"{what} {name} {arch}: {moved / ms / 1e6:.1f} GB/s vs copy "
          f"{2 * nbytes / copy_ms / 1e6:.1f} GB/s = "
          f"{(moved / ms) / (2 * nbytes / copy_ms):.2f}x of copy bandwidth "
          f"({ms:.4f} ms, grid {grid} block {block}; output checked, max abs "
          f"err {err:.2g})")
    if what == "ln":
        import torch
        rows, cols = 4096, 768
        x = torch.randn(rows, cols, device="cuda")
        ln = torch.nn.LayerNorm(cols).cuda()

        def eager():
            return torch.nn.functional.gelu(ln(x), approximate="tanh") + x
        compiled = torch.compile(eager)
        for fn, label in ((eager, "eager"), (compiled, "torch.compile")):
            fn()
            torch.cuda.synchronize()
            t0 = torch.cuda.Event(enable_timing=True)
            t1 = torch.cuda.Event(enable_timing=True)
            t0.record()
            for _ in range(50):
                fn()
            t1.record()
            torch.cuda.synchronize()
            ref = t0.elapsed_time(t1) / 50
            print(f"ln+gelu+residual: Loom {ms:.4f} ms, PyTorch {label} "
                  f"{ref:.4f} ms: {ref / ms:.2f}x")


if __name__ == "__main__":
    main()
