#!/usr/bin/python3
"""Writes larger GPT-2-style and ResNet-style models for the CPU inference
benchmark with PyTorch (apt-get install python3-torch), using the model
classes of test/models/make_models.py:

  gpt2_large.onnx     vocab 2048, seq 128, embed 256, 4 heads, 4 layers
                      (4.2 M parameters); gpt2_large_in.npy: batch 1
  resnet_large.onnx   the ResNet of test/models at 64x64 input;
                      resnet_large_in.npy: batch 8
  resnet18.onnx       ResNet-18 (torchvision's layout: 7x7 stem, max pool,
                      4 stages of 2 blocks, 64 to 512 channels; 11.7 M
                      parameters, 1.8 GFLOPs) at 224x224;
                      resnet18_in.npy: batch 1

usage: /usr/bin/python3 make_torch_models.py OUT_DIR
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "test", "models"))
import make_models  # noqa: E402


class ResNet18(torch.nn.Module):
    """torchvision's resnet18, from test/models' Block."""

    def __init__(self, classes=1000):
        super().__init__()
        nn = torch.nn
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False),
                                  nn.BatchNorm2d(64), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            blocks += [make_models.Block(cin, cout, stride),
                       make_models.Block(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*blocks)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(
            torch.nn.functional.adaptive_avg_pool2d(x, 1), 1))


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
    model = ResNet18()
    with torch.no_grad():  # non-trivial batch statistics
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
    x = torch.randn(1, 3, 224, 224)
    export(model, os.path.join(out, "resnet18.onnx"), (x,), ["x"])
    np.save(os.path.join(out, "resnet18_in.npy"), x.numpy())


if __name__ == "__main__":
    main(sys.argv[1])
