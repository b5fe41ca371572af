#!/usr/bin/env bash
# int8 against f32 on the CPU, measured in one run: each model of
# make_quant_models.py (two BERT-base feed-forward blocks on 128 tokens; the
# 1024-4096-4096-1024 MLP at batch 64) in f32, in the QDQ form ONNX
# Runtime's quantize_static writes (per-channel s8 weights, u8
# activations; "int8") and in the form its quantize_dynamic writes
# (DynamicQuantizeLinear + MatMulInteger; "dyn8"), and as `loomc quantize
# --per-channel` writes it from the f32 model ("lq8": the same dynamic form,
# one weight scale per output column) and as `loomc quantize --mode static
# --per-channel` writes it, calibrated on the int8 form's calibration batch
# ("ls8": the QDQ form, its ranges from Loom's run), each run by Loom and by
# ONNX Runtime, interleaved rounds, the median of the rounds' medians.
# Prints per model, form and thread count the latencies, Loom's speed-up
# over its f32 (f32 / int8), Loom / ORT on the same quantized model, and
# the quantized output's SQNR against f32 (Loom's).
#
# usage: bench/quant/run.sh [--threads "1 2"] [--rounds R] [--runs N]
# needs: build/ (scripts/build.sh), onnxruntime-node (scripts/install-ort.sh)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
threads="1 2"; rounds=3; runs=20
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    *) echo "usage: $0 [--threads \"1 2\"] [--rounds R] [--runs N]"; exit 2 ;;
  esac
done
out="$root/build/bench/quant"
bin="$root/build/bin"
/usr/bin/python3 "$root/bench/quant/make_quant_models.py" "$out"
models="bert-ffn mlp-b64"
for m in $models; do
  "$bin/loomc" quantize "$out/$m.onnx" -o "$out/${m}_lq8.onnx" --per-channel
  "$bin/loomc" quantize "$out/$m.onnx" -o "$out/${m}_ls8.onnx" --per-channel \
    --mode static --calibration "$out/${m}_calib.npz"
  for v in "$m" "${m}_int8" "${m}_dyn8" "${m}_lq8" "${m}_ls8"; do
    "$bin/loomc" compile "$out/$v.onnx" -o "$out/$v.loom"
    mkdir -p "$out/$v.out"
    "$bin/loom-run" "$out/$v.loom" --in "x=$out/${m}_in.npy" \
      --out-dir "$out/$v.out" > /dev/null
  done
done

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
field() { sed -n 's/.*median \([0-9.]*\) ms.*/\1/p'; }
loom_ms() {  # model threads
  "$bin/loom-run" "$out/$1.loom" --in "x=$out/$3_in.npy" --threads "$2" \
    --bench "$runs" --warmup 3 | field
}
ort_ms() {
  node "$root/bench/cpu_inference/ort_bench.js" "$out/$1.onnx" \
    --in "x=$out/$3_in.npy" --threads "$2" --runs "$runs" | field
}

printf '%-10s %-4s %3s %9s %9s %9s %9s %9s %9s %6s\n' model form thr \
  "loom f32" "loom q" "ort f32" "ort q" "f32/q" "loom/ort" "SQNR"
for m in $models; do
  for form in int8 dyn8 lq8 ls8; do
    q="${m}_$form"
    sqnr=$(/usr/bin/python3 "$root/bench/quant/sqnr.py" "$out/$m.out/y.npy" \
           "$out/$q.out/y.npy")
    for t in $threads; do
      lf=(); li=(); of=(); oi=()
      for ((r = 0; r < rounds; ++r)); do
        lf+=("$(loom_ms "$m" "$t" "$m")")
        li+=("$(loom_ms "$q" "$t" "$m")")
        of+=("$(ort_ms "$m" "$t" "$m")")
        oi+=("$(ort_ms "$q" "$t" "$m")")
      done
      a=$(printf '%s\n' "${lf[@]}" | median)
      b=$(printf '%s\n' "${li[@]}" | median)
      c=$(printf '%s\n' "${of[@]}" | median)
      d=$(printf '%s\n' "${oi[@]}" | median)
      awk -v m="$m" -v f="$form" -v t="$t" -v a="$a" -v b="$b" -v c="$c" \
        -v d="$d" -v s="$sqnr" 'BEGIN { printf "%-10s %-4s %3s %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %6s\n",
        m, f, t, a, b, c, d, a / b, b / d, s }'
    done
  done
done
