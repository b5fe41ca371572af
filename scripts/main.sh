#!/usr/bin/env bash
# The main job on the CPU default: install dependencies, build Loom, build
# the GPT-2 example with the C++ GraphBuilder, verify its graph IR and print
# a summary of it (inputs, outputs, op counts, parameters; the example
# without --summary prints the whole IR); compile the PyTorch-exported
# GPT-2-style model (ONNX) to a .loom artifact, print its memory plan, run
# it with the runtime, check its logits against PyTorch's and time it. Then
# train a small GPT-style character model from scratch on a text that ships
# with Debian (the GPL), printing its falling loss, export the trained model
# to ONNX, compile it for inference and sample text from it with a program
# that embeds the runtime (docs/training.md, "Train a character model").
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
echo "== loom-example-gpt2: the GraphBuilder's GPT-2, summarized"
build/bin/loom-example-gpt2 --summary "$@"

out=build/main
mkdir -p "$out"
echo "== loomc compile test/models/gpt2.onnx"
build/bin/loomc compile test/models/gpt2.onnx -o "$out/gpt2.loom" \
  --print-memory-plan
echo "== loom-run: logits against PyTorch's"
build/bin/loom-run "$out/gpt2.loom" --in input_ids=test/models/gpt2.input_0.npy \
  --out-dir "$out" --bench 20
/usr/bin/python3 test/tools/npy_allclose.py "$out/output.npy" \
  test/models/gpt2.output_0.npy

# The character model: 2 blocks, width 64, 4 heads, a context of 64
# characters (byte values, vocabulary 128), 32 sequences a batch. One
# thread: its kernels are too small to gain much from a second one, and a
# second thread waits at every kernel's end whenever another process holds
# a core.
text=/usr/share/common-licenses/GPL-3
echo "== character model: the GraphBuilder's GPT-2 with initial values"
build/bin/loom-example-gpt2 --layers 2 --embed 64 --heads 4 --vocab 128 \
  --seq 64 --batch 32 --no-loss --init 1 > "$out/char.mlir"
/usr/bin/python3 examples/charlm/text_to_npz.py "$text" "$out/text.npz" \
  --seq 64 --stride 2
echo "== loomc train: cross entropy, AdamW, warmup + cosine, clipping"
build/bin/loomc train "$out/char.mlir" --loss cross_entropy --logits logits \
  --labels labels --optimizer adamw --lr 3e-3 --warmup 50 --lr-schedule cosine \
  --clip-norm 1.0 -o "$out/char.loom"
echo "== loom-run: train 1000 steps"
build/bin/loom-run "$out/char.loom" --data "$out/text.npz" --steps 1000 \
  --batch 32 --log-every 50 --threads 1 --save "$out/char.loomckpt"
echo "== loomc export the trained model, compile it for inference"
build/bin/loomc export "$out/char.loom" --checkpoint "$out/char.loomckpt" \
  -o "$out/char.onnx"
build/bin/loomc compile "$out/char.onnx" -o "$out/char-infer.loom"
echo "== sample 300 characters"
build/bin/loom-example-charlm "$out/char-infer.loom" --prompt "This License" \
  --chars 300 --seed 1 --threads 1
