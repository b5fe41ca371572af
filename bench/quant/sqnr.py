#!/usr/bin/python3
"""sqnr.py REF.npy GOT.npy: prints 10 log10(|ref|^2 / |ref - got|^2) in dB."""
import sys

import numpy as np

ref = np.load(sys.argv[1]).astype(np.float64)
got = np.load(sys.argv[2]).astype(np.float64)
noise = np.sum((ref - got) ** 2)
print("inf" if noise == 0 else f"{10 * np.log10(np.sum(ref ** 2) / noise):.1f}")
