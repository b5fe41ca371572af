#!/bin/sh
# On the GPU machine, in bench/gpu/out/ (made by make_sources.sh): every
# GPU figure in one command. Prints ratios; docs/performance.md records them.
set -eu
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
# Fused elementwise chain (mul, tanh, add over 4096x4096 f32): 3 tensors
# of 64 MiB moved, against a device-to-device copy in the same run.
python3 kernel_bench.py chain chain.cu $((4096 * 4096 * 4))
# LayerNorm + GELU + residual, 4096x768 f32, against PyTorch eager and
# torch.compile.
python3 kernel_bench.py ln ln.cu $((4096 * 768 * 4))
# NVRTC: compile time per kernel of the GPT-2-style training step, then
# the cache: a cold compile and a warm (cache-hit) load of every kernel.
python3 kernel_bench.py nvrtc gpt2_step.cu
rm -rf cache
./loom-nvrtc-check --cache cache --arch sm_90 gpt2_step.cu
./loom-nvrtc-check --cache cache --arch sm_90 gpt2_step.cu
