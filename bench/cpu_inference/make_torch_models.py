#!/usr/bin/python3
"""Writes larger GPT-2-style and ResNet-style models for the CPU inference
benchmark with PyTorch (apt-get install python3-torch), using the model
classes of test/models/make_models.py:

  gpt2_large.onnx     vocab 2048, seq 128, embed 256, 4 heads, 4 layers
                      (4.2 M parameters); gpt2_large_in.npy: batch 1
  resnet_large.onnx   the ResNet of test/models at 64x64 input;
                      resnet_large_in.npy: batch 8

usage: /usr/bin/python3 make_torch_models.py OUT_DIR
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "test", "models"))
import make_models  # noqa: E402


def export(model, path, inputs, names):
    model.eval()
    batch = {0: "batch"}
    torch.onnx.export(model, inputs, path, opset_version=make_models.OPSET,
                      input_names=names, output_names=["output"],
                      dynamic_axes={n: batch for n in names + ["output"]},
                      do_constant_folding=True)


def main(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    ids = torch.randint(0, 2048, (1, 128))
    export(make_models.GPT2(vocab=2048, seq=128, embed=256, heads=4,
                            layers=4),
           os.path.join(out, "gpt2_large.onnx"), (ids,), ["input_ids"])
    np.save(os.path.join(out, "gpt2_large_in.npy"), ids.numpy())
    x = torch.randn(8, 3, 64, 64)
    export(make_models.ResNet(), os.path.join(out, "resnet_large.onnx"), (x,),
           ["x"])
    np.save(os.path.join(out, "resnet_large_in.npy"), x.numpy())


if __name__ == "__main__":
    main(sys.argv[1])
