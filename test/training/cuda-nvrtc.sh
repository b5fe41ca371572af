#!/bin/sh
# The MLP's and the GPT-2-style model's training steps (loomc train
# --target cuda, f32 and bf16) as CUDA source; every kernel compiles with
# NVRTC for sm_80 and sm_90 ("N kernels compiled"). Exit 77 without NVRTC.
#   cuda-nvrtc.sh BINDIR
set -eu
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ce="--loss cross_entropy --labels labels --batch 4 --target cuda --emit cuda"
"$bin/loomc" train "$here/mlp.onnx" $ce --logits logits --optimizer sgd \
    --momentum 0.9 --clip-norm 1.0 -o "$tmp/mlp_sgd.cu"
"$bin/loomc" train "$here/mlp.onnx" $ce --logits logits --optimizer adam \
    -o "$tmp/mlp_adam.cu"
"$bin/loomc" train "$here/gpt2.onnx" $ce --logits logits --optimizer adamw \
    --lr 0.003 --lr-schedule cosine --warmup 2 --total-steps 10 \
    -o "$tmp/gpt2_adamw.cu"
"$bin/loomc" train "$here/gpt2.onnx" $ce --logits logits --optimizer adamw \
    --precision bf16 -o "$tmp/gpt2_bf16.cu"
# The GPT-2-style step's optimizer kernel takes its 226 buffers through a
# pointer table (one parameter), not 226 parameters.
grep -q "^LOOM_KERNEL void fusion_[0-9]*(void \*const \*__restrict__ loom_table)" \
    "$tmp/gpt2_adamw.cu" ||
  { echo "no pointer-table kernel in the GPT-2-style step"; exit 1; }
# Data parallel with ZeRO and tensor parallel steps: the collectives are
# steps of the program between the kernels (docs/cuda.md, "Collectives"),
# whose kernels compile as the single-process ones do.
"$bin/loomc" train "$here/mlp.onnx" $ce --logits logits --optimizer adamw \
    --data-parallel 2 --zero 1 -o "$tmp/mlp_dp2z1.cu"
"$bin/loomc" train "$here/gpt2.onnx" $ce --logits logits --optimizer adamw \
    --tensor-parallel 2 -o "$tmp/gpt2_tp2.cu"
"$bin/loom-nvrtc-check" --arch sm_80,sm_90 "$tmp"/*.cu
# A mesh artifact with its cubin (loomc --arch: NVRTC at compile time).
"$bin/loomc" train "$here/mlp.onnx" $ce --logits logits --optimizer adamw \
    --data-parallel 2 --zero 2 --emit artifact --arch sm_90 \
    -o "$tmp/mlp_dp2z2.loom"
