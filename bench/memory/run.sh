#!/usr/bin/env bash
# Peak memory of a training step with and without recomputation: the
# GPT-2-style model of test/training (2 blocks, width 32, 16 tokens) trained
# with AdamW, for each recompute strategy (none, sqrt, optimal at FRACTION
# of the peak the pass plans for none) and precision (f32, and bf16 mixed
# precision with the default policy: loomc train --precision bf16). For
# each: the peak the
# --loom-recompute pass planned, the compiled step's memory plan (the arena
# the runtime allocates for the step's intermediates), the extra FLOPs and
# the solve time (from loomc train --report), and the measured maximum
# resident set size of `loom-run` over STEPS steps (the whole process:
# code, weights, optimizer state and the arena), with its difference from
# none's. Prints one line per case.
#
# usage: bench/memory/run.sh [--batch B] [--fraction F] [--steps N]
#                            [--precisions "f32 bf16"]
# needs: build/ (scripts/build.sh)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
batch=64; fraction=0.5; steps=5; PRECISIONS="f32 bf16"
while [ $# -gt 0 ]; do
  case "$1" in
    --batch) batch=$2; shift 2 ;;
    --fraction) fraction=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --precisions) PRECISIONS=$2; shift 2 ;;
    *) echo "usage: $0 [--batch B] [--fraction F] [--steps N] [--precisions LIST]"; exit 2 ;;
  esac
done
bin="$root/build/bin"
out="$root/build/bench/memory"
mkdir -p "$out"
model="$root/test/training/gpt2.onnx"
data="$root/test/training/gpt2.data.npz"
flags=(--loss cross_entropy --logits logits --labels labels --optimizer adamw
       --lr 0.003 --weight-decay 0.1 --clip-norm 1.0 --batch "$batch")

# Max RSS (KiB) of a command, from the kernel's rusage of the child.
maxrss() {
  /usr/bin/python3 - "$@" <<'PY'
import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
}
field() { /usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

echo "model gpt2 (test/training), batch $batch, $steps steps; budget of optimal: $fraction x the planned peak of none"
printf "%-5s %-8s %12s %12s %12s %12s %10s %12s %12s\n" precision strategy \
  budget pass_peak codegen_peak extra_flops solve_ms max_rss_kib rss_delta_kib
for precision in $PRECISIONS; do
  none_arena=""; none_rss=""
  for strategy in none sqrt optimal; do
    extra=(--recompute "$strategy")
    budget="-"
    if [ "$strategy" = optimal ]; then
      budget=$(/usr/bin/python3 -c "print(int($none_pass * $fraction))")
      extra+=(--memory-budget "$budget")
    fi
    art="$out/gpt2-$precision-$strategy.loom"
    rep="$out/gpt2-$precision-$strategy.json"
    if ! "$bin/loomc" train "$model" "${flags[@]}" "${extra[@]}" \
      --report "$rep" --precision "$precision" \
      -o "$art" 2>"$out/gpt2-$precision-$strategy.summary"; then
      # An unreachable budget: say so and go on.
      printf "%-9s %-8s %12s  %s\n" "$precision" "$strategy" "$budget" \
        "$(grep -o 'the smallest planned peak found is [0-9]* bytes' \
          "$out/gpt2-$precision-$strategy.summary" || echo 'loomc failed')"
      continue
    fi
    arena=$(field "$rep" 'r["memory_plan"]["arena_bytes"]')
    pass=$(field "$rep" 'r["recompute"]["planned_peak_after"]')
    flops=$(field "$rep" 'r["recompute"]["extra_flops"]')
    solve=$(field "$rep" '"%.0f" % r["recompute"]["solve_ms"]')
    rss=$(maxrss "$bin/loom-run" "$art" --data "$data" --steps "$steps" \
      --batch "$batch" --threads 1)
    [ -z "$none_arena" ] && none_arena=$arena && none_pass=$pass && none_rss=$rss
    [ "$precision" = f32 ] && [ "$strategy" = none ] && f32_arena=$arena
    printf "%-9s %-8s %12s %12s %12s %12s %10s %12s %12s\n" "$precision" \
      "$strategy" "$budget" "$pass" "$arena" "$flops" "$solve" "$rss" \
      $((rss - none_rss))
  done
done
if [ -n "${f32_arena:-}" ]; then
  for precision in $PRECISIONS; do
    a=$(field "$out/gpt2-$precision-none.json" 'r["memory_plan"]["arena_bytes"]')
    saved=$(field "$out/gpt2-$precision-none.json" 'r["recompute"]["saved_bytes"]')
    [ "$precision" = f32 ] && f32_saved=$saved
    /usr/bin/python3 -c "print('without recompute, $precision: activations kept for the backward %d bytes (%.1f%% of f32), compiled peak %d bytes (%.1f%% of f32)' % ($saved, 100.0 * $saved / $f32_saved, $a, 100.0 * $a / $f32_arena))"
  done
fi
