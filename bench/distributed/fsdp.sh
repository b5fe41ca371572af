#!/usr/bin/env bash
# FSDP (ZeRO-3) memory per rank and the data-parallel bucket overlap, on
# bench/cpu_training's GPT-2-style model (4 layers x 256 wide, 128 tokens,
# vocab 512, 3.3 M parameters), AdamW, global batch 8, Gloo over loopback.
#
# 1. Memory: the model trained on 1 process (no FSDP) and with --fsdp on 2
#    and 4 ranks (loom-launch, one thread each). For each, rank 0's measured
#    peak: its state (parameters and optimizer slots, `loom-run
#    --print-memory`) plus the step's planned arena (activations, gradients
#    and the gathered layers: the CPU code's static memory plan), and its
#    resident peak (VmHWM, which also holds the runtime, the mapped
#    artifact's touched pages and the batch). Against it, the report's
#    prediction (loomc train --report, section sharding.fsdp): (parameters +
#    gradients + optimizer state) / N + the largest gathered layer.
# 2. Overlap: the data-parallel step (--data-parallel R, ZeRO 0) with the
#    default buckets, each all-reduced as soon as its last gradient is
#    computed (overlapping the rest of the backward), against one bucket of
#    every gradient (--bucket-size 1GiB: its all-reduce starts after the
#    whole backward, nothing overlaps). Interleaved rounds; a run's figure
#    is rank 0's median step time after 2 warm-up steps, the case's the
#    median of the rounds'.
#
# 3. With --small "4" (rank counts): GPT-2 small (124 M parameters,
#    bench/scale/make_gpt2.py, 128 tokens, batch 8) with --fsdp on those
#    rank counts, 2 steps each: the same memory row (no one-process row:
#    bench/scale measures that).
#
# usage: bench/distributed/fsdp.sh [--ranks "2 4"] [--rounds N] [--steps S] [--small "4"]
# needs: build/ (scripts/build.sh), python3-torch and python3-onnx (to make
# the model, as bench/cpu_training does)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
RANKS="2 4"; rounds=3; steps=10; warmup=2; SMALL=""
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) RANKS=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --small) SMALL=$2; shift 2 ;;
    *) echo "usage: $0 [--ranks LIST] [--rounds N] [--steps S] [--small LIST]"; exit 2 ;;
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
flags=(--loss cross_entropy --logits logits --labels labels --optimizer adamw
       --lr 1e-4 --weight-decay 0.01 --lr-schedule constant --clip-norm 1.0
       --batch 8)
model="$models/gpt2.onnx"
data="$models/gpt2.npz"
mib() { awk -v b="$1" 'BEGIN {printf "%.2f", b / 1048576}'; }
# The planned arena of an artifact's step, in bytes (--print-memory-plan).
arena_of() {
  sed -n 's/^ *planned peak (static-size buffers): \([0-9.]*\) \([KMG]\)iB.*/\1 \2/p' |
    awk '{m = $2 == "K" ? 1024 : $2 == "M" ? 1048576 : 1073741824; printf "%d", $1 * m}'
}
# A `memory:` row of loom-run --print-memory (rank 0), in bytes.
row_of() {
  sed -n "s/^\(\[rank 0\] \)\{0,1\}memory: $1  *\([0-9.]*\) MiB.*/\2/p" |
    awk '{printf "%d", $1 * 1048576}'
}

