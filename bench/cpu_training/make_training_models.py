#!/usr/bin/python3
"""Writes the CPU training benchmark's models, initial weights and data into
OUT_DIR (needs PyTorch: apt-get install python3-torch python3-onnx):

  mlp.onnx, mlp.pt, mlp.npz     the MLP below (784-1024-1024-10, ReLU);
                                x [4B, 784] f32, labels [4B] int64 in 0..9
  gpt2.onnx, gpt2.pt, gpt2.npz  the GPT2 class of test/models/make_models.py,
                                vocab 512, 128 tokens, 256 wide, 4 heads,
                                4 layers (3.3 M parameters); input_ids and
                                labels (the next token) [4B, 128] int64

NAME.onnx is the inference model exported as test/training/make_references.py
exports its models (opset 17, EVAL, no constant folding, so that every
parameter is one float initializer named like its state_dict key) for
`loomc train`; NAME.pt holds the same initial state_dict for the PyTorch
side (torch_bench.py). The data files hold 4 batches (B = --mlp-batch,
--gpt2-batch), so both sides cycle through the same samples in the same
order.

usage: /usr/bin/python3 make_training_models.py OUT_DIR [--mlp-batch 64] [--gpt2-batch 8]
"""
import argparse
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "test", "models"))
from make_models import GPT2  # noqa: E402

OPSET = 17
BATCHES = 4  # batches in each data file


class MLP(nn.Module):
    def __init__(self, sizes=(784, 1024, 1024, 10)):
        super().__init__()
        self.layers = nn.ModuleList(
            nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))

    def forward(self, x):
        for layer in self.layers[:-1]:
            x = F.relu(layer(x))
        return self.layers[-1](x)


GPT2_SIZE = dict(vocab=512, seq=128, embed=256, heads=4, layers=4)

# name -> (constructor, input name, declared logits shape)
MODELS = {
    "mlp": (MLP, "x", ["batch", 10]),
    "gpt2": (lambda: GPT2(**GPT2_SIZE), "input_ids",
             ["batch", GPT2_SIZE["seq"], GPT2_SIZE["vocab"]]),
}


def new_model(name):
    """The model with the benchmark's initial weights (seeded)."""
    torch.manual_seed(0)
    model = MODELS[name][0]()
    # The exporter merges equal-valued initializers (fresh LayerNorms are
    # all ones or zeros): random scales and shifts keep one per parameter.
    # Embeddings as GPT-2 initializes them (N(0, 0.02)): the class's N(0, 1)
    # through the tied head gives a loss near 170 instead of log(vocab).
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Embedding):
                m.weight.normal_(0.0, 0.02)
            if isinstance(m, nn.LayerNorm):
                m.weight.add_(0.1 * torch.randn_like(m.weight))
                m.bias.add_(0.1 * torch.randn_like(m.bias))
    return model


def export(model, name, example, path):
    import onnx  # here only: bench/gpu imports MODELS where onnx is absent
    import onnx.numpy_helper  # noqa: F401
    input_name, logits = MODELS[name][1], MODELS[name][2]
    model.eval()
    torch.onnx.export(model, (example,), path, opset_version=OPSET,
                      do_constant_folding=False,
                      training=torch.onnx.TrainingMode.EVAL,
                      input_names=[input_name], output_names=["logits"],
                      dynamic_axes={input_name: {0: "batch"},
                                    "logits": {0: "batch"}})
    proto = onnx.load(path)
    # Declare the logits' shape (the exporter names fixed dims it cannot see).
    dims = proto.graph.output[0].type.tensor_type.shape.dim
    for d, w in zip(dims, logits):
        if isinstance(w, int):
            d.dim_value = w
        else:
            d.dim_param = w
    onnx.checker.check_model(proto, full_check=True)
    onnx.save(proto, path)
    # Loom trains the float initializers: they must be exactly the
    # parameters.
    floats = {t.name for t in proto.graph.initializer
              if t.data_type == onnx.TensorProto.FLOAT}
    params = dict(model.named_parameters())
    if floats != set(params):
        sys.exit(f"make_training_models.py: {path}: float initializers "
                 f"{sorted(floats ^ set(params))} are not the parameters")
    count = sum(p.numel() for p in params.values())
    print(f"wrote {path}: {len(params)} parameters, {count} elements")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--mlp-batch", type=int, default=64)
    p.add_argument("--gpt2-batch", type=int, default=8)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(1)

    n = BATCHES * a.mlp_batch
    data = {"mlp": {"x": torch.randn(n, 784, generator=g),
                    "labels": torch.randint(0, 10, (n,), generator=g)}}
    n, t, v = BATCHES * a.gpt2_batch, GPT2_SIZE["seq"], GPT2_SIZE["vocab"]
    stream = torch.randint(0, v, (n, t + 1), generator=g)
    data["gpt2"] = {"input_ids": stream[:, :t].clone(),
                    "labels": stream[:, 1:].clone()}

    for name, arrays in data.items():
        model = new_model(name)
        torch.save(model.state_dict(), os.path.join(a.out, name + ".pt"))
        example = arrays[MODELS[name][1]][:2]
        export(model, name, example, os.path.join(a.out, name + ".onnx"))
        np.savez(os.path.join(a.out, name + ".npz"),
                 **{k: x.numpy() for k, x in arrays.items()})


if __name__ == "__main__":
    main()
