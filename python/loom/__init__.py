"""Loom for Python: compile a model with Loom's compiler and run or train it
with Loom's runtime, in this process.

    import loom
    art = loom.compile(module, example_inputs=(x,), input_names=["x"])
    y = loom.Session(art).run({"x": x})

`compile` takes a `torch.nn.Module` (exported through `torch.onnx.export`),
an ONNX file or its bytes, or graph IR, and the options of `loomc compile`
or `loomc train` as keyword arguments (`loom.options("train")` lists them).
`Session` runs an artifact on NumPy arrays or torch tensors; `Trainer` runs
a training artifact's steps, saves and loads checkpoints (the same files as
`loom-run --save/--resume`) and exports the trained model to ONNX.
Errors raise `LoomError` with the compiler's or the runtime's message.
docs/python.md has the whole API.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Union

import numpy as np

from . import _loom
from ._loom import LoomError

__all__ = ["Artifact", "LoomError", "Session", "TensorInfo", "Trainer", "compile", "options"]

PathLike = Union[str, "os.PathLike[str]"]


class TensorInfo(NamedTuple):
    """One input or output of an artifact. `shape` has None for a dynamic
    dim, named in `dim_names`; `dtype` is Loom's name ("f32", "i64", "bf16"),
    `numpy_dtype` NumPy's (bf16 travels as its bits in uint16)."""

    name: str
    dtype: str
    numpy_dtype: str
    shape: List[Optional[int]]
    dim_names: List[str]


def _infos(described: Iterable[dict]) -> List[TensorInfo]:
    return [TensorInfo(**d) for d in described]


class Artifact:
    """A compiled `.loom` file: an inference model or a training step.

    `compile` makes one in a temporary folder that lives as long as the
    object (or at `output=` when given); `Artifact.load` opens one from
    disk; `save` copies it. `source` is the ONNX file the model came from
    when there is one."""

    def __init__(self, path: PathLike, *, source: Optional[str] = None, _owner: Any = None):
        self.path = os.fspath(path)
        self.source = source
        self._owner = _owner  # keeps a temporary folder alive

    @classmethod
    def load(cls, path: PathLike) -> "Artifact":
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no artifact at {path}")
        return cls(path)

    def save(self, path: PathLike) -> "Artifact":
        """Copies the artifact to `path` and returns the copy."""
        shutil.copyfile(self.path, os.fspath(path))
        return Artifact(path, source=self.source)

    @property
    def is_training(self) -> bool:
        return Session(self, device="cpu", threads=1).is_training

    def __repr__(self) -> str:
        return f"loom.Artifact({self.path!r})"


def options(command: str = "compile", hidden: bool = False) -> List[tuple]:
    """The keyword arguments `compile` takes for `loomc COMMAND` ("compile"
    or "train"), as (name, value, help, category) tuples; the same table as
    `loomc COMMAND --help`."""
    return [
        (name.replace("-", "_"), value, help_, category)
        for name, value, help_, category, is_hidden, _ in _loom.command_options(command)
        if hidden or not is_hidden
    ]


def _option_table(command: str) -> Dict[str, tuple]:
    return {t[0]: t for t in _loom.command_options(command)}


def _option_values(name: str, value: Any, repeats: bool, tmp: str) -> List[str]:
    """One keyword argument as the option texts loomc would get."""
    if isinstance(value, bool):
        return ["true" if value else "false"]
    if repeats:
        if isinstance(value, Mapping):
            texts = []
            for key, v in value.items():
                if name == "bind" and not isinstance(v, (str, os.PathLike)):
                    file = os.path.join(tmp, f"bind_{len(os.listdir(tmp))}.npy")
                    np.save(file, _as_numpy(v))
                    v = file
                texts.append(f"{key}={os.fspath(v) if isinstance(v, os.PathLike) else v}")
            return texts
        if isinstance(value, (list, tuple)):
            return [str(v) for v in value]
        return [str(value)]
    if isinstance(value, (list, tuple)):
        return [",".join(str(v) for v in value)]
    if isinstance(value, os.PathLike):
        return [os.fspath(value)]
    return [str(value)]


