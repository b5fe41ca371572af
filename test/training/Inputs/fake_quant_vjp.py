"""graph.fake_quantize's forward and VJP against PyTorch 1.13.

`model DIR` writes a graph-IR model, y = fq(a, s, z; 0..255) * x +
fq(b, s2, z2; -127..127), with a learned per-tensor (a) and per-channel (b,
along dim 1) fake quantization, its data and the PyTorch reference:
torch._fake_quantize_learnable_per_tensor_affine and
_per_channel_affine (grad_factor 1), whose gradients are LSQ's and the
straight-through estimator's, with F.mse_loss. `check DIR` compares the
loss and every parameter's gradient that `loomc train --gradients` and
loom-run wrote.
"""
import os
import sys

import numpy as np
import torch


def mlir_tensor(a):
    body = np.array2string(a, separator=", ", threshold=10**6,
                           floatmode="unique", max_line_width=10**6)
    return f"dense<{body}> : tensor<{'x'.join(map(str, a.shape))}xf32>"


def values():
    rng = np.random.default_rng(7)
    # Inside and outside both ranges, no value on a rounding tie.
    a = rng.uniform(-2.0, 9.0, size=(6, 5)).astype(np.float32)
    b = rng.uniform(-1.5, 1.5, size=(6, 5)).astype(np.float32)
    s = np.array([0.03], np.float32)
    z = np.array([60.2], np.float32)  # rounds to 60: range [-1.8, 5.85]
    s2 = np.array([[0.01, 0.008, 0.012, 0.02, 0.005]], np.float32)
    z2 = np.zeros((1, 5), np.float32)
    x = rng.normal(size=(6, 5)).astype(np.float32)
    target = rng.normal(size=(6, 5)).astype(np.float32)
    return dict(a=a, b=b, s=s, z=z, s2=s2, z2=z2), x, target


def model(d):
    params, x, target = values()
    args = [f'%x: tensor<6x5xf32> {{graph.input = "x"}}']
    for name, v in params.items():
        shape = "x".join(map(str, v.shape))
        args.append(f'%{name}: tensor<{shape}xf32> {{graph.param = "{name}", '
                    f'graph.initial_value = {mlir_tensor(v)}}}')
    text = f"""func.func @forward({', '.join(args)})
    -> (tensor<6x5xf32> {{graph.output = "y"}}) {{
  %qa = graph.fake_quantize %a, %s, %z {{learned, qmax = 255 : i64, qmin = 0 : i64}} : (tensor<6x5xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<6x5xf32>
  %qb = graph.fake_quantize %b, %s2, %z2 {{learned, qmax = 127 : i64, qmin = -127 : i64}} : (tensor<6x5xf32>, tensor<1x5xf32>, tensor<1x5xf32>) -> tensor<6x5xf32>
  %m = graph.mul %qa, %x : (tensor<6x5xf32>, tensor<6x5xf32>) -> tensor<6x5xf32>
  %y = graph.add %m, %qb : (tensor<6x5xf32>, tensor<6x5xf32>) -> tensor<6x5xf32>
  return %y : tensor<6x5xf32>
}}
"""
    with open(os.path.join(d, "fq.mlir"), "w") as f:
        f.write(text)
    np.save(os.path.join(d, "x.npy"), x)
    np.save(os.path.join(d, "target.npy"), target)

    t = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    qa = torch._fake_quantize_learnable_per_tensor_affine(
        t["a"], t["s"], t["z"], 0, 255, 1.0)
    qb = torch._fake_quantize_learnable_per_channel_affine(
        t["b"], t["s2"].reshape(5), t["z2"].reshape(5), 1, -127, 127, 1.0)
    y = qa * torch.tensor(x) + qb
    loss = torch.nn.functional.mse_loss(y, torch.tensor(target))
    loss.backward()
    ref = {"loss": loss.detach().numpy()}
    for k, v in t.items():
        ref["grad/" + k] = v.grad.numpy().reshape(params[k].shape)
    inside = ((np.round(params["a"] / 0.03) + 60 >= 0)
              & (np.round(params["a"] / 0.03) + 60 <= 255))
    ref["inside_a"] = inside
    np.savez(os.path.join(d, "ref.npz"), **ref)


def check(d):
    ref = np.load(os.path.join(d, "ref.npz"))
    out = os.path.join(d, "grads")
    inside = ref["inside_a"]
    print(f"a: {inside.sum()} of {inside.size} inside the range")
    bad = []
    loss = np.load(os.path.join(out, "loss.npy"))
    if not np.allclose(loss, ref["loss"], rtol=1e-5, atol=1e-7):
        bad.append(f"loss {loss} vs {ref['loss']}")
    for key in ref.files:
        if not key.startswith("grad/"):
            continue
        name = key[5:]
        got = np.load(os.path.join(out, name + ".grad.npy"))
        want = ref[key]
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-4,
                                                      atol=1e-6):
            bad.append(f"{name}.grad {got.ravel()[:6]} vs {want.ravel()[:6]}")
        else:
            print(f"{name}.grad matches PyTorch (max |diff| "
                  f"{np.abs(got - want).max():.1e})")
    print("\n".join(bad) if bad else "fake_quantize VJP: ok")


if __name__ == "__main__":
    {"model": lambda: model(sys.argv[2]),
     "check": lambda: check(sys.argv[2])}[sys.argv[1]]()
