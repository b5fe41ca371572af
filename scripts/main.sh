#!/usr/bin/env bash
# The main job on the CPU default: install dependencies, build Loom, build
# the GPT-2 example with the C++ GraphBuilder and print its verified graph
# IR; then compile the PyTorch-exported GPT-2-style model (ONNX) to a .loom
# artifact, print its memory plan, run it with the runtime, check its
# logits against PyTorch's and time it. Training joins with the training
# issue.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
build/bin/loom-example-gpt2 "$@"

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