@contextlib.contextmanager
def _initializers_by_identity():
    """torch.onnx.export in eval mode merges initializers of equal values
    (every fresh LayerNorm's ones and zeros): a training step would then tie
    parameters the module does not tie. During the export, only the same
    tensor is merged (what the exporter does for a module in training mode)."""
    import torch

    original = getattr(torch._C, "_jit_pass_onnx_deduplicate_initializers", None)
    if original is None:
        yield
        return

    def by_identity(graph, params, is_train):
        return original(graph, params, True)

    torch._C._jit_pass_onnx_deduplicate_initializers = by_identity
    try:
        yield
    finally:
        torch._C._jit_pass_onnx_deduplicate_initializers = original


def _export_module(module: Any, example_inputs: Any, path: str, training: bool,
                   input_names, output_names, dynamic_axes, opset: int) -> None:
    import torch

    if example_inputs is None:
        raise TypeError("compiling a torch.nn.Module needs example_inputs (a tensor or a tuple of them)")
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    if not training:
        torch.onnx.export(module, tuple(example_inputs), path, input_names=input_names,
                          output_names=output_names, dynamic_axes=dynamic_axes,
                          opset_version=opset)
        return
    # A training step keeps every parameter as its own initializer under
    # its own name (no folding of weight transposes into new initializers,
    # no merging of equal values): the trained state is named as
    # module.named_parameters() names it.
    with _initializers_by_identity():
        torch.onnx.export(module, tuple(example_inputs), path, input_names=input_names,
                          output_names=output_names, dynamic_axes=dynamic_axes,
                          opset_version=opset, do_constant_folding=False)
    import onnx

    names = {t.name for t in onnx.load(path, load_external_data=False).graph.initializer}
    missing = [n for n, p in module.named_parameters() if p.requires_grad and n not in names]
    if missing:
        raise LoomError(f"torch.onnx.export did not keep these parameters as initializers of "
                        f"their own, so they cannot be trained by name: {missing}")


def compile(model: Any, *, example_inputs: Any = None, input_names: Optional[Sequence[str]] = None,
            output_names: Optional[Sequence[str]] = None, dynamic_axes: Optional[dict] = None,
            opset: int = 14, target: str = "cpu", precision: Optional[str] = None,
            output: Optional[PathLike] = None, **options: Any) -> Artifact:
    """Compiles `model` into an `Artifact`.

    `model` is a `torch.nn.Module` (with `example_inputs`, exported by
    `torch.onnx.export` with `input_names`, `output_names`, `dynamic_axes`
    and `opset`), the path of an ONNX file (`.onnx`, `.onnxtext`) or of
    graph IR (`.mlir`), or ONNX bytes.

    The other keyword arguments are the options of `loomc compile` and
    `loomc train` with `_` for `-` (`clip_norm=1.0`, `memory_budget="2GiB"`,
    `dim={"seq": 128}`, `bind={"mask": array}`); `loom.options("train")`
    lists them. An option only `loomc train` takes (`loss`, `optimizer`,
    `lr`, `precision`, ...) makes the artifact a training step for
    `Trainer`; without one it is an inference model for `Session`.
    `output` keeps the artifact at that path instead of a temporary folder.
    """
    compile_opts = _option_table("compile")
    train_opts = _option_table("train")
    if precision is not None:
        options["precision"] = precision
    training = any(k.replace("_", "-") not in compile_opts for k in options)
    table = train_opts if training else compile_opts
    command = "train" if training else "compile"
    for key in options:
        if key.replace("_", "-") not in table:
            raise TypeError(f"loom.compile: no option {key!r} (loom.options('compile') and "
                            f"loom.options('train') list them)")

    tmp = tempfile.TemporaryDirectory(prefix="loom-")
    source: Optional[str] = None
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no model at {path}")
        if path.endswith((".onnx", ".onnxtext")):
            source = path
    elif isinstance(model, (bytes, bytearray, memoryview)):
        path = os.path.join(tmp.name, "model.onnx")
        with open(path, "wb") as f:
            f.write(bytes(model))
        source = path
    elif hasattr(model, "named_parameters") and callable(model):
        path = os.path.join(tmp.name, "model.onnx")
        _export_module(model, example_inputs, path, training, input_names, output_names,
                       dynamic_axes, opset)
        source = path
        if training:
            # The export makes buffers initializers as well: they, and the
            # parameters that do not require gradients, stay fixed.
            fixed = [n for n, _ in model.named_buffers()]
            fixed += [n for n, p in model.named_parameters() if not p.requires_grad]
            if fixed:
                exact = "^(" + "|".join(n.replace(".", "\\.") for n in fixed) + ")$"
                given = options.get("freeze")
                options["freeze"] = f"({given})|{exact}" if given else exact
    else:
        raise TypeError(f"loom.compile: model must be a torch.nn.Module, a path or ONNX bytes, "
                        f"not {type(model).__name__}")

    if training and options.get("lr_schedule", "constant") == "constant":
        # A constant rate needs no horizon: the artifact gets one, so that
        # the trainer needs none either.
        options.setdefault("total_steps", 1)
    out = os.fspath(output) if output is not None else os.path.join(tmp.name, "model.loom")
    pairs = [("input", path), ("o", out), ("target", target)]
    for key, value in options.items():
        name = key.replace("_", "-")
        if value is None:
            continue
        for text in _option_values(name, value, table[name][5], tmp.name):
            pairs.append((name, text))
    warnings = _loom.run_command(command, pairs)
    if warnings:
        import warnings as _warnings

        _warnings.warn(warnings.strip(), stacklevel=2)
    return Artifact(out, source=source, _owner=tmp if output is None else None)


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


