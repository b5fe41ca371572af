#!/usr/bin/env bash
# Data-parallel scaling on the CPU ranks of this machine: the training step
# of bench/cpu_training's models (the MLP 784-1024-1024-10 and the GPT-2-style
# model, AdamW with clipping) at the same global batch, on one process with
# R threads against R ranks of one thread each (loomc train --data-parallel
# R, loom-launch --nproc R; Gloo over loopback). The same cores either way,
# so the ratio says what splitting the batch over ranks costs or gains
# against threading the kernels, collectives included. Each case runs
# ROUNDS times, the two interleaved; a run's figure is its median step time
# after 2 warm-up steps (rank 0's), the case's the median of the rounds'.
#
# usage: bench/distributed/dp_scaling.sh [--ranks R] [--rounds N] [--steps S] [--zero Z]
# needs: build/ (scripts/build.sh), python3-torch and python3-onnx (to make
# the models, as bench/cpu_training does)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
ranks=2; rounds=3; steps=20; warmup=2; zero=0
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) ranks=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --zero) zero=$2; shift 2 ;;
    *) echo "usage: $0 [--ranks R] [--rounds N] [--steps S] [--zero Z]"; exit 2 ;;
  esac
done
py=/usr/bin/python3
models="$root/build/bench/cpu_training"
out="$root/build/bench/distributed"
bin="$root/build/bin"
mkdir -p "$out" "$models"
if [ ! -f "$models/gpt2.npz" ]; then
  $py "$root/bench/cpu_training/make_training_models.py" "$models" > "$out/make.log" 2>&1 ||
    { cat "$out/make.log"; exit 1; }
fi
train_flags=(--loss cross_entropy --logits logits --labels labels
             --optimizer adamw --lr 1e-4 --weight-decay 0.01
             --lr-schedule constant --clip-norm 1.0)
declare -A batch=([mlp]=64 [gpt2]=8)
for m in mlp gpt2; do
  "$bin/loomc" train "$models/$m.onnx" "${train_flags[@]}" --batch "${batch[$m]}" \
    -o "$out/$m-1.loom"
  "$bin/loomc" train "$models/$m.onnx" "${train_flags[@]}" --batch "${batch[$m]}" \
    --data-parallel "$ranks" --zero "$zero" -o "$out/$m-$ranks.loom"
done

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_of() { sed -n 's/^\(\[rank 0\] \)\{0,1\}per step: .* median \([0-9.]*\) ms.*/\2/p'; }

printf '%-6s %6s %6s %14s %14s %12s\n' case ranks batch "1 proc ms" "ranks ms" "ranks/1proc"
for m in mlp gpt2; do
  b=${batch[$m]} one=() many=()
  for ((r = 0; r < rounds; ++r)); do
    o=$("$bin/loom-run" "$out/$m-1.loom" --data "$models/$m.npz" --steps "$steps" \
          --batch "$b" --threads "$ranks" --warmup "$warmup" --log-every "$steps")
    one+=("$(time_of <<< "$o")")
    o=$("$bin/loom-launch" --nproc "$ranks" -- "$bin/loom-run" "$out/$m-$ranks.loom" \
          --data "$models/$m.npz" --steps "$steps" --batch "$b" --threads 1 \
          --warmup "$warmup" --log-every "$steps")
    many+=("$(time_of <<< "$o")")
  done
  a=$(printf '%s\n' "${one[@]}" | median)
  d=$(printf '%s\n' "${many[@]}" | median)
  printf '%-6s %6d %6d %14.3f %14.3f %12.2f\n' "$m" "$ranks" "$b" "$a" "$d" \
    "$(awk -v x="$d" -v y="$a" 'BEGIN {print x / y}')"
done
