"""Inputs (--inputs DIR) and references of signal-ops.onnxtext (numpy's FFT
and the ONNX formulas)."""
import os
import sys

import numpy as np

if sys.argv[1] == "--inputs":
    d = sys.argv[2]
    r = np.random.default_rng(1)
    for name, shape in [("real", (2, 10, 3, 1)), ("cplx", (2, 3, 8, 2)),
                        ("sig", (2, 40, 1)), ("csig", (2, 30, 2))]:
        np.save(os.path.join(d, name + ".npy"), r.standard_normal(shape).astype(np.float32))
    sys.exit(0)

d = sys.argv[1]
real, cplx, sig, csig = (np.load(os.path.join(d, n + ".npy")).astype(np.float64)
                         for n in ("real", "cplx", "sig", "csig"))


def pair(z):
    return np.stack([z.real, z.imag], axis=-1)


def window(n, a, periodic=True):
    t = 2 * np.pi * np.arange(n) / (n if periodic else n - 1)
    return a[0] - a[1] * np.cos(t) + a[2] * np.cos(2 * t)


def stft(x, step, length, win, onesided):
    z = x[..., 0] + (1j * x[..., 1] if x.shape[-1] == 2 else 0)
    frames = (z.shape[1] - length) // step + 1
    out = np.stack([np.fft.fft(z[:, f * step:f * step + length] * win, axis=1)
                    for f in range(frames)], axis=1)
    return pair(out[:, :, :length // 2 + 1] if onesided else out)


def mel(m, dft, rate, lo, hi):
    edges = np.arange(0, m + 2)
    to_mel = lambda hz: 2595 * np.log10(1 + hz / 700)
    step = (to_mel(hi) - to_mel(lo)) / (m + 2)
    edges = 700 * (np.power(10, (edges * step + to_mel(lo)) / 2595) - 1)
    edges = ((dft + 1) * edges // rate).astype(int)
    out = np.zeros((dft // 2 + 1, m))
    for i in range(m):
        l, c, h = edges[i:i + 3]
        if c == l:
            out[c, i] = 1
        else:
            for j in range(l, c + 1):
                out[j, i] = (j - l) / (c - l)
        for j in range(c, h):
            out[j, i] = (h - j) / (h - c)
    return out


win = np.array([0.1, 0.3, 0.6, 1.0, 1.0, 0.6, 0.3, 0.1])
want = {
    "padded": pair(np.fft.rfft(real[..., 0], n=12, axis=1)),
    "cut": pair(np.fft.fft(real[..., 0], n=6, axis=1)),
    "inv": pair(np.fft.ifft(cplx[..., 0] + 1j * cplx[..., 1], axis=2)),
    "hann": window(12, [0.5, 0.5, 0]),
    "hamming": window(7, [25 / 46, 21 / 46, 0], periodic=False),
    "blackman": window(9, [0.42, 0.5, 0.08]),
    "stft": stft(sig, 5, 8, win, True),
    "stft_c": stft(csig, 6, 6, np.ones(6), False),
    "mel": mel(6, 16, 16000, 100.0, 7000.0),
}
for name, ref in want.items():
    got = np.load(os.path.join(d, name + ".npy"))
    ok = got.shape == ref.shape and np.allclose(got, ref, rtol=1e-4, atol=1e-4)
    print(name, "ok" if ok else f"MISMATCH {got} want {ref}")
