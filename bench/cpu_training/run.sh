#!/usr/bin/env bash
# CPU training step time, Loom against PyTorch eager in the same run: an MLP
# (784-1024-1024-10, batch 64) and the GPT-2-style model of test/models
# (4 layers x 256 wide, 4 heads, 128 tokens, vocab 512, batch 8), both
# trained with cross-entropy, AdamW (lr 1e-4, weight decay 0.01), clipping
# at global norm 1.0 and a constant learning rate, from the same initial
# weights on the same data (make_training_models.py). Loom: `loomc train`,
# then `loom-run --data --steps N --batch B --threads T`; PyTorch:
# torch_bench.py with torch.set_num_threads(T); OpenBLAS (used by both) gets
# T threads too, and PyTorch's OpenMP threads wait passively (spinning, they
# starve OpenBLAS's threads: PyTorch's better configuration here). Each
# case runs ROUNDS times, Loom and PyTorch interleaved; a run's figure is
# its median step time after 2 warm-up steps, the case's the median of the
# rounds'. Prints one line per case with the Loom / PyTorch ratio (below 1:
# Loom is faster), and warns when the two sides' mean losses differ (they
# should train the same model).
#
# usage: bench/cpu_training/run.sh [--threads T] [--rounds R] [--steps N]
# needs: build/ (scripts/build.sh), python3-torch and python3-onnx
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
threads=1; rounds=3; steps=20; warmup=2
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    *) echo "usage: $0 [--threads T] [--rounds R] [--steps N]"; exit 2 ;;
  esac
done
if [ "$steps" -le "$warmup" ]; then
  echo "$0: --steps must be more than the $warmup warm-up steps"; exit 2
fi
py=/usr/bin/python3
if ! $py -c "import torch, onnx" 2>/dev/null; then
  echo "$0: needs PyTorch and ONNX for $py (apt-get install python3-torch python3-onnx)"
  exit 1
fi
here="$root/bench/cpu_training"
out="$root/build/bench/cpu_training"
bin="$root/build/bin"
mkdir -p "$out"
export OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads

# Models, weights and data; training artifacts (a GPT-2 compile takes a
# minute: redone only when the model or loomc changed).
if [ ! -f "$out/gpt2.npz" ] || [ "$here/make_training_models.py" -nt "$out/gpt2.npz" ] ||
   [ "$root/test/models/make_models.py" -nt "$out/gpt2.npz" ]; then
  if ! $py "$here/make_training_models.py" "$out" > "$out/make.log" 2>&1; then
    cat "$out/make.log"; exit 1
  fi
  grep '^wrote' "$out/make.log"
fi
train_flags=(--loss cross_entropy --logits logits --labels labels
             --optimizer adamw --lr 1e-4 --weight-decay 0.01
             --lr-schedule constant --clip-norm 1.0)
declare -A batch=([mlp]=64 [gpt2]=8)
for m in mlp gpt2; do
  if [ ! -f "$out/$m.loom" ] || [ "$out/$m.onnx" -nt "$out/$m.loom" ] ||
     [ "$bin/loomc" -nt "$out/$m.loom" ]; then
    "$bin/loomc" train "$out/$m.onnx" "${train_flags[@]}" --batch "${batch[$m]}" \
      -o "$out/$m.loom"
  fi
done

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_of() { sed -n 's/^per step: .* median \([0-9.]*\) ms.*/\1/p'; }
loss_of() { sed -n 's/^step [0-9]*\/[0-9]*  loss \([^ ]*\).*/\1/p' | tail -1; }

printf '%-10s %8s %6s %12s %12s %14s\n' case threads batch "loom ms" "pytorch ms" "loom/pytorch"
bench_case() {  # model
  local m=$1 b=${batch[$1]} l=() p=() lo po
  for ((r = 0; r < rounds; ++r)); do
    lo=$("$bin/loom-run" "$out/$m.loom" --data "$out/$m.npz" --steps "$steps" \
           --batch "$b" --threads "$threads" --warmup "$warmup" --log-every "$steps")
    po=$($py "$here/torch_bench.py" "$out" "$m" --steps "$steps" --batch "$b" \
           --threads "$threads" --warmup "$warmup")
    l+=("$(time_of <<< "$lo")")
    p+=("$(time_of <<< "$po")")
  done
  awk -v a="$(loss_of <<< "$lo")" -v b="$(loss_of <<< "$po")" -v m="$m" 'BEGIN {
    if (a - b > 1e-3 * b || b - a > 1e-3 * b)
      printf "warning: %s: mean loss %s in Loom, %s in PyTorch\n", m, a, b }'
  local lm pm
  lm=$(printf '%s\n' "${l[@]}" | median)
  pm=$(printf '%s\n' "${p[@]}" | median)
  awk -v n="$m" -v t="$threads" -v b="$b" -v x="$lm" -v y="$pm" \
    'BEGIN { printf "%-10s %8s %6s %12.2f %12.2f %14.2f\n", n, t, b, x, y, x / y }'
}
bench_case mlp
bench_case gpt2
