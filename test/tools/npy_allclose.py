#!/usr/bin/env python3
"""Compares .npy files: npy_allclose.py [--rtol R] [--atol A] GOT WANT ...

Pairs GOT WANT in order. Floats must agree within atol + rtol * |want|
(NaN equals NaN), integers and booleans exactly. Prints one line per pair
and exits 1 on any mismatch.
"""
import argparse
import sys

import numpy as np


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rtol", type=float, default=1e-4)
    p.add_argument("--atol", type=float, default=1e-5)
    p.add_argument("files", nargs="+")
    a = p.parse_args()
    if len(a.files) % 2:
        sys.exit("npy_allclose.py: files come in GOT WANT pairs")
    ok = True
    for got_path, want_path in zip(a.files[::2], a.files[1::2]):
        got, want = np.load(got_path), np.load(want_path)
        if got.shape != want.shape or got.dtype != want.dtype:
            print(f"{got_path}: MISMATCH {got.dtype}{list(got.shape)} vs "
                  f"{want.dtype}{list(want.shape)}")
            ok = False
            continue
        if np.issubdtype(want.dtype, np.floating):
            close = np.isclose(got, want, rtol=a.rtol, atol=a.atol,
                               equal_nan=True)
            err = float(np.nanmax(np.abs(got.astype(np.float64) - want))) \
                if got.size else 0.0
        else:
            close = got == want
            err = 0.0 if close.all() else float("inf")
        if close.all():
            print(f"{got_path}: ok (max abs err {err:.3g})")
        else:
            print(f"{got_path}: MISMATCH at {int((~close).sum())} of "
                  f"{close.size} elements (max abs err {err:.3g})")
            ok = False
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
