#!/usr/bin/python3
"""Trained f32 classifiers and their data for bench/quant/accuracy.sh.

make_accuracy_models.py OUT   writes, for each model below, OUT/<name>.onnx
                              (batch dim dynamic), OUT/<name>_calib.npz
                              (the calibration set: 256 samples of the
                              training distribution, for `loomc quantize
                              --mode static --calibration`),
                              OUT/<name>_test.npy (1000 held-out inputs),
                              OUT/<name>_labels.npy (their labels) and
                              OUT/<name>_train.txt (the training log)

  bert-cls    a BERT-style encoder classifier: token and position
              embeddings, LayerNorm, 4 post-LN encoder layers (hidden
              384, 6 heads, feed-forward 1536 with GELU), mean pooling, a
              tanh pooler and a linear head over 8 classes; input `ids`
              [N, 64] (int64, vocab 1024). The task: each token belongs to
              the class `id % 8`; a sequence's tokens are uniform but for
              about 15% drawn from its label's class, so the label is the
              class that occurs most (often a close count: the margins
              vary).
  resnet-cls  a ResNet-style image classifier: a 3x3 stem to 32 channels,
              three stages of two residual blocks (32, 64, 128 channels,
              stride 2 at the start of the second and third; conv, batch
              norm, ReLU, the shortcut a strided 1x1 conv where the shape
              changes), global average pooling and a linear head over 10
              classes; input `x` [N, 3, 32, 32]. The task: each class is a
              smooth random pattern; an image is its class' pattern, scaled,
              shifted by up to 3 pixels and under Gaussian noise.

Both train briefly with Adam (seeded: the same models each run) until the
last 8 training batches were 90% (BERT) or 97% (ResNet) right on average; the batch norms are folded into
the convolutions at export (eval mode). The labels are only for context:
the bench compares the int8 models with the f32 one.
"""
import os
import sys
import time

import numpy as np
import torch
from torch import nn

OPSET = 17
TEST = 1000
CALIB = 256


# --- the BERT-style classifier ------------------------------------------------

VOCAB, SEQ, CLASSES_B = 1024, 64, 8


class EncoderLayer(nn.Module):
    """A post-LN BERT layer."""

    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(hidden, hidden)
        self.k = nn.Linear(hidden, hidden)
        self.v = nn.Linear(hidden, hidden)
        self.o = nn.Linear(hidden, hidden)
        self.ln1 = nn.LayerNorm(hidden)
        self.ff1 = nn.Linear(hidden, ffn)
        self.ff2 = nn.Linear(ffn, hidden)
        self.ln2 = nn.LayerNorm(hidden)
        self.act = nn.GELU()

    def forward(self, h):
        b, t, e = h.shape
        d = e // self.heads

        def split(x):
            return x.reshape(b, t, self.heads, d).transpose(1, 2)

        q, k, v = split(self.q(h)), split(self.k(h)), split(self.v(h))
        att = torch.softmax(q @ k.transpose(2, 3) / d ** 0.5, dim=-1)
        ctx = (att @ v).transpose(1, 2).reshape(b, t, e)
        h = self.ln1(h + self.o(ctx))
        return self.ln2(h + self.ff2(self.act(self.ff1(h))))


class BertClassifier(nn.Module):
    def __init__(self, hidden=384, heads=6, ffn=1536, layers=4):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, hidden)
        self.pos = nn.Embedding(SEQ, hidden)
        self.ln = nn.LayerNorm(hidden)
        self.layers = nn.ModuleList(
            [EncoderLayer(hidden, heads, ffn) for _ in range(layers)])
        self.pool = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, CLASSES_B)

    def features(self, ids):
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        h = self.ln(self.tok(ids) + self.pos(pos))
        for layer in self.layers:
            h = layer(h)
        return h.mean(dim=1)

    def classify(self, f):
        return self.head(torch.tanh(self.pool(f)))

    def forward(self, ids):
        return self.classify(self.features(ids))


def seeded_bert():
    """The encoder as initialized (seeded), its token embeddings moved
    along a direction per class, so that the classes reach the pooled
    features through the layers."""
    torch.manual_seed(1)
    model = BertClassifier()
    with torch.no_grad():
        directions = torch.randn(CLASSES_B, model.tok.weight.shape[1])
        model.tok.weight += directions[torch.arange(VOCAB) % CLASSES_B]
    return model


def fit_head(model, sample, count, steps, log):
    """Trains the pooler and the head only, on the pooled features of
    `count` training sequences (one forward pass of the encoder)."""
    model.eval()
    ids, labels = sample(count)
    with torch.no_grad():
        feats = torch.cat([model.features(torch.from_numpy(ids[i:i + 64]))
                           for i in range(0, count, 64)])
    y = torch.from_numpy(labels)
    params = list(model.pool.parameters()) + list(model.head.parameters())
    opt = torch.optim.Adam(params, lr=1e-3)
    for step in range(steps):
        logits = model.classify(feats)
        loss = nn.functional.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0 or step == steps - 1:
            acc = float((logits.argmax(1) == y).float().mean())
            log.write(f"step {step} loss {loss.item():.4f} acc {acc:.3f}\n")


