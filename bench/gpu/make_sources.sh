#!/bin/sh
# On this machine (with the compiler): the CUDA sources the GPU benchmark
# times, and a loom-nvrtc-check to carry. bench/gpu/out/ goes to the GPU.
#   bench/gpu/make_sources.sh [BUILD_DIR]
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
cp "$here/kernel_bench.py" "$here/run.sh" "$out/"
echo "bench/gpu/out ready: carry it to the GPU machine and run ./run.sh there"
