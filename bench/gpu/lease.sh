#!/bin/sh
# One lease of a GPU machine (the device tool): run.sh's sections one by
# one, each capped so that all of them end within DEADLINE seconds
# (default 500), then every result packed into $OUT/results.tgz and the
# summary beside it (the tool brings back at most 8 files).
#   sh bench/gpu/out/lease.sh [SECTION...]
# Default order: the quick, decisive sections first, conformance last
# (its log keeps each model's result, so a cut-short run still counts).
set -u
cd "$(dirname "$0")"
final=${OUT:-$(pwd)/results-final}
deadline=$(( $(date +%s) + ${DEADLINE:-500} ))
res=/tmp/loom-gpu-results
rm -rf "$res" && mkdir -p "$res" "$final"
: > "$res/all-summary.txt"
for s in ${*:-tests attention training kernels step load profile scale sanitizer conformance}; do
  left=$(( deadline - $(date +%s) ))
  if [ "$left" -lt 20 ]; then
    echo "$s: not run (the lease's time is spent)" >> "$res/all-summary.txt"
    continue
  fi
  case $s in
    tests|training|attention|sanitizer) cap=120 ;; kernels|step) cap=150 ;; scale) cap=200 ;; load|profile) cap=60 ;;
    *) cap=$left ;;
  esac
  [ "$cap" -le "$left" ] || cap=$left
  start=$(date +%s)
  OUT=$res timeout -k 5 "$cap" sh run.sh "$s" > "$res/run-$s.log" 2>&1
  rc=$?
  grep -v '^results in' "$res/summary.txt" >> "$res/all-summary.txt"
  echo "$s: exit $rc after $(( $(date +%s) - start ))s (cap ${cap}s)" >> "$res/all-summary.txt"
done
nvidia-smi --query-gpu=name,temperature.gpu,clocks.sm,clocks.mem --format=csv >> "$res/all-summary.txt" 2>&1
tar -C "$res" -czf "$final/results.tgz" .
cp "$res/all-summary.txt" "$final/summary.txt"
cat "$res/all-summary.txt"