def bert_data(rng, n):
    labels = rng.integers(0, CLASSES_B, n)
    ids = rng.integers(0, VOCAB, (n, SEQ))
    pick = rng.random((n, SEQ)) < 0.15
    chosen = rng.integers(0, VOCAB // CLASSES_B, (n, SEQ)) * CLASSES_B
    ids = np.where(pick, chosen + labels[:, None], ids)
    return ids.astype(np.int64), labels.astype(np.int64)


# --- the ResNet-style classifier ----------------------------------------------

CLASSES_R = 10


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False),
                nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return torch.relu(y + (x if self.short is None else self.short(x)))


class ResNetClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 1, 1, bias=False),
                                  nn.BatchNorm2d(32), nn.ReLU())
        blocks, cin = [], 32
        for cout, stride in ((32, 1), (64, 2), (128, 2)):
            blocks += [Block(cin, cout, stride), Block(cout, cout, 1)]
            cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(128, CLASSES_R)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.head(x.mean(dim=(2, 3)))


def patterns():
    rng = np.random.default_rng(21)
    low = torch.tensor(rng.standard_normal((CLASSES_R, 3, 4, 4)),
                       dtype=torch.float32)
    return nn.functional.interpolate(low, size=(32, 32), mode="bilinear",
                                     align_corners=False).numpy()


def resnet_data(rng, n, protos):
    labels = rng.integers(0, CLASSES_R, n)
    scale = rng.uniform(0.5, 1.5, (n, 1, 1, 1))
    x = protos[labels] * scale
    for i in range(n):
        x[i] = np.roll(x[i], tuple(rng.integers(-3, 4, 2)), axis=(1, 2))
    x = x + rng.standard_normal(x.shape) * 2.5
    return x.astype(np.float32), labels.astype(np.int64)


# --- training and export ------------------------------------------------------


def train(model, sample, steps, batch, lr, log, target):
    """Adam on fresh batches; stops early once the last 8 batches were
    `target` right on average."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    recent = []
    start = time.time()
    for step in range(steps):
        x, y = sample(batch)
        logits = model(torch.from_numpy(x))
        loss = nn.functional.cross_entropy(logits, torch.from_numpy(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        acc = float((logits.argmax(1).numpy() == y).mean())
        log.write(f"step {step} loss {loss.item():.4f} acc {acc:.3f} "
                  f"{time.time() - start:.0f}s\n")
        log.flush()
        recent = (recent + [acc])[-8:]
        if len(recent) == 8 and np.mean(recent) >= target:
            break
    # The batch norms' statistics, averaged over 16 batches of the final
    # weights (the running ones lag behind so short a training).
    norms = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    if norms:
        with torch.no_grad():
            for m in norms:
                m.reset_running_stats()
                m.momentum = None
            for _ in range(16):
                model(torch.from_numpy(sample(batch)[0]))
    model.eval()


def export(model, path, example, name):
    torch.onnx.export(model, (torch.from_numpy(example),), path,
                      opset_version=OPSET, input_names=[name],
                      output_names=["logits"],
                      dynamic_axes={name: {0: "batch"}, "logits": {0: "batch"}},
                      do_constant_folding=True)


def make(out, name, model, sample, held_out, input_name, fit):
    with open(os.path.join(out, f"{name}_train.txt"), "w") as log:
        fit(log)
    calib, _ = sample(CALIB)
    test, labels = held_out
    with torch.no_grad():
        acc = (model(torch.from_numpy(test)).argmax(1).numpy() ==
               labels).mean()
    print(f"{name}: held-out accuracy of the f32 model {acc:.3f} (torch)")
    export(model, os.path.join(out, f"{name}.onnx"), test[:2], input_name)
    np.savez(os.path.join(out, f"{name}_calib.npz"), **{input_name: calib})
    np.save(os.path.join(out, f"{name}_test.npy"), test)
    np.save(os.path.join(out, f"{name}_labels.npy"), labels)


def main(out, which):
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(2)
    if "bert-cls" in which:
        rng = np.random.default_rng(1)
        model = seeded_bert()

        def sample(n):
            return bert_data(rng, n)

        make(out, "bert-cls", model, sample,
             bert_data(np.random.default_rng(2), TEST), "ids",
             lambda log: fit_head(model, sample, 2048, 400, log))
    if "resnet-cls" in which:
        torch.manual_seed(3)
        rng = np.random.default_rng(3)
        protos = patterns()
        model = ResNetClassifier()

        def sample(n):
            return resnet_data(rng, n, protos)

        make(out, "resnet-cls", model, sample,
             resnet_data(np.random.default_rng(4), TEST, protos), "x",
             lambda log: train(model, sample, 200, 64, 1e-3, log, 0.97))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] or ["bert-cls", "resnet-cls"])
