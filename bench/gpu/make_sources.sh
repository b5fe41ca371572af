#!/bin/sh
# On this machine (with the compiler): everything the GPU machine runs,
# into bench/gpu/out/ (under 64 MiB; that machine has no compiler, MLIR or
# protobuf): the CUDA sources the kernel benchmarks time, loom-nvrtc-check,
# loom-run and the runtime with the libraries they need, the executor's
# tests, the conformance and training comparisons (CUDA artifacts, inputs,
# CPU outputs), the GPT-2-style step for the comparison with PyTorch.
#   bench/gpu/make_sources.sh [BUILD_DIR]
# (LOOM_GPU_FILTER=SUBSTR: only the conformance models whose name has it.)
# Needs the build's loomc, loom-run, loom-nvrtc-check, LoomCudaExecutorTests, LoomCollectivesTests
# and /usr/bin/python3 with numpy, onnx and torch.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
out=$here/out
mkdir -p "$out"
cat > "$out/chain.mlir" <<'MLIR'
func.func @chain(%x: tensor<4096x4096xf32>, %y: tensor<4096x4096xf32>) -> tensor<4096x4096xf32> {
  %0 = graph.mul %x, %y : (tensor<4096x4096xf32>, tensor<4096x4096xf32>) -> tensor<4096x4096xf32>
  %1 = graph.tanh %0 : tensor<4096x4096xf32>
  %2 = graph.add %1, %x : (tensor<4096x4096xf32>, tensor<4096x4096xf32>) -> tensor<4096x4096xf32>
  return %2 : tensor<4096x4096xf32>
}
MLIR
cat > "$out/ln.mlir" <<'MLIR'
func.func @ln(%x: tensor<4096x768xf32>, %g: tensor<768xf32>, %b: tensor<768xf32>) -> tensor<4096x768xf32> {
  %0 = graph.layer_norm %x, %g, %b {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<4096x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<4096x768xf32>
  %1 = graph.gelu %0 approximate = tanh : tensor<4096x768xf32>
  %2 = graph.add %1, %x : (tensor<4096x768xf32>, tensor<4096x768xf32>) -> tensor<4096x768xf32>
  return %2 : tensor<4096x768xf32>
}
MLIR
"$build/bin/loomc" compile "$out/chain.mlir" --target cuda --emit cuda -o "$out/chain.cu"
"$build/bin/loomc" compile "$out/ln.mlir" --target cuda --emit cuda -o "$out/ln.cu"
"$build/bin/loomc" train "$here/../../test/training/gpt2.onnx" --loss cross_entropy \
    --logits logits --labels labels --optimizer adamw --batch 4 --target cuda \
    --emit cuda -o "$out/gpt2_step.cu"
cp "$build/bin/loom-nvrtc-check" "$out/"
cp "$here/kernel_bench.py" "$here/run.sh" "$here/lease.sh" "$here/profile_summary.py" "$out/"

# The runtime and its tools, built here (x86-64): loom-run, the executor's
# tests, libloom_runtime.so, and every other library ldd names but glibc's
# (the GPU machine has no protobuf, Gloo, oneDNN, OpenBLAS, ...), packed
# with xz (oneDNN and OpenBLAS alone are 74 MB). libstdc++ and libgcc_s go
# in lib/fallback: run.sh uses them only when the machine's are too old.
root=$(cd "$here/../.." && pwd)
py=/usr/bin/python3
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib/fallback"
cp "$build/bin/loom-run" "$build/bin/LoomCudaExecutorTests" \
   "$build/bin/LoomCollectivesTests" "$stage/bin/"
for f in "$build/bin/loom-run" "$build/bin/LoomCudaExecutorTests" \
         "$build/bin/LoomCollectivesTests"; do ldd "$f"; done |
  awk '$3 ~ /^\// {print $1, $3}' | sort -u | while read -r name path; do
    case "$name" in
      libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*) ;;
      libstdc++.so*|libgcc_s.so*) cp -L "$path" "$stage/lib/fallback/$name" ;;
      *) cp -L "$path" "$stage/lib/$name" ;;
    esac
  done
tar -C "$stage" -cJf "$out/loom.tar.xz" bin lib

# The GPU checks: CUDA artifacts and the CPU backend's outputs made here.
"$py" "$root/test/conformance/cuda-gpu.py" prepare "$build/bin/loomc" \
    "$build/bin/loom-run" "$out/conformance" --jobs "$(nproc)" \
    --filter "${LOOM_GPU_FILTER:-}"
"$py" "$root/test/training/cuda-gpu.py" prepare "$build/bin/loomc" \
    "$build/bin/loom-run" "$out/training"
"$py" "$root/test/runtime/cuda-attention.py" prepare "$build/bin/loomc" \
    "$out/attention"
