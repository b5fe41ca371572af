"""Recurrent layers from PyTorch (nn.LSTM, nn.GRU, nn.RNN, exported as ONNX
LSTM, GRU and RNN and unrolled by the importer, frontends/onnx/
OnnxRecurrent.cpp): inference equals the module's, and training follows
PyTorch's Adam step for step (backpropagation through time from the graph
ops' VJP rules)."""

import copy

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import loom


class Tagger(nn.Module):
    def __init__(self, kind, bidirectional=False, layers=1):
        super().__init__()
        cls = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}[kind]
        self.rnn = cls(8, 16, num_layers=layers, batch_first=True, bidirectional=bidirectional)
        self.head = nn.Linear(32 if bidirectional else 16, 4)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out)


CASES = [("lstm", False, 1), ("lstm", True, 1), ("gru", False, 2), ("gru", True, 1), ("rnn", False, 1)]


@pytest.mark.parametrize("kind,bidirectional,layers", CASES)
def test_inference_equals_pytorch(kind, bidirectional, layers):
    torch.manual_seed(0)
    model = Tagger(kind, bidirectional, layers).eval()
    x = torch.randn(3, 7, 8)
    art = loom.compile(model, example_inputs=(x,), input_names=["x"], output_names=["y"])
    y = loom.Session(art, threads=1).run({"x": x})["y"]
    np.testing.assert_allclose(y.numpy(), model(x).detach().numpy(), atol=2e-5)


@pytest.mark.parametrize("kind,bidirectional,layers", CASES)
def test_training_follows_pytorch(kind, bidirectional, layers):
    torch.manual_seed(1)
    model = Tagger(kind, bidirectional, layers)
    reference = copy.deepcopy(model)
    x0 = torch.randn(4, 6, 8)
    art = loom.compile(model, example_inputs=(x0,), input_names=["x"], output_names=["y"],
                       loss="mse", logits="y", labels="target", optimizer="adam", lr=1e-2)
    trainer = loom.Trainer(art, threads=1)
    adam = torch.optim.Adam(reference.parameters(), lr=1e-2)
    for _ in range(5):
        x, target = torch.randn(4, 6, 8), torch.randn(4, 6, 4)
        loss = trainer.step(x=x, target=target)["loss"]
        adam.zero_grad()
        expected = F.mse_loss(reference(x), target)
        expected.backward()
        adam.step()
        assert loss == pytest.approx(expected.item(), rel=1e-4)
    params = trainer.parameters()
    for name, p in reference.named_parameters():
        np.testing.assert_allclose(params[name], p.detach().numpy(), atol=2e-4, err_msg=name)
