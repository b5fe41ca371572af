#!/usr/bin/env bash
# CPU inference latency, Loom against ONNX Runtime in the same run: the MLP
# (1024-4096-4096-1024) at batch 1 and 64, the GPT-2-style and
# ResNet-style models of test/models, and, when PyTorch is installed
# (apt-get install python3-torch), larger ones made from the same classes
# (make_torch_models.py: GPT-2-style 4 layers x 256 wide, 128 tokens;
# ResNet-style at 64x64, batch 8). Each case runs ROUNDS times, Loom and
# ORT interleaved, RUNS timed runs each; the figure is the median of the
# rounds' medians. Prints one line per case with the Loom / ORT ratio.
#
# usage: bench/cpu_inference/run.sh [--threads T] [--rounds R] [--runs N]
#                                   [--cases REGEX]  (only the matching cases)
# needs: build/ (scripts/build.sh), onnxruntime-node (scripts/install-ort.sh)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
threads=1; rounds=3; runs=20; cases=.
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --cases) cases=$2; shift 2 ;;
    *) echo "usage: $0 [--threads T] [--rounds R] [--runs N] [--cases REGEX]"
       exit 2 ;;
  esac
done
out="$root/build/bench/cpu_inference"
bin="$root/build/bin"
mkdir -p "$out"
/usr/bin/python3 "$root/bench/cpu_inference/make_models.py" "$out"
models="mlp gpt2 resnet"
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
  /usr/bin/python3 "$root/bench/cpu_inference/make_torch_models.py" "$out"
  models="$models gpt2_large resnet_large resnet18"
else
  echo "(PyTorch not installed: the larger GPT-2 and ResNet cases are skipped)"
fi
for m in $models; do
  "$bin/loomc" compile "$out/$m.onnx" -o "$out/$m.loom"
done

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
field() { sed -n 's/.*median \([0-9.]*\) ms.*/\1/p'; }

printf '%-16s %8s %12s %12s %8s\n' case threads "loom ms" "ort ms" "loom/ort"
bench_case() {  # name model inputs...
  local name=$1 model=$2; shift 2
  [[ $name =~ $cases ]] || return 0
  local loom_in=() ort_in=() l=() o=()
  for kv in "$@"; do loom_in+=(--in "$kv"); ort_in+=(--in "$kv"); done
  for ((r = 0; r < rounds; ++r)); do
    l+=("$("$bin/loom-run" "$out/$model.loom" "${loom_in[@]}" \
            --threads "$threads" --bench "$runs" --warmup 3 | field)")
    o+=("$(node "$root/bench/cpu_inference/ort_bench.js" "$out/$model.onnx" \
            "${ort_in[@]}" --threads "$threads" --runs "$runs" | field)")
  done
  local lm om
  lm=$(printf '%s\n' "${l[@]}" | median)
  om=$(printf '%s\n' "${o[@]}" | median)
  awk -v n="$name" -v t="$threads" -v a="$lm" -v b="$om" \
    'BEGIN { printf "%-16s %8s %12.3f %12.3f %8.2f\n", n, t, a, b, a / b }'
}
bench_case mlp-batch1 mlp "x=$out/mlp_b1.npy"
bench_case mlp-batch64 mlp "x=$out/mlp_b64.npy"
bench_case gpt2 gpt2 "input_ids=$out/gpt2_in.npy"
bench_case resnet resnet "x=$out/resnet_in.npy"
if [ -f "$out/gpt2_large.loom" ]; then
  bench_case gpt2-large gpt2_large "input_ids=$out/gpt2_large_in.npy"
  bench_case resnet-large resnet_large "x=$out/resnet_large_in.npy"
  bench_case resnet18-224 resnet18 "x=$out/resnet18_in.npy"
fi
