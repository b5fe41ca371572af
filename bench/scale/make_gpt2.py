#!/usr/bin/python3
"""Writes GPT-2 at real scale for bench/scale with PyTorch (apt-get install
python3-torch python3-onnx): the GPT2 class of test/models/make_models.py
(pre-LN, causal attention, tanh GELU, LM head tied to the token embedding)
at GPT-2's sizes, random weights (seeded), 1024 positions, exported for
SEQ tokens:

  size     layers x width  heads  vocab  parameters
  small    12 x 768        12     50257  124 M
  medium   24 x 1024       16     50257  355 M
  large    36 x 1280       20     50257  774 M
  tiny      2 x 64          2      1000  (the bench's plumbing check)

Files in OUT_DIR, NAME = gpt2_SIZE:

  NAME.onnx        opset 14, input input_ids int64 [batch, SEQ] (batch
                   dynamic), output logits float [batch, SEQ, vocab];
                   EVAL, no constant folding, so that every parameter is
                   one float initializer named like its state_dict key
                   (what `loomc train` trains). Over 2 GiB (large) the
                   tensors go to NAME.onnx.data beside it (ONNX external
                   data, one file)
  NAME.pt          the same initial state_dict, for the PyTorch side
  NAME.npz         training data: input_ids and labels (the next token)
                   int64 [4 x BATCH, SEQ], cut from one random token stream
  NAME.tokens.u16  that stream as raw little-endian uint16 (nanoGPT's
                   format, for `loom-run --data F --tokens uint16 --seq SEQ`)
  NAME_in.npy      input_ids [1, SEQ] (the stream's first window)
  NAME_out.npy     PyTorch's logits on it [1, SEQ, vocab]

usage: /usr/bin/python3 make_gpt2.py --size small|medium|large
           [--batch 8] [--seq 128] -o OUT_DIR
"""
import argparse
import glob
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "test", "models"))
from make_models import GPT2  # noqa: E402

OPSET = 14
POSITIONS = 1024
BATCHES = 4  # batches in the data file
# protobuf's cap on one message; the model goes to external data above it
# (less a margin for the graph itself).
PROTO_LIMIT = 2 ** 31 - 64 * 2 ** 20

SIZES = {
    "tiny": dict(vocab=1000, embed=64, heads=2, layers=2),
    "small": dict(vocab=50257, embed=768, heads=12, layers=12),
    "medium": dict(vocab=50257, embed=1024, heads=16, layers=24),
    "large": dict(vocab=50257, embed=1280, heads=20, layers=36),
}


def new_model(size):
    """GPT-2 of SIZE with the bench's initial weights (seeded), as
    bench/cpu_training makes its GPT-2: embeddings N(0, 0.02) as GPT-2
    initializes them (the class's N(0, 1) through the tied head gives a
    loss far above log(vocab)), LayerNorm scales and shifts perturbed (the
    exporter merges equal-valued initializers)."""
    torch.manual_seed(0)
    model = GPT2(seq=POSITIONS, **SIZES[size])
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Embedding):
                m.weight.normal_(0.0, 0.02)
            if isinstance(m, nn.LayerNorm):
                m.weight.add_(0.1 * torch.randn_like(m.weight))
                m.bias.add_(0.1 * torch.randn_like(m.bias))
    return model


def export(model, example, path, vocab):
    """torch.onnx.export at OPSET, then the logits' shape declared and, over
    the 2 GiB cap, all tensors moved into one external data file."""
    import onnx
    model.eval()
    seq = example.shape[1]
    # PyTorch 1.13 exports a model over 2 GiB with external data on its
    # own, one file per tensor named like the tensor, beside the model:
    # export into a scratch folder and gather them into one file here.
    scratch = tempfile.mkdtemp(dir=os.path.dirname(path))
    try:
        raw = os.path.join(scratch, "model.onnx")
        torch.onnx.export(model, (example,), raw, opset_version=OPSET,
                          do_constant_folding=False,
                          training=torch.onnx.TrainingMode.EVAL,
                          input_names=["input_ids"], output_names=["logits"],
                          dynamic_axes={"input_ids": {0: "batch"},
                                        "logits": {0: "batch"}})
        proto = onnx.load(raw)  # reads the external data, if any
    finally:
        shutil.rmtree(scratch)
    dims = proto.graph.output[0].type.tensor_type.shape.dim
    for d, w in zip(dims, ["batch", seq, vocab]):
        if isinstance(w, int):
            d.dim_value = w
        else:
            d.dim_param = w
    floats = {t.name for t in proto.graph.initializer
              if t.data_type == onnx.TensorProto.FLOAT}
    params = dict(model.named_parameters())
    if floats != set(params):
        sys.exit(f"make_gpt2.py: {path}: float initializers "
                 f"{sorted(floats ^ set(params))} are not the parameters")
    data = os.path.basename(path) + ".data"
    for stale in glob.glob(path + ".data"):
        os.remove(stale)
    # (ByteSize() itself overflows past 2 GiB: count the tensors' bytes.)
    external = sum(len(t.raw_data) for t in proto.graph.initializer) \
        > PROTO_LIMIT
    if external:
        onnx.save_model(proto, path, save_as_external_data=True,
                        all_tensors_to_one_file=True, location=data,
                        size_threshold=1024)
        onnx.checker.check_model(path)  # by path: the data stays outside
    else:
        onnx.checker.check_model(proto, full_check=True)
        onnx.save(proto, path)
    count = sum(p.numel() for p in params.values())
    print(f"wrote {path}: {len(params)} parameters, {count} elements"
          + (f", external data {data}" if external else ""))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--size", required=True, choices=list(SIZES))
    p.add_argument("--batch", type=int, default=8,
                   help="the data file holds 4 batches of this size")
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("-o", dest="out", required=True)
    a = p.parse_args()
    if not 1 <= a.seq <= POSITIONS:
        sys.exit(f"make_gpt2.py: --seq must be 1..{POSITIONS}")
    os.makedirs(a.out, exist_ok=True)
    torch.set_num_threads(os.cpu_count() or 1)
    name = os.path.join(a.out, "gpt2_" + a.size)
    vocab = SIZES[a.size]["vocab"]
    start = time.time()

    g = torch.Generator().manual_seed(1)
    n, t = BATCHES * a.batch, a.seq
    stream = torch.randint(0, vocab, (n * t + 1,), generator=g)
    stream.numpy().astype("<u2").tofile(name + ".tokens.u16")
    ids = stream[:n * t].reshape(n, t).clone()
    labels = stream[1:].reshape(n, t).clone()
    np.savez(name + ".npz", input_ids=ids.numpy(), labels=labels.numpy())
    np.save(name + "_in.npy", ids[:1].numpy())

    model = new_model(a.size)
    torch.save(model.state_dict(), name + ".pt")
    model.eval()
    with torch.no_grad():
        np.save(name + "_out.npy", model(ids[:1]).numpy())
    export(model, ids[:2], name + ".onnx", vocab)
    print(f"wrote {name}.{{pt,npz,tokens.u16}}, {name}_{{in,out}}.npy "
          f"({n} x {t} tokens) in {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
