#!/usr/bin/env python3
"""On the GPU machine: the seeded initial weights of bench/scale's GPT-2
(make_gpt2.py's new_model, the model torch_bench.py's gpt2_SIZE trains)
as an .npz by parameter name, for `loom-run --init`: the CUDA training
artifact is made without its initial values (`loomc train
--no-initial-values`), which would not fit the 64 MiB the device tool
carries.

  gpt2_weights.py SIZE OUT.npz
"""
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
# make_models.py (the GPT2 class) is in step/, make_gpt2.py in scale/.
sys.path[:0] = [os.path.join(here, "step"), os.path.join(here, "scale")]
import make_gpt2  # noqa: E402

size, out = sys.argv[1], sys.argv[2]
model = make_gpt2.new_model(size)
np.savez(out, **{n: p.detach().numpy() for n, p in model.named_parameters()})
print(f"{out}: {sum(p.numel() for p in model.parameters())} parameters")
