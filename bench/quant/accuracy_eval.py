#!/usr/bin/python3
"""Top-1 agreement and logits SQNR of int8 classifiers against f32, for
bench/quant/accuracy.sh.

accuracy_eval.py split OUT NAME PARTS
    splits OUT/NAME_test.npy into PARTS equal files OUT/NAME_test_<k>.npy
accuracy_eval.py compare OUT NAME PARTS FORM...
    reads the logits Loom wrote for each part of the held-out inputs,
    OUT/NAME.out/<k>/logits.npy (f32) and OUT/NAME_FORM.out/<k>/logits.npy
    (each int8 form), and prints per form one line: the form, the share of
    inputs whose top-1 class is the f32 model's (percent), the SQNR of the
    logits against f32's (dB, over all 1000 x classes values), and the
    accuracy of the f32 and the int8 model on the labels
"""
import os
import sys

import numpy as np


def logits(out, model, parts):
    return np.concatenate([
        np.load(os.path.join(out, f"{model}.out", str(k), "logits.npy"))
        for k in range(parts)]).astype(np.float64)


def main():
    what, out, name, parts = sys.argv[1], sys.argv[2], sys.argv[3], \
        int(sys.argv[4])
    if what == "split":
        test = np.load(os.path.join(out, f"{name}_test.npy"))
        if len(test) % parts:
            sys.exit(f"{len(test)} inputs do not split into {parts} parts")
        for k, part in enumerate(np.split(test, parts)):
            np.save(os.path.join(out, f"{name}_test_{k}.npy"), part)
        return
    labels = np.load(os.path.join(out, f"{name}_labels.npy"))
    ref = logits(out, name, parts)
    if ref.shape[0] != labels.shape[0]:
        sys.exit(f"{ref.shape[0]} f32 logits for {labels.shape[0]} labels")
    top = ref.argmax(1)
    for form in sys.argv[5:]:
        got = logits(out, f"{name}_{form}", parts)
        agree = 100.0 * float((got.argmax(1) == top).mean())
        noise = float(np.sum((ref - got) ** 2))
        sqnr = (float("inf") if noise == 0 else
                10 * np.log10(float(np.sum(ref ** 2)) / noise))
        print(f"{form} {agree:.1f} {sqnr:.1f} {100 * (top == labels).mean():.1f}"
              f" {100 * (got.argmax(1) == labels).mean():.1f}")


if __name__ == "__main__":
    main()
