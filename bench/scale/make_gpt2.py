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


def gather_external(proto, folder, path):
    """Moves the external data of PROTO's initializers (files in FOLDER, as
    PyTorch writes them: one per tensor) into one file, PATH.data, each
    tensor at a 4 KiB-aligned offset, one tensor in memory at a time."""
    import onnx
    data = os.path.basename(path) + ".data"
    with open(path + ".data", "wb") as out:
        for t in proto.graph.initializer:
            if t.data_location != onnx.TensorProto.EXTERNAL:
                continue
            info = {e.key: e.value for e in t.external_data}
            with open(os.path.join(folder, info["location"]), "rb") as f:
                f.seek(int(info.get("offset", 0)))
                length = info.get("length")
                blob = f.read(int(length)) if length else f.read()
            out.write(b"\0" * (-out.tell() % 4096))
            offset = out.tell()
            out.write(blob)
            del t.external_data[:]
            for k, v in (("location", data), ("offset", str(offset)),
                         ("length", str(len(blob)))):
                e = t.external_data.add()
                e.key, e.value = k, v
    return data


def export(model, example, path, vocab, force_external=False):
    """torch.onnx.export at OPSET, then the logits' shape declared and, when
    the model passed protobuf's 2 GiB cap, its tensors gathered into one
    external data file beside it."""
    import onnx
    model.eval()
    seq = example.shape[1]
    for stale in glob.glob(path + ".data"):
        os.remove(stale)
    # PyTorch 1.13 decides alone: a model over 2 GiB gets external data,
    # one file per tensor named like the tensor, beside the model. Export
    # into a scratch folder, then gather them into one file.
    scratch = tempfile.mkdtemp(dir=os.path.dirname(path))
    try:
        raw = os.path.join(scratch, "model.onnx")
        torch.onnx.export(model, (example,), raw, opset_version=OPSET,
                          do_constant_folding=False,
                          training=torch.onnx.TrainingMode.EVAL,
                          input_names=["input_ids"], output_names=["logits"],
                          dynamic_axes={"input_ids": {0: "batch"},
                                        "logits": {0: "batch"}})
        if force_external:  # (checks the gathering on a small model)
            onnx.save_model(onnx.load(raw), raw, save_as_external_data=True,
                            all_tensors_to_one_file=False,
                            size_threshold=1024)
        proto = onnx.load(raw, load_external_data=False)
        external = any(t.data_location == onnx.TensorProto.EXTERNAL
                       for t in proto.graph.initializer)
        data = gather_external(proto, scratch, path) if external else None
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
    if external:
        onnx.save(proto, path)  # the graph only: the data is in place
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
    p.add_argument("--external-data", action="store_true",
                   help=argparse.SUPPRESS)  # force it (a check)
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
    export(model, ids[:2], name + ".onnx", vocab, a.external_data)
    print(f"wrote {name}.{{pt,npz,tokens.u16}}, {name}_{{in,out}}.npy "
          f"({n} x {t} tokens) in {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
