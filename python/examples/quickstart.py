"""Loom from Python, start to end (README.md's Python example; CI runs it).

A small GPT-style torch.nn.Module is compiled by Loom and run against the
module's own outputs; then compiled as a training step (cross entropy,
AdamW), trained 5 steps with loom.Trainer beside PyTorch training a copy
of the same module, and the losses compared; the state is saved,
reloaded into a second trainer, and the trained model exported to ONNX,
compiled again and run against the PyTorch-trained module.

    PYTHONPATH=build/python /usr/bin/python3 python/examples/quickstart.py
"""

import copy
import math
import os
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import loom


class Block(nn.Module):
    def __init__(self, width, heads, context):
        super().__init__()
        self.heads = heads
        self.scale = 1.0 / math.sqrt(width // heads)
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.fc = nn.Linear(width, 4 * width)
        self.out = nn.Linear(4 * width, width)
        self.register_buffer("mask", torch.tril(torch.ones(context, context)).view(1, 1, context, context))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * self.scale
        att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, c)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class TinyGPT(nn.Module):
    def __init__(self, vocab=64, width=32, heads=2, layers=2, context=32):
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(context, width)
        self.blocks = nn.Sequential(*[Block(width, heads, context) for _ in range(layers)])
        self.ln = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab)

    def forward(self, idx):
        positions = torch.arange(idx.shape[1])
        return self.head(self.ln(self.blocks(self.tok(idx) + self.pos(positions))))


def main():
    torch.manual_seed(0)
    model = TinyGPT()
    idx = torch.randint(0, 64, (4, 32))
    labels = torch.randint(0, 64, (4, 32))

    # Inference: compile the module, run it, compare with PyTorch.
    art = loom.compile(model, example_inputs=(idx,), input_names=["idx"], output_names=["logits"])
    logits = loom.Session(art).run({"idx": idx})["logits"]
    with torch.no_grad():
        expected = model(idx)
    err = (logits - expected).abs().max().item()
    print(f"inference: logits {tuple(logits.shape)}, max |loom - torch| = {err:.2e}")
    assert err < 1e-4, err

    # Training: the same module as a training step, 5 AdamW steps beside
    # PyTorch's on a copy of the module.
    reference = copy.deepcopy(model)
    train = loom.compile(model, example_inputs=(idx,), input_names=["idx"], output_names=["logits"],
                         loss="cross_entropy", logits="logits", labels="labels",
                         optimizer="adamw", lr=1e-3)
    trainer = loom.Trainer(train)
    optimizer = torch.optim.AdamW(reference.parameters(), lr=1e-3, weight_decay=0.01)
    batches = [(torch.randint(0, 64, (4, 32)), torch.randint(0, 64, (4, 32))) for _ in range(5)]
    for step, (x, y) in enumerate(batches):
        loss = trainer.step({"idx": x, "labels": y})["loss"]
        optimizer.zero_grad()
        torch_loss = F.cross_entropy(reference(x).reshape(-1, 64), y.reshape(-1))
        torch_loss.backward()
        optimizer.step()
        print(f"step {step}: loss {loss:.6f} (PyTorch {torch_loss.item():.6f})")
        assert abs(loss - torch_loss.item()) < 1e-4 * max(1.0, abs(loss)), (loss, torch_loss.item())
    params = trainer.parameters()
    worst = max(np.abs(params[n] - p.detach().numpy()).max() for n, p in reference.named_parameters())
    print(f"parameters after 5 steps: max |loom - torch| = {worst:.2e} over {len(params)} tensors")
    assert worst < 1e-4, worst

    with tempfile.TemporaryDirectory() as tmp:
        # Save, reload into a new trainer: the same state, the same next step.
        checkpoint = os.path.join(tmp, "run.loomckpt")
        trainer.save(checkpoint)
        resumed = loom.Trainer(train)
        resumed.load(checkpoint)
        assert resumed.micro_step == trainer.micro_step == 5
        x, y = batches[0]
        a, b = trainer.step({"idx": x, "labels": y}), resumed.step({"idx": x, "labels": y})
        print(f"resumed from {os.path.basename(checkpoint)}: loss {b['loss']:.6f} == {a['loss']:.6f}")
        assert a["loss"] == b["loss"]
        optimizer.zero_grad()
        F.cross_entropy(reference(x).reshape(-1, 64), y.reshape(-1)).backward()
        optimizer.step()

        # Export the trained model to ONNX, compile it, compare with PyTorch.
        onnx_path = os.path.join(tmp, "trained.onnx")
        trainer.export(onnx_path)
        exported = loom.Session(loom.compile(onnx_path)).run({"idx": idx.numpy()})["logits"]
        with torch.no_grad():
            expected = reference(idx).numpy()
        err = np.abs(exported - expected).max()
        print(f"exported {os.path.basename(onnx_path)}: max |loom - torch| = {err:.2e}")
        assert err < 1e-4, err
    print("quickstart: ok")


if __name__ == "__main__":
    sys.exit(main())
