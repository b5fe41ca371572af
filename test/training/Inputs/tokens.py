"""Token files for test/training/tokens.test (nanoGPT's format: raw little
endian uint16 or uint32 token ids) and checks of loom-run's training log.

  tokens.py write OUT.bin DTYPE COUNT   a periodic text over a vocabulary of 100
  tokens.py falls LOG                   the last logged loss is below the first
  tokens.py same LOG_A LOG_B            both logs end on the same loss
"""
import re
import sys

import numpy as np


def losses(path):
    with open(path) as f:
        return [float(m.group(1)) for m in re.finditer(r"loss (\S+)", f.read())]


def main():
    cmd = sys.argv[1]
    if cmd == "write":
        out, dtype, count = sys.argv[2], sys.argv[3], int(sys.argv[4])
        # A "text" of period 7 over tokens 0..99: learnable in a few steps.
        pattern = np.array([5, 17, 42, 99, 0, 63, 8])
        np.resize(pattern, count).astype("<" + {"uint16": "u2", "uint32": "u4"}[dtype]).tofile(out)
    elif cmd == "falls":
        l = losses(sys.argv[2])
        assert len(l) >= 2 and l[-1] < 0.7 * l[0], f"loss does not fall: {l}"
        print(f"loss falls: {l[0]:.4f} -> {l[-1]:.4f}")
    elif cmd == "same":
        a, b = losses(sys.argv[2]), losses(sys.argv[3])
        assert a and b and a[-1] == b[-1], f"different final loss: {a} vs {b}"
        print("same final loss")
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
