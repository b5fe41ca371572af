#!/usr/bin/env python3
"""Turns a text file into character-level training data for loom-run.

    text_to_npz.py TEXT OUT.npz --seq T [--stride S] [--seed N]

Each character is its byte value (vocabulary 128: ASCII; a byte >= 128
becomes '?'), so a sampler decodes a token id as the character of that
code. Windows of T + 1 characters start every S characters; OUT.npz holds
`input_ids` [N, T] (the first T characters of each window) and `labels`
[N, T] (the next character at each position), both int64, in an order
shuffled with the seed (loom-run takes samples in file order).
"""

import argparse
import sys

import numpy as np

VOCAB = 128


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("text")
    parser.add_argument("out")
    parser.add_argument("--seq", type=int, required=True, help="context length T")
    parser.add_argument("--stride", type=int, default=1,
                        help="characters between window starts")
    parser.add_argument("--seed", type=int, default=0, help="shuffle seed")
    args = parser.parse_args()
    if args.seq < 1 or args.stride < 1:
        sys.exit("error: --seq and --stride must be positive")
    try:
        with open(args.text, "rb") as f:
            data = np.frombuffer(f.read(), dtype=np.uint8)
    except OSError as e:
        sys.exit(f"error: cannot read '{args.text}': {e.strerror}")
    if len(data) < args.seq + 1:
        sys.exit(f"error: '{args.text}' has {len(data)} characters; "
                 f"--seq {args.seq} needs at least {args.seq + 1}")
    ids = np.where(data < VOCAB, data, ord("?")).astype(np.int64)
    starts = np.arange(0, len(ids) - args.seq, args.stride)
    starts = np.random.default_rng(args.seed).permutation(starts)
    windows = ids[starts[:, None] + np.arange(args.seq + 1)]
    np.savez(args.out, input_ids=windows[:, :-1], labels=windows[:, 1:])
    print(f"{args.out}: {len(starts)} windows of {args.seq} characters from "
          f"{args.text} ({len(ids)} characters, {len(np.unique(ids))} "
          f"distinct)")


if __name__ == "__main__":
    main()
