#!/usr/bin/env bash
# int8 accuracy and speed of whole classifiers (issue 25's done-when): each
# model of make_accuracy_models.py (a BERT-style encoder classifier and a
# ResNet-style image classifier, f32, trained on synthetic tasks) is
# quantized by `loomc quantize --mode static --per-channel` on its
# calibration set (256 samples) with each calibration method (minmax,
# percentile, entropy). The 1000 held-out inputs run through Loom's f32
# model and each int8 model (batches of 250); per form it prints the top-1
# agreement with f32 (percent of the inputs whose top class is f32's), the
# SQNR of the logits against f32's, and the accuracy of both on the labels
# (context only); the same for ONNX Runtime's run of each int8 model, which
# tells the quantization's error from Loom's execution. Then the latency at a serving batch (BERT: 8 sequences
# of 64 tokens; ResNet: 32 images of 32x32) of Loom f32, Loom int8, ONNX
# Runtime f32 and ONNX Runtime on the same QDQ model, interleaved rounds,
# the median of the rounds' medians, per thread count; Loom's speed-up over
# its f32 (f32 / int8) and Loom int8 / ORT int8. The line `quantized ...`
# of each `loomc quantize` says which nodes became int8 (MatMul / Gemm;
# Conv once `loomc quantize` takes it).
#
# usage: bench/quant/accuracy.sh [--threads "1 2"] [--rounds R] [--runs N]
#                                [--models "bert-cls resnet-cls"]
#                                [--methods "minmax percentile entropy"]
#                                [--remake]
# The models are made (about a minute or two each) when missing or with
# --remake, in build/bench/quant-accuracy.
# needs: build/ (scripts/build.sh), /usr/bin/python3 with torch, numpy and
# onnx; onnxruntime-node (scripts/install-ort.sh) for ORT's latency
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
threads="1 2"; rounds=3; runs=20; models="bert-cls resnet-cls"
methods="minmax percentile entropy"; remake=0
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --methods) methods=$2; shift 2 ;;
    --remake) remake=1; shift ;;
    *) sed -n '/^# usage/,/^#  *\[--remake\]/p' "$0" | sed 's/^# //'; exit 2 ;;
  esac
done
out="$root/build/bench/quant-accuracy"
bin="$root/build/bin"
py=/usr/bin/python3
eval_py="$root/bench/quant/accuracy_eval.py"
mkdir -p "$out"
have_ort=1
node -e "require('$root/test/tools/ort_run.js').loadOrt()" 2>/dev/null ||
  { have_ort=0; echo "(onnxruntime-node not installed: no ORT latencies)"; }

input_of() { case "$1" in bert-cls) echo ids ;; *) echo x ;; esac; }
serve_batch() { case "$1" in bert-cls) echo 8 ;; *) echo 32 ;; esac; }
parts=4  # 1000 held-out inputs in batches of 250

for m in $models; do
  if [ "$remake" = 1 ] || [ ! -f "$out/$m.onnx" ]; then
    "$py" "$root/bench/quant/make_accuracy_models.py" "$out" "$m"
  fi
done

