"""The Python API (python/loom): compile from every kind of model, run on
NumPy arrays and torch tensors, train, save, load and export, and the errors
a user meets. CTest runs this file with pytest (python-api); the end-to-end
GPT-style flow against PyTorch is python/examples/quickstart.py
(python-quickstart)."""

import os

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import loom

MODELS = os.path.join(os.path.dirname(__file__), "..", "..", "test", "models")
MLP = os.path.join(MODELS, "mlp.onnx")


class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.norm = nn.LayerNorm(16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(F.gelu(self.norm(self.fc1(x))))


@pytest.fixture(scope="module")
def mlp():
    return loom.compile(MLP)


@pytest.fixture(scope="module")
def trained():
    torch.manual_seed(1)
    model = TwoLayer()
    x = torch.randn(6, 8)
    art = loom.compile(model, example_inputs=(x,), input_names=["x"], output_names=["y"],
                       loss="mse", logits="y", labels="target", optimizer="sgd", lr=0.1)
    return model, art


def test_session_matches_the_reference_outputs(mlp):
    session = loom.Session(mlp, threads=1)
    x = np.load(os.path.join(MODELS, "mlp.input_0.npy"))
    out = session.run({"x": x})
    assert list(out) == ["output"]
    np.testing.assert_allclose(out["output"], np.load(os.path.join(MODELS, "mlp.output_0.npy")),
                               rtol=1e-5, atol=1e-5)
    # Positional and keyword spellings give the same.
    np.testing.assert_array_equal(session.run([x])["output"], out["output"])
    np.testing.assert_array_equal(session.run(x=x)["output"], out["output"])


def test_signature(mlp):
    session = loom.Session(mlp)
    (x,) = session.inputs
    assert (x.name, x.dtype, x.numpy_dtype) == ("x", "f32", "float32")
    assert x.shape == [None, 16] and x.dim_names[0] == "batch"
    assert session.device == "cpu" and not session.is_training


def test_torch_in_torch_out(mlp):
    session = loom.Session(mlp)
    x = torch.randn(3, 16, requires_grad=True)
    y = session.run({"x": x})["output"]
    assert isinstance(y, torch.Tensor) and y.shape == (3, 10)
    np.testing.assert_array_equal(y.numpy(), session.run({"x": x.detach().numpy()})["output"])


def test_inputs_convert_within_their_kind(mlp):
    session = loom.Session(mlp)
    x = np.random.rand(2, 16)  # float64 -> f32
    np.testing.assert_allclose(session.run({"x": x})["output"],
                               session.run({"x": x.astype(np.float32)})["output"])
    np.testing.assert_allclose(session.run({"x": np.asfortranarray(x)})["output"],
                               session.run({"x": x})["output"])
    with pytest.raises(TypeError, match="input 'x': complex128 does not convert to f32"):
        session.run({"x": x.astype(np.complex128)})


def test_bad_inputs_name_what_is_wrong(mlp):
    session = loom.Session(mlp)
    with pytest.raises(KeyError, match="missing input"):
        session.run({})
    with pytest.raises(KeyError, match=r"unknown input\(s\) \['y'\]"):
        session.run({"x": np.zeros((1, 16), np.float32), "y": 1})
    with pytest.raises(loom.LoomError, match="x"):
        session.run({"x": np.zeros((1, 15), np.float32)})


def test_compile_from_bytes_and_save_load(mlp, tmp_path):
    with open(MLP, "rb") as f:
        art = loom.compile(f.read())
    path = tmp_path / "mlp.loom"
    art.save(path)
    again = loom.Artifact.load(path)
    x = np.load(os.path.join(MODELS, "mlp.input_0.npy"))
    np.testing.assert_array_equal(loom.Session(again).run({"x": x})["output"],
                                  loom.Session(mlp).run({"x": x})["output"])
    assert loom.Session(str(path)).inputs[0].name == "x"


def test_compile_options_are_loomcs(tmp_path):
    names = {o[0] for o in loom.options("train")}
    assert {"lr", "clip_norm", "memory_budget", "precision", "batch"} <= names
    assert "lr" not in {o[0] for o in loom.options("compile")}
    art = loom.compile(MLP, batch=4, output=tmp_path / "b4.loom")
    assert os.path.exists(tmp_path / "b4.loom")
    assert loom.Session(art).inputs[0].shape == [4, 16]
    with pytest.raises(TypeError, match="no option 'learning_rate'"):
        loom.compile(MLP, learning_rate=0.1)


def test_compiler_errors_raise_with_the_diagnostics(tmp_path):
    with pytest.raises(loom.LoomError, match="compile failed"):
        loom.compile(b"this is not an ONNX model")
    with pytest.raises(loom.LoomError, match="--lr takes a number"):
        loom.compile(MLP, loss="mse", lr="fast")
    with pytest.raises(FileNotFoundError):
        loom.compile(tmp_path / "missing.onnx")
    with pytest.raises(TypeError, match="needs example_inputs"):
        loom.compile(TwoLayer())
    bad = tmp_path / "bad.loom"
    bad.write_bytes(b"LOOM but not really")
    with pytest.raises(loom.LoomError):
        loom.Session(bad)


def test_trainer_follows_pytorch(trained, tmp_path):
    model, art = trained
    reference = TwoLayer()
    reference.load_state_dict(model.state_dict())
    sgd = torch.optim.SGD(reference.parameters(), lr=0.1)
    trainer = loom.Trainer(art)
    assert [i.name for i in trainer.batch_inputs] == ["x", "target"]
    assert {n for n, k in trainer.state_names() if k == "param"} == {
        n for n, _ in model.named_parameters()}
    for _ in range(3):
        x, target = torch.randn(6, 8), torch.randn(6, 4)
        metrics = trainer.step(x=x, target=target)
        sgd.zero_grad()
        loss = F.mse_loss(reference(x), target)
        loss.backward()
        sgd.step()
        assert metrics["loss"] == pytest.approx(loss.item(), rel=1e-5)
        assert metrics["applied"] and not metrics["nonfinite"]
    for name, p in reference.named_parameters():
        np.testing.assert_allclose(trainer.state(name), p.detach().numpy(), atol=1e-5)

    # A checkpoint restores the state into a fresh trainer.
    trainer.save(tmp_path / "run.loomckpt")
    fresh = loom.Trainer(art)
    fresh.load(tmp_path / "run.loomckpt")
    assert fresh.micro_step == 3
    np.testing.assert_array_equal(fresh.state("fc1.weight"), trainer.state("fc1.weight"))

    # The export runs with the trained parameters.
    trainer.export(tmp_path / "trained.onnx")
    x = torch.randn(6, 8)
    y = loom.Session(loom.compile(tmp_path / "trained.onnx")).run({"x": x})["y"]
    np.testing.assert_allclose(y.numpy(), reference(x).detach().numpy(), atol=1e-5)


def test_set_state_and_its_errors(trained):
    _, art = trained
    trainer = loom.Trainer(art)
    trainer.set_state("fc2.bias", np.ones(4, np.float32))
    np.testing.assert_array_equal(trainer.parameters()["fc2.bias"], np.ones(4, np.float32))
    with pytest.raises(KeyError):
        trainer.state("no.such.tensor")
    with pytest.raises(loom.LoomError, match="fc2.bias"):
        trainer.set_state("fc2.bias", np.ones(5, np.float32))


def test_trainer_refuses_an_inference_artifact(mlp):
    with pytest.raises(loom.LoomError, match="inference artifact"):
        loom.Trainer(mlp)


def test_cosine_schedule_needs_a_horizon():
    model = TwoLayer()
    art = loom.compile(model, example_inputs=(torch.randn(2, 8),), input_names=["x"],
                       output_names=["y"], loss="mse", logits="y", labels="t",
                       lr_schedule="cosine")
    trainer = loom.Trainer(art)
    with pytest.raises(loom.LoomError, match="total_steps=N"):
        trainer.step(x=np.zeros((2, 8), np.float32), t=np.zeros((2, 4), np.float32))
    trainer.total_steps = 10
    assert trainer.step(x=np.zeros((2, 8), np.float32), t=np.zeros((2, 4), np.float32))["lr"] > 0
