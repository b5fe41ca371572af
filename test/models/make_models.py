#!/usr/bin/python3
"""Exports the small PyTorch models that Loom's ONNX tests import.

Run with Debian's Python (apt-get install python3-torch python3-onnx):
    /usr/bin/python3 test/models/make_models.py test/models
It writes NAME.onnx for each model, plus NAME.input_K.npy (one per graph
input, in order) and NAME.output_0.npy (PyTorch's output on that input)
for numeric checks.
The outputs are committed, so tests do not need PyTorch.
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
OPSET = 17


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 32)
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(F.relu(self.fc2(F.relu(self.fc1(x)))))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.relu(self.bn2(self.conv2(x)))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (self.down(x) if self.down is not None else x))


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1, bias=False),
                                  nn.BatchNorm2d(8), nn.ReLU())
        self.layers = nn.Sequential(Block(8, 8, 1), Block(8, 16, 2),
                                    Block(16, 32, 2))
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class GPT2(nn.Module):
    """Pre-LN decoder with causal attention, tanh GELU, tied LM head."""

    def __init__(self, vocab=100, seq=16, embed=32, heads=4, layers=2):
        super().__init__()
        self.heads = heads
        self.wte = nn.Embedding(vocab, embed)
        self.wpe = nn.Embedding(seq, embed)
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(nn.ModuleDict(dict(
                ln_1=nn.LayerNorm(embed), c_attn=nn.Linear(embed, 3 * embed),
                c_proj=nn.Linear(embed, embed), ln_2=nn.LayerNorm(embed),
                c_fc=nn.Linear(embed, 4 * embed),
                mlp_proj=nn.Linear(4 * embed, embed))))
        self.ln_f = nn.LayerNorm(embed)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)).bool())

    def forward(self, ids):
        b, t = ids.shape
        h = self.wte(ids) + self.wpe(torch.arange(t, device=ids.device).unsqueeze(0))
        for blk in self.blocks:
            a = blk["ln_1"](h)
            q, k, v = blk["c_attn"](a).split(a.shape[-1], dim=2)
            d = a.shape[-1] // self.heads
            q = q.reshape(b, t, self.heads, d).transpose(1, 2)
            k = k.reshape(b, t, self.heads, d).transpose(1, 2)
            v = v.reshape(b, t, self.heads, d).transpose(1, 2)
            s = (q @ k.transpose(-2, -1)) / (d ** 0.5)
            s = s.masked_fill(~self.mask[:t, :t], float("-inf"))
            y = (F.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(b, t, -1)
            h = h + blk["c_proj"](y)
            m = blk["c_fc"](blk["ln_2"](h))
            h = h + blk["mlp_proj"](F.gelu(m, approximate="tanh"))
        return self.ln_f(h) @ self.wte.weight.t()


class BERT(nn.Module):
    """Post-LN encoder with a padding attention mask."""

    def __init__(self, vocab=100, seq=16, embed=32, heads=4, layers=2):
        super().__init__()
        self.tok = nn.Embedding(vocab, embed)
        self.pos = nn.Embedding(seq, embed)
        self.ln = nn.LayerNorm(embed)
        layer = nn.TransformerEncoderLayer(embed, heads, 4 * embed,
                                           dropout=0.0, activation="gelu",
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers,
                                             enable_nested_tensor=False)

    def forward(self, ids, attention_mask):
        t = ids.shape[1]
        h = self.ln(self.tok(ids) + self.pos(torch.arange(t, device=ids.device).unsqueeze(0)))
        return self.encoder(h, src_key_padding_mask=attention_mask == 0)


def export(model, name, inputs, input_names, dynamic, outdir):
    model.eval()
    path = os.path.join(outdir, name + ".onnx")
    torch.onnx.export(model, inputs, path, opset_version=OPSET,
                      input_names=input_names, output_names=["output"],
                      dynamic_axes=dynamic, do_constant_folding=True)
    with torch.no_grad():
        out = model(*inputs)
    for k, x in enumerate(inputs):
        np.save(os.path.join(outdir, f"{name}.input_{k}.npy"), x.numpy())
    np.save(os.path.join(outdir, name + ".output_0.npy"), out.numpy())
    print("wrote", path)


def main(outdir):
    os.makedirs(outdir, exist_ok=True)
    batch = {0: "batch"}
    export(MLP(), "mlp", (torch.randn(4, 16),), ["x"],
           {"x": batch, "output": batch}, outdir)
    export(CNN(), "cnn", (torch.randn(2, 3, 16, 16),), ["x"],
           {"x": batch, "output": batch}, outdir)
    export(ResNet(), "resnet", (torch.randn(2, 3, 16, 16),), ["x"],
           {"x": batch, "output": batch}, outdir)
    ids = torch.randint(0, 100, (2, 16))
    export(GPT2(), "gpt2", (ids,), ["input_ids"],
           {"input_ids": batch, "output": batch}, outdir)
    mask = torch.ones(2, 16, dtype=torch.int64)
    mask[1, 12:] = 0
    export(BERT(), "bert", (ids, mask), ["input_ids", "attention_mask"],
           {"input_ids": batch, "attention_mask": batch, "output": batch},
           outdir)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__))