for m in $models; do
  in=$(input_of "$m"); b=$(serve_batch "$m")
  "$py" "$eval_py" split "$out" "$m" "$parts"
  "$py" -c "import numpy as np; np.save('$out/${m}_serve.npy', np.load('$out/${m}_test.npy')[:$b])"
  forms=()
  for method in $methods; do
    q="${m}_$method"
    start=$(date +%s.%N)
    "$bin/loomc" quantize "$out/$m.onnx" -o "$out/$q.onnx" --mode static \
      --per-channel --method "$method" --calibration "$out/${m}_calib.npz" \
      2> "$out/$q.log"
    end=$(date +%s.%N)
    echo "$m $method: $(grep '^quantized' "$out/$q.log") ($(grep '^calibrated' "$out/$q.log" | sed 's/^calibrated //'); $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s)"
    forms+=("$method")
  done
  for v in "$m" "${forms[@]/#/${m}_}"; do
    "$bin/loomc" compile "$out/$v.onnx" -o "$out/$v.eval.loom" --batch $((1000 / parts))
    "$bin/loomc" compile "$out/$v.onnx" -o "$out/$v.serve.loom" --batch "$b"
    for ((k = 0; k < parts; ++k)); do
      mkdir -p "$out/$v.out/$k"
      "$bin/loom-run" "$out/$v.eval.loom" --in "$in=$out/${m}_test_$k.npy" \
        --out-dir "$out/$v.out/$k" > /dev/null
    done
  done
  # ONNX Runtime on the same QDQ models ("<method>-ort"): the quantization's
  # own error, apart from how Loom runs it.
  compared=("${forms[@]}")
  if [ "$have_ort" = 1 ]; then
    for method in "${forms[@]}"; do
      for ((k = 0; k < parts; ++k)); do
        d="$out/${m}_$method-ort.out/$k"
        mkdir -p "$d"
        node "$root/test/tools/ort_run.js" "$out/${m}_$method.onnx" \
          --in "$out/${m}_test_$k.npy" --save-dir "$d" > /dev/null
        mv "$d/output_0.npy" "$d/logits.npy"
      done
      compared+=("$method-ort")
    done
  fi
  echo
  echo "$m: 1000 held-out inputs, int8 against Loom's f32 (<method>-ort: the"
  echo "same int8 model run by ONNX Runtime)"
  printf '%-10s %-14s %10s %10s %8s %8s\n' model method "top-1 agr" "logits dB" \
    "acc f32" "acc q"
  "$py" "$eval_py" compare "$out" "$m" "$parts" "${compared[@]}" |
    while read -r f agree sqnr af aq; do
      printf '%-10s %-14s %9s%% %10s %7s%% %7s%%\n' "$m" "$f" "$agree" \
        "$sqnr" "$af" "$aq"
    done
done

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
least() { sort -g | head -1; }
# Field k of each of the arguments ("MIN MEDIAN" pairs).
col() { printf '%s\n' "$@" | awk -v k="$k" '{print $k}'; }
# "MIN MEDIAN" of a latency line.
field() { sed -n 's/.*min \([0-9.]*\) ms, median \([0-9.]*\) ms.*/\1 \2/p'; }
loom_ms() {  # form model threads
  "$bin/loom-run" "$out/$1.serve.loom" --in "$(input_of "$2")=$out/$2_serve.npy" \
    --threads "$3" --bench "$runs" --warmup 3 | field
}
ort_ms() {
  if [ "$have_ort" = 0 ]; then echo nan nan; return; fi
  node "$root/bench/cpu_inference/ort_bench.js" "$out/$1.onnx" \
    --in "$(input_of "$2")=$out/$2_serve.npy" --threads "$3" --runs "$runs" |
    field
}

echo
echo "latency (ms) at the serving batch: the median of $rounds rounds' medians of"
echo "$runs runs (and, after '|', the ratios of the least run of all rounds)"
printf '%-10s %-11s %3s %9s %9s %9s %9s %7s %8s | %7s %8s\n' model method thr \
  "loom f32" "loom q" "ort f32" "ort q" "f32/q" "loom/ort" "f32/q" "loom/ort"
for m in $models; do
  for method in $methods; do
    q="${m}_$method"
    for t in $threads; do
      lf=(); li=(); of=(); oi=()
      for ((r = 0; r < rounds; ++r)); do
        lf+=("$(loom_ms "$m" "$m" "$t")")
        li+=("$(loom_ms "$q" "$m" "$t")")
        of+=("$(ort_ms "$m" "$m" "$t")")
        oi+=("$(ort_ms "$q" "$m" "$t")")
      done
      k=2; a=$(col "${lf[@]}" | median); b=$(col "${li[@]}" | median)
      c=$(col "${of[@]}" | median); d=$(col "${oi[@]}" | median)
      k=1; a1=$(col "${lf[@]}" | least); b1=$(col "${li[@]}" | least)
      d1=$(col "${oi[@]}" | least)
      awk -v m="$m" -v f="$method" -v t="$t" -v a="$a" -v b="$b" -v c="$c" \
        -v d="$d" -v a1="$a1" -v b1="$b1" -v d1="$d1" 'BEGIN {
        printf "%-10s %-11s %3s %9.2f %9.2f %9.2f %9.2f %7.2f %8.2f | %7.2f %8.2f\n",
        m, f, t, a, b, c, d, a / b, b / d, a1 / b1, b1 / d1 }'
    done
  done
done