def _as_numpy(x: Any) -> np.ndarray:
    if isinstance(x, np.ndarray):
        return x
    if _is_torch(x):
        # DLPack: a view of the tensor's memory, not a copy.
        x = x.detach()
        if x.device.type != "cpu":
            x = x.cpu()
        return np.from_dlpack(x)
    return np.asarray(x)


def _prepare(value: Any, info: TensorInfo) -> np.ndarray:
    a = _as_numpy(value)
    target = np.dtype(info.numpy_dtype)
    if a.dtype != target:
        if not np.can_cast(a.dtype, target, "same_kind"):
            raise TypeError(f"input {info.name!r}: {a.dtype} does not convert to {info.dtype} "
                            f"({target}) without changing its kind")
        a = a.astype(target)
    return np.ascontiguousarray(a)


def _gather(infos: List[TensorInfo], inputs: Any, kwargs: Dict[str, Any], what: str) -> tuple:
    """The arrays in signature order from a mapping, a sequence or keywords;
    and whether any was a torch tensor."""
    if inputs is None:
        inputs = {}
    if isinstance(inputs, Mapping):
        given = dict(inputs, **kwargs)
        unknown = set(given) - {i.name for i in infos}
        if unknown:
            raise KeyError(f"{what}: unknown input(s) {sorted(unknown)}; it takes "
                           f"{[i.name for i in infos]}")
        missing = [i.name for i in infos if i.name not in given]
        if missing:
            raise KeyError(f"{what}: missing input(s) {missing}")
        values = [given[i.name] for i in infos]
    else:
        values = list(inputs)
        if kwargs or len(values) != len(infos):
            raise TypeError(f"{what}: takes {len(infos)} inputs {[i.name for i in infos]}, "
                            f"got {len(values)}")
    torch_in = any(_is_torch(v) for v in values)
    return [_prepare(v, i) for v, i in zip(values, infos)], torch_in


def _artifact_path(artifact: Union[Artifact, PathLike]) -> str:
    return artifact.path if isinstance(artifact, Artifact) else os.fspath(artifact)


class Session:
    """Runs an artifact. `device`: "auto" (the GPU when the artifact has CUDA
    code and one answers, else the CPU), "cpu", "cuda" or "cuda-sim" (the
    CUDA program executed on the host: a check, not a way to run models).
    `threads`: CPU threads (0: one per core). One session may run on many
    threads at once."""

    def __init__(self, artifact: Union[Artifact, PathLike], device: str = "auto", threads: int = 0,
                 device_ordinal: int = 0):
        self.artifact = artifact if isinstance(artifact, Artifact) else Artifact.load(artifact)
        self._native = _loom.Session(self.artifact.path, device, threads, device_ordinal)
        self.inputs = _infos(self._native.inputs)
        self.outputs = _infos(self._native.outputs)

    @property
    def device(self) -> str:
        return self._native.device

    @property
    def device_description(self) -> str:
        return self._native.device_description

    @property
    def is_training(self) -> bool:
        return self._native.is_training

    def memory(self) -> Dict[str, int]:
        """Weight and scratch bytes the session holds."""
        return self._native.memory()

    def run(self, inputs: Any = None, **kwargs: Any) -> Dict[str, Any]:
        """Runs the model on `inputs` (a mapping by name, a sequence in
        signature order, or keywords): NumPy arrays, anything
        `numpy.asarray` takes, or torch tensors (read through DLPack, not
        copied). Returns the outputs by name: NumPy arrays over the
        runtime's memory, or torch tensors when an input was one."""
        arrays, torch_in = _gather(self.inputs, inputs, kwargs, "run")
        outs = self._native.run(arrays)
        if torch_in:
            import torch

            outs = [torch.from_dlpack(o) if o.dtype != np.bool_ else torch.from_numpy(o)
                    for o in outs]
        return {info.name: o for info, o in zip(self.outputs, outs)}