# One memory row: rank 0 of the model trained on $n ranks (--fsdp; 1: one
# process without it), artifacts named $out/$tag-$n.
memory_row() {
  local model=$1 data=$2 tag=$3 n=$4 steps=$5
  local art="$out/$tag-$n.loom" plan run o state hwm arena per layer predicted
  if [ "$n" = 1 ]; then
    plan=$("$bin/loomc" train "$model" "${flags[@]}" -o "$art" --print-memory-plan)
    run=("$bin/loom-run")
  else
    plan=$("$bin/loomc" train "$model" "${flags[@]}" --data-parallel "$n" --fsdp \
             --report "$out/$tag-$n.json" -o "$art" --print-memory-plan 2>/dev/null)
    run=("$bin/loom-launch" --nproc "$n" -- "$bin/loom-run")
  fi
  arena=$(arena_of <<< "$plan")
  o=$("${run[@]}" "$art" --data "$data" --steps "$steps" --batch 8 --threads 1 --print-memory)
  state=$(( $(row_of parameters <<< "$o") + $(row_of "optimizer state" <<< "$o") ))
  hwm=$(row_of "resident at peak (VmHWM)" <<< "$o")
  if [ "$n" = 1 ]; then
    # One process holds everything: parameters, gradients (in the arena)
    # and the slots; nothing is gathered.
    predicted="-"; per="-"; layer="-"
  else
    read -r per layer < <($py -c "
import json, sys
f = json.load(open(sys.argv[1]))['sharding']['fsdp']
print(f['per_rank_state_bytes'], f['largest_gathered_layer_bytes'])" "$out/$tag-$n.json")
    predicted=$(mib $((per + layer))); per=$(mib "$per"); layer=$(mib "$layer")
  fi
  [ "$n" = 1 ] && arena1=$arena
  printf '%-6s %12s %10s %10s | %10s %10s %12s %12s %10s\n' "$n" "$per" "$layer" \
    "$predicted" "$(mib "$state")" "$(mib "$arena")" "$(mib $((state + arena)))" \
    "$( [ "$arena1" -gt 0 ] && mib $((arena - arena1 / n)) || echo -)" "$(mib "$hwm")"
}
header() {
  printf '%-6s %12s %10s %10s | %10s %10s %12s %12s %10s\n' ranks "state/N" \
    "layer" "predicted" "state" "arena" "state+arena" "arena-a1/N" "VmHWM"
}

echo "FSDP memory per rank (rank 0), GPT-2-style model, AdamW, batch 8"
header
arena1=0
for n in 1 $RANKS; do
  memory_row "$model" "$data" fsdp "$n" 3
done
cat <<'END'
(MiB, rank 0. state/N: (parameters + gradients + AdamW's 2 slots) / N;
layer: the largest gathered layer; predicted: their sum (the report's
per_rank_bytes). Measured: state = the parameter and slot chunks; arena =
the step's planned intermediates (activations of the rank's batch slice,
gradients before their reduce-scatter, gathered layers); arena-a1/N = the
arena beyond one process's arena / N: what FSDP adds, about the gathered
layer and the next one in flight.)
END

if [ -n "$SMALL" ]; then
  scale="$out/small"
  mkdir -p "$scale"
  if [ ! -f "$scale/gpt2_small.onnx" ] || [ ! -f "$scale/gpt2_small.npz" ]; then
    $py "$root/bench/scale/make_gpt2.py" --size small --batch 8 --seq 128 \
      -o "$scale" > "$out/make-small.log" 2>&1 || { cat "$out/make-small.log"; exit 1; }
  fi
  echo
  echo "FSDP memory per rank (rank 0), GPT-2 small (124 M), AdamW, batch 8 x 128"
  header
  arena1=0
  for n in $SMALL; do
    memory_row "$scale/gpt2_small.onnx" "$scale/gpt2_small.npz" fsdp-small "$n" 2
  done
fi

echo
echo "Data-parallel bucket overlap (ZeRO 0): step time, default buckets vs one bucket"
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_of() { sed -n 's/^\(\[rank 0\] \)\{0,1\}per step: .* median \([0-9.]*\) ms.*/\2/p'; }
printf '%-6s %16s %16s %12s\n' ranks "overlap ms" "no overlap ms" "no/overlap"
for n in $RANKS; do
  "$bin/loomc" train "$model" "${flags[@]}" --data-parallel "$n" -o "$out/ddp-$n.loom"
  "$bin/loomc" train "$model" "${flags[@]}" --data-parallel "$n" --bucket-size 1GiB \
    -o "$out/ddp-$n-one.loom"
  with=() without=()
  for ((r = 0; r < rounds; ++r)); do
    for kind in "" -one; do
      o=$("$bin/loom-launch" --nproc "$n" -- "$bin/loom-run" "$out/ddp-$n$kind.loom" \
            --data "$data" --steps "$steps" --batch 8 --threads 1 --warmup "$warmup" \
            --log-every "$steps")
      if [ -z "$kind" ]; then with+=("$(time_of <<< "$o")"); else without+=("$(time_of <<< "$o")"); fi
    done
  done
  a=$(printf '%s\n' "${with[@]}" | median)
  b=$(printf '%s\n' "${without[@]}" | median)
  printf '%-6s %16.3f %16.3f %12.2f\n' "$n" "$a" "$b" \
    "$(awk -v x="$b" -v y="$a" 'BEGIN {print x / y}')"
done