cp "$root/test/conformance/cuda-gpu.py" "$out/conformance-gpu.py"
cp "$root/test/training/cuda-gpu.py" "$out/training-gpu.py"
cp "$root/test/runtime/cuda-attention.py" "$out/attention-gpu.py"
"$py" "$here/attention_bench.py" prepare "$build/bin/loomc" "$out/attnbench"
cp "$here/attention_bench.py" "$out/"

# The GPT-2-style training step against PyTorch: the benchmark model,
# weights and data of bench/cpu_training (4 layers x 256, 128 tokens,
# batch 8), its CUDA training artifact, and PyTorch's side.
mkdir -p "$out/step"
"$py" "$root/bench/cpu_training/make_training_models.py" "$out/step" > "$out/step/make.log"
# (gpt2.pt stays here: torch_bench.py makes the same seeded weights there.)
rm -f "$out/step/mlp".* "$out/step/gpt2.onnx.data" "$out/step/gpt2.pt"
"$build/bin/loomc" train "$out/step/gpt2.onnx" --loss cross_entropy \
    --logits logits --labels labels --optimizer adamw --lr 1e-4 \
    --weight-decay 0.01 --lr-schedule constant --clip-norm 1.0 --batch 8 \
    --target cuda -o "$out/step/gpt2.cuda.loom"
rm -f "$out/step/gpt2.onnx"
# What only `loomc export` reads (the inference module and the source ONNX,
# 26 MB of the 43 of the step; the whole ONNX of GPT-2 small) does not go
# to the GPU: stripped, the header rewritten.
protoc --python_out="$stage" -I "$root" "$root/common/schema/loom_artifact.proto"
strip_export() {
  PYTHONPATH="$stage" "$py" - "$1" <<'PY'
import struct, sys
from common.schema import loom_artifact_pb2 as pb
path = sys.argv[1]
data = open(path, "rb").read()
(length,) = struct.unpack("<Q", data[12:20])
align = lambda n: (n + 63) // 64 * 64
section = data[align(28 + length):]  # the tensors (format 3), kept as is
a = pb.Artifact()
a.ParseFromString(data[28:28 + length])
a.training.ClearField("inference_module")
a.training.ClearField("source_onnx")
body = a.SerializeToString()
h = 1469598103934665603  # the basis common/Artifact.cpp uses
for b in body:
    h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
pad = b"\0" * (align(28 + len(body)) - 28 - len(body)) if section else b""
open(path, "wb").write(data[:12] + struct.pack("<QQ", len(body), h) + body +
                       pad + section)
PY
}
strip_export "$out/step/gpt2.cuda.loom"
cp "$root/bench/cpu_training/torch_bench.py" \
   "$root/bench/cpu_training/make_training_models.py" \
   "$root/test/models/make_models.py" "$out/step/"

# GPT-2 small (124M) in bf16, the scale section's step: the ONNX of
# bench/scale (made when missing), compiled without its initial values
# (run.sh makes the same seeded weights with PyTorch there;
# LOOM_GPU_SCALE=0 leaves it out).
if [ "${LOOM_GPU_SCALE:-1}" != 0 ]; then
  scale=$root/build/bench/scale
  if [ ! -f "$scale/gpt2_small.onnx" ] || [ ! -f "$scale/gpt2_small.npz" ]; then
    mkdir -p "$scale"
    "$py" "$root/bench/scale/make_gpt2.py" --size small --batch 8 --seq 128 \
      -o "$scale" > "$out/scale.make.log"
  fi
  mkdir -p "$out/scale"
  "$build/bin/loomc" train "$scale/gpt2_small.onnx" --loss cross_entropy \
      --logits logits --labels labels --optimizer adamw --lr 1e-4 \
      --weight-decay 0.01 --lr-schedule constant --clip-norm 1.0 --batch 8 \
      --precision bf16 --target cuda --no-initial-values \
      -o "$out/scale/gpt2_small.cuda.loom"
  strip_export "$out/scale/gpt2_small.cuda.loom"
  cp "$scale/gpt2_small.npz" "$root/bench/scale/make_gpt2.py" "$out/scale/"
  cp "$here/gpt2_weights.py" "$out/"
fi
# The comparisons' files compress well (CUDA sources, zeros): one xz
# archive that run.sh unpacks there (23 MB of conformance files are 1.4).
tar -C "$out" -cJf "$out/data.tar.xz" conformance training attention attnbench $(
  [ -d "$out/scale" ] && echo scale)
rm -rf "$out/conformance" "$out/training" "$out/attention" "$out/attnbench" \
  "$out/scale"
size=$(du -sm "$out" | cut -f1)
echo "bench/gpu/out: $size MiB (the device tool carries at most 64)"
[ "$size" -lt 64 ] || { echo "bench/gpu/out is too large to carry"; exit 1; }
echo "bench/gpu/out ready: carry it to the GPU machine and run sh bench/gpu/out/run.sh there"