class Trainer:
    """Trains a training artifact (`compile` with a loss or an optimizer):
    one `step` per batch, with the state (parameters and optimizer slots)
    held by the runtime between steps. `total_steps` sets the learning-rate
    schedule's horizon when the artifact has none."""

    def __init__(self, artifact: Union[Artifact, PathLike], device: str = "auto", threads: int = 0,
                 total_steps: Optional[int] = None):
        self.session = Session(artifact, device=device, threads=threads)
        if not self.session.is_training:
            raise LoomError(f"{self.session.artifact.path} is an inference artifact: compile with "
                            f"a loss or an optimizer (loom.compile(..., loss='cross_entropy')) to "
                            f"train")
        self._native = _loom.Trainer(self.session._native)
        self.batch_inputs = _infos(self._native.batch_inputs)
        if total_steps is not None:
            self._native.total_steps = total_steps

    @property
    def labels(self) -> str:
        return self._native.labels

    @property
    def description(self) -> str:
        return self._native.description

    @property
    def micro_step(self) -> int:
        return self._native.micro_step

    @property
    def total_steps(self) -> int:
        return self._native.total_steps

    @total_steps.setter
    def total_steps(self, steps: int) -> None:
        self._native.total_steps = steps

    def step(self, batch: Any = None, **kwargs: Any) -> Dict[str, Any]:
        """Runs one (micro-)batch: the model's inputs and the labels by name.
        Returns loss, grad_norm, lr, micro_step, optimizer_step, applied,
        nonfinite (the update was skipped) and loss_scale."""
        arrays, _ = _gather(self.batch_inputs, batch, kwargs, "step")
        try:
            return self._native.step(arrays)
        except LoomError as e:
            if self.total_steps == 0 and "horizon" in str(e):
                raise LoomError(f"{e}: give the schedule's horizon as loom.Trainer(..., "
                                f"total_steps=N) or loom.compile(..., total_steps=N)") from None
            raise

    def state_names(self) -> List[tuple]:
        """(name, kind) of each state tensor; kind is "param", "exp_avg", ..."""
        return [tuple(t) for t in self._native.state_names]

    def state(self, name: str) -> np.ndarray:
        """A copy of state tensor `name`."""
        return self._native.state(name)

    def parameters(self) -> Dict[str, np.ndarray]:
        """Copies of the trained parameters by name."""
        return {n: self._native.state(n) for n, kind in self._native.state_names if kind == "param"}

    def set_state(self, name: str, value: Any) -> None:
        """Sets state tensor `name` (a parameter's starting value, say)."""
        self._native.set_state(name, np.ascontiguousarray(_as_numpy(value)))

    def save(self, path: PathLike) -> None:
        """Writes a checkpoint (atomically), as `loom-run --save` does."""
        self._native.save(os.fspath(path))

    def load(self, path: PathLike) -> None:
        """Restores a checkpoint of this model: state, step counter, horizon."""
        self._native.load(os.fspath(path))

    def export(self, path: PathLike, func: Optional[str] = None) -> None:
        """Writes the trained model as ONNX (`loomc export` of the artifact
        with this trainer's state)."""
        with tempfile.TemporaryDirectory(prefix="loom-") as tmp:
            checkpoint = os.path.join(tmp, "state.loomckpt")
            self.save(checkpoint)
            pairs = [("input", self.session.artifact.path), ("checkpoint", checkpoint),
                     ("o", os.fspath(path))]
            if func:
                pairs.append(("func", func))
            _loom.run_command("export", pairs)
