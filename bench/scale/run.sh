#!/usr/bin/env bash
# GPT-2 at real scale on one machine (issue 22), Loom against its peers in
# the same run, for each size (make_gpt2.py: small 124M, medium 355M, large
# 774M; random weights, 128 tokens, vocab 50257, opset 14):
#   1. `loomc compile` (inference) wall time and peak RSS, against ONNX
#      Runtime's session creation (ort_session.js: it optimizes the graph
#      then), wall and peak RSS;
#   2. inference latency at batch 1 x 128 (`loom-run --bench`, T threads)
#      against ONNX Runtime (bench/cpu_inference/ort_bench.js, T intra-op
#      threads), and the logits of both against PyTorch's (max abs
#      difference, loose tolerance: rtol 1e-3, atol 1e-3);
#   3. for each training batch B: `loomc train --loss cross_entropy
#      --optimizer adamw --batch B` wall time, peak RSS and artifact size;
#   4. the training step time (`loom-run --data --steps N --batch B
#      --threads T`, the median after the warm-up step) and peak RSS
#      against PyTorch eager doing the same step (cross-entropy, AdamW lr
#      1e-4, weight decay 0.01, clipping at norm 1.0) on the same initial
#      weights and data with the same threads
#      (bench/cpu_training/torch_bench.py), and their mean losses;
#   5. at the smallest batch: 10 steps from the raw token file (first and
#      last loss), a checkpoint, `loomc export` of the trained model (its
#      weights as external data, --external-data=always), and that ONNX
#      compiled and run by Loom and run by ONNX Runtime (logits equal).
# Peak RSS is the kernel's maximum resident set of the child process
# (getrusage), in GB (1e9 bytes). Each line prints Loom, the peer and Loom /
# peer (below 1: Loom is faster or smaller). A step that fails prints
# FAILED and the tool's error line; the steps that need its output print
# "skipped", and the table goes on.
#
# usage: bench/scale/run.sh [--sizes "small medium large"] [--steps N]
#                           [--threads T] [--batch "2 8"|none] [--runs N]
# needs: build/ (scripts/build.sh), python3-torch and python3-onnx,
#        onnxruntime-node (scripts/install-ort.sh); about 4 GB of disk per
#        size for the models, weights and artifacts (build/bench/scale)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
sizes="small medium large"; steps=6; threads=$(nproc); batches="2 8"; runs=10
warmup=1
usage() {
  echo "usage: $0 [--sizes \"small medium large\"] [--steps N] [--threads T] [--batch \"2 8\"] [--runs N]"
  exit 2
}
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || usage
  case "$1" in
    --sizes) sizes=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --batch) batches=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    *) usage ;;
  esac
done
for s in $sizes; do
  case "$s" in tiny|small|medium|large) ;; *) echo "$0: unknown size '$s'"; usage ;; esac
done
if [ "$steps" -le "$warmup" ]; then
  echo "$0: --steps must be more than the $warmup warm-up step"; exit 2
fi
py=/usr/bin/python3
if ! $py -c "import torch, onnx" 2>/dev/null; then
  echo "$0: needs PyTorch and ONNX for $py (apt-get install python3-torch python3-onnx)"
  exit 1
fi
here="$root/bench/scale"
out="$root/build/bench/scale"
bin="$root/build/bin"
mkdir -p "$out"
export OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads
# The compile times are compiles, not hits of loomc's compile cache.
export LOOM_CACHE=0
# --batch none: inference only (the model is still made with batch 2 data).
[ "$batches" = none ] && batches=""
max_batch=$(printf '%s\n' ${batches:-2} | sort -n | tail -1)
seq=128

# measure LOG CMD...: runs CMD, its stdout and stderr into LOG; prints
# "RC WALL_S CPU_S MAXRSS_KIB" (the child's, from the kernel's rusage).
measure() {
  local log=$1; shift
  $py - "$log" "$@" <<'PY'
import resource, subprocess, sys, time
with open(sys.argv[1], "w") as log:
    start = time.perf_counter()
    try:
        rc = subprocess.run(sys.argv[2:], stdout=log,
                            stderr=subprocess.STDOUT).returncode
    except OSError as e:
        print(e, file=log)
        rc = 127
    if rc < 0:  # the kernel's OOM killer, most likely, at this scale
        print(f"error: {sys.argv[2].rsplit('/', 1)[-1]} killed by signal {-rc}",
              file=log)
    wall = time.perf_counter() - start
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(rc, f"{wall:.2f}", f"{r.ru_utime + r.ru_stime:.1f}", r.ru_maxrss)
PY
}
# The line of a failed tool's LOG worth printing: its first error, or its
# last line.
error_of() {
  tr '\r' '\n' < "$1" | grep -v '^\s*$' > "$1.lines" || true
  { grep -m1 -iE 'error|killed|terminate|abort|exception' "$1.lines" ||
    tail -n 1 "$1.lines"; } | cut -c1-150
}
gb() { awk -v k="$1" 'BEGIN { printf "%.2f", k * 1024 / 1e9 }'; }
median_ms() { sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' "$1" | tail -1; }
mean_loss() { sed -n 's/^step [0-9]*\/[0-9]*  loss \([^ ]*\).*/\1/p' "$1" | tail -1; }

fmt='%-6s %-24s %-12s %12s %12s %9s  %s\n'
# row SIZE CASE METRIC LOOM PEER NOTE: the ratio when both are numbers.
row() {
  local ratio=-
  if [[ $4 =~ ^[0-9.]+$ && $5 =~ ^[0-9.]+$ ]] && awk -v b="$5" 'BEGIN { exit !(b > 0) }'; then
    ratio=$(awk -v a="$4" -v b="$5" 'BEGIN { printf "%.2f", a / b }')
  fi
  printf "$fmt" "$1" "$2" "$3" "$4" "$5" "$ratio" "${6:-}"
}
fail_row() {  # SIZE CASE LOG: FAILED with the error line
  printf '%-6s %-24s FAILED: %s\n' "$1" "$2" "$(error_of "$3")"
}
skip_row() { printf '%-6s %-24s skipped (%s)\n' "$1" "$2" "$3"; }

# 5. roundtrip SIZE BASE TRAIN.loom B: 10 steps from the raw token file
#    (nanoGPT's format) with a checkpoint, `loomc export` of the trained
#    model with external data, and that ONNX compiled by Loom and run by Loom and ONNX Runtime
#    on the same input: the logits must agree; and the trained artifact,
#    resumed from the checkpoint, reports on one batch the loss that the
#    export's logits give (ONNX Runtime).
roundtrip() {
  local size=$1 base=$2 art=$3 b=$4 rc wall rss
  read -r rc wall _ rss < <(measure "$base.tokens.log" "$bin/loom-run" "$art" \
    --data "$base.tokens.u16" --tokens uint16 --seq "$seq" --seed 1 --steps 10 \
    --batch "$b" --threads "$threads" --log-every 1 --save "$base.loomckpt")
  if [ "$rc" != 0 ]; then fail_row "$size" "tokens: 10 steps" "$base.tokens.log"; return; fi
  local first last
  first=$(sed -n 's/^step 1\/10  loss \([^ ]*\).*/\1/p' "$base.tokens.log")
  last=$(sed -n 's/^step 10\/10  loss \([^ ]*\).*/\1/p' "$base.tokens.log")
  row "$size" "tokens: 10 steps b$b" "loss 1 -> 10" "$last" "$first" \
    "$(awk -v a="$last" -v b="$first" 'BEGIN { print (a < b ? "falling" : "NOT FALLING") }'); peak RSS $(gb "$rss") GB, checkpoint $(( $(stat -c %s "$base.loomckpt") / 1000000 )) MB"
  rm -f "$base.trained.onnx" "$base.trained.onnx.data"
  read -r rc wall _ rss < <(measure "$base.export.log" "$bin/loomc" export "$art" \
    --checkpoint "$base.loomckpt" --external-data=always -o "$base.trained.onnx")
  if [ "$rc" != 0 ]; then fail_row "$size" "export trained" "$base.export.log"; return; fi
  row "$size" "export trained" "wall s" "$wall" - "peak RSS $(gb "$rss") GB; $(( $(stat -c %s "$base.trained.onnx") / 1000000 )) MB$([ -f "$base.trained.onnx.data" ] && echo " + external data $(( $(stat -c %s "$base.trained.onnx.data") / 1000000 )) MB")"
  read -r rc _ _ _ < <(measure "$base.trained.compile.log" "$bin/loomc" compile \
    "$base.trained.onnx" -o "$base.trained.loom")
  if [ "$rc" != 0 ]; then fail_row "$size" "compile exported" "$base.trained.compile.log"; return; fi
  rm -rf "$base.trained_out" "$base.trained_ort"; mkdir -p "$base.trained_out" "$base.trained_ort"
  "$bin/loom-run" "$base.trained.loom" --in "input_ids=${base}_in.npy" \
    --out-dir "$base.trained_out" --threads "$threads" > "$base.trained.run.log" 2>&1 ||
    { fail_row "$size" "run exported" "$base.trained.run.log"; return; }
  node "$root/test/tools/ort_run.js" "$base.trained.onnx" --in "${base}_in.npy" \
    --save-dir "$base.trained_ort" > "$base.trained.ort.log" 2>&1 ||
    { fail_row "$size" "ORT on exported" "$base.trained.ort.log"; return; }
  local check
  check=$($py - "$base.trained_out/logits.npy" "$base.trained_ort/output_0.npy" "${base}_out.npy" <<'PY'
import sys
import numpy as np
loom, ort, before = (np.load(p).astype(np.float64) for p in sys.argv[1:4])
err = float(np.max(np.abs(loom - ort)))
moved = float(np.max(np.abs(loom - before)))
ok = np.allclose(loom, ort, rtol=1e-3, atol=1e-3) and moved > 1e-4
print(f"max |Loom - ORT| {err:.2g} {'ok' if ok else 'MISMATCH'}"
      f" (trained logits moved up to {moved:.2g} from the initial model's)")
PY
)
  printf '%-6s %-24s %s\n' "$size" "exported 1x$seq" "$check"
  # The trained artifact itself against its export: the loss the training
  # step reports on one batch after resuming from the checkpoint (computed
  # before its update) against the cross entropy of the export's logits on
  # that batch (ONNX Runtime).
  $py -c "import numpy as np, sys; d = np.load(sys.argv[1]); np.savez(sys.argv[2], **{k: v[:$b] for k, v in d.items()}); np.save(sys.argv[3], d['input_ids'][:$b])" \
    "$base.npz" "$base.batch.npz" "$base.batch_ids.npy"
  rm -rf "$base.batch_ort"; mkdir -p "$base.batch_ort"
  "$bin/loom-run" "$art" --resume "$base.loomckpt" --data "$base.batch.npz" --steps 1 \
    --batch "$b" --threads "$threads" --log-every 1 > "$base.resume.log" 2>&1 ||
    { fail_row "$size" "resume trained" "$base.resume.log"; return; }
  node "$root/test/tools/ort_run.js" "$base.trained.onnx" --in "$base.batch_ids.npy" \
    --save-dir "$base.batch_ort" > "$base.batch_ort.log" 2>&1 ||
    { fail_row "$size" "ORT on exported b$b" "$base.batch_ort.log"; return; }
  check=$($py - "$base.resume.log" "$base.batch_ort/output_0.npy" "$base.batch.npz" <<'PY'
import re
import sys
import numpy as np
log, logits, batch = sys.argv[1:4]
loss = float(re.search(r"^step \d+/\d+  loss (\S+)", open(log).read(), re.M).group(1))
x = np.load(logits).astype(np.float64)
y = np.load(batch)["labels"]
m = x.max(-1, keepdims=True)
lse = np.log(np.exp(x - m).sum(-1)) + m[..., 0]
ce = float((lse - np.take_along_axis(x, y[..., None], -1)[..., 0]).mean())
ok = abs(ce - loss) <= 1e-4 * max(1.0, abs(loss))
print(f"trained artifact's loss {loss:.6g}, export's cross entropy {ce:.6g}: "
      f"{'equal' if ok else 'MISMATCH'}")
PY
)
  printf '%-6s %-24s %s\n' "$size" "artifact vs export b$b" "$check"
  rm -f "$base.trained.loom" "$base.loomckpt"
}

min_batch=$(printf '%s\n' $batches | sort -n | head -1)
echo "bench/scale: $(nproc) cores, $threads threads, $seq tokens, training batches $batches, $steps steps ($warmup warm-up), $runs inference runs; $(date -u +%F)"
printf "$fmt" size case metric loom peer loom/peer peer
for size in $sizes; do
  name="gpt2_$size"
  base="$out/$name"
  # 0. Model, weights and data (remade when the maker, the model class or
  #    the batch changed).
  stamp="batch $max_batch seq $seq"
  if [ ! -f "$base.stamp" ] || [ "$(cat "$base.stamp")" != "$stamp" ] ||
     [ "$here/make_gpt2.py" -nt "$base.stamp" ] ||
     [ "$root/test/models/make_models.py" -nt "$base.stamp" ]; then
    rm -f "$base.stamp"
    read -r rc wall _ rss < <(measure "$base.make.log" $py "$here/make_gpt2.py" \
      --size "$size" --batch "$max_batch" --seq "$seq" -o "$out")
    if [ "$rc" != 0 ]; then fail_row "$size" "make (PyTorch)" "$base.make.log"; continue; fi
    echo "$stamp" > "$base.stamp"
    row "$size" "make (PyTorch export)" "wall s" - "$wall" "make_gpt2.py, peak RSS $(gb "$rss") GB"
  fi
  onnx_mb=$(( ($(stat -c %s "$base.onnx") +
               $( [ -f "$base.onnx.data" ] && stat -c %s "$base.onnx.data" || echo 0)) / 1000000 ))

  # 1. Inference compile against ORT session creation.
  read -r rc wall cpu rss < <(measure "$base.compile.log" "$bin/loomc" compile \
    "$base.onnx" -o "$base.loom")
  read -r orc owall _ orss < <(measure "$base.ort_session.log" node \
    "$here/ort_session.js" "$base.onnx" --threads "$threads")
  ocreate=-
  [ "$orc" = 0 ] && ocreate=$(awk '/session create/ { printf "%.2f", $3 / 1000 }' "$base.ort_session.log")
  [ "$orc" = 0 ] || fail_row "$size" "ORT session create" "$base.ort_session.log"
  compiled=0
  if [ "$rc" = 0 ]; then
    compiled=1
    row "$size" "compile inference" "wall s" "$wall" "$ocreate" "ORT session create (loomc: $cpu s CPU; ONNX $onnx_mb MB)"
    row "$size" "compile inference" "peak RSS GB" "$(gb "$rss")" \
      "$([ "$orc" = 0 ] && gb "$orss" || echo -)" "ORT session create (node process)"
  else
    fail_row "$size" "compile inference" "$base.compile.log"
    [ "$orc" = 0 ] && row "$size" "ORT session create" "wall s" - "$ocreate" "peak RSS $(gb "$orss") GB"
  fi

  # 2. Inference latency and logits, batch 1 x 128.
  if [ "$compiled" = 1 ]; then
    rm -rf "$base.loom_out" "$base.ort_out"; mkdir -p "$base.loom_out" "$base.ort_out"
    read -r rc _ _ rss < <(measure "$base.infer.log" "$bin/loom-run" "$base.loom" \
      --in "input_ids=${base}_in.npy" --out-dir "$base.loom_out" \
      --threads "$threads" --bench "$runs" --warmup 2)
    read -r orc _ _ orss < <(measure "$base.ort_bench.log" node \
      "$root/bench/cpu_inference/ort_bench.js" "$base.onnx" \
      --in "input_ids=${base}_in.npy" --threads "$threads" --runs "$runs" --warmup 2)
    if [ "$rc" != 0 ]; then
      fail_row "$size" "inference 1x$seq" "$base.infer.log"
    else
      lm=$(median_ms "$base.infer.log")
      om=-; [ "$orc" = 0 ] && om=$(median_ms "$base.ort_bench.log")
      [ "$orc" = 0 ] || fail_row "$size" "ORT inference 1x$seq" "$base.ort_bench.log"
      row "$size" "inference 1x$seq" "median ms" "$lm" "$om" "ONNX Runtime, $threads threads, $runs runs"
      row "$size" "inference 1x$seq" "peak RSS GB" "$(gb "$rss")" \
        "$([ "$orc" = 0 ] && gb "$orss" || echo -)" "ONNX Runtime (node process)"
      # Logits: Loom's and ORT's against PyTorch's.
      node "$root/test/tools/ort_run.js" "$base.onnx" --in "${base}_in.npy" \
        --save-dir "$base.ort_out" > "$base.ort_run.log" 2>&1 || true
      check=$($py - "$base.loom_out/logits.npy" "$base.ort_out/output_0.npy" \
        "${base}_out.npy" <<'PY'
import os, sys
import numpy as np
want = np.load(sys.argv[3])
parts = []
for who, path in (("Loom", sys.argv[1]), ("ORT", sys.argv[2])):
    if not os.path.exists(path):
        parts.append(f"{who}: no output")
        continue
    got = np.load(path)
    if got.shape != want.shape:
        parts.append(f"{who}: shape {list(got.shape)}, PyTorch {list(want.shape)}: MISMATCH")
        continue
    err = float(np.max(np.abs(got.astype(np.float64) - want)))
    ok = np.allclose(got, want, rtol=1e-3, atol=1e-3)
    parts.append(f"{who} {err:.2g} {'ok' if ok else 'MISMATCH'}")
print("max |logits - PyTorch's|: " + ", ".join(parts)
      + f" (|logits| up to {float(np.max(np.abs(want))):.2g})")
PY
)
      printf '%-6s %-24s %s\n' "$size" "logits 1x$seq" "$check"
    fi
  else
    skip_row "$size" "inference 1x$seq" "no inference artifact"
  fi
  rm -f "$base.loom"  # its weights: a copy we no longer need on disk

  # 3 and 4. Training, for each batch.
  for b in $batches; do
    art="$base.train_b$b.loom"
    rm -f "$art"
    read -r rc wall cpu rss < <(measure "$base.train_b$b.compile.log" "$bin/loomc" \
      train "$base.onnx" --loss cross_entropy --logits logits --labels labels \
      --optimizer adamw --lr 1e-4 --weight-decay 0.01 --lr-schedule constant \
      --clip-norm 1.0 --batch "$b" -o "$art")
    # PyTorch's step, whether Loom compiled or not.
    read -r prc _ _ prss < <(measure "$base.torch_b$b.log" $py \
      "$root/bench/cpu_training/torch_bench.py" "$out" "$name" --steps "$steps" \
      --batch "$b" --threads "$threads" --warmup "$warmup")
    pm=-; [ "$prc" = 0 ] && pm=$(median_ms "$base.torch_b$b.log")
    [ "$prc" = 0 ] || fail_row "$size" "PyTorch step ${b}x$seq" "$base.torch_b$b.log"
    ptrss=-; [ "$prc" = 0 ] && ptrss=$(gb "$prss")
    if [ "$rc" != 0 ]; then
      fail_row "$size" "compile train b$b" "$base.train_b$b.compile.log"
      row "$size" "compile train b$b" "wall s" "$wall" - "failed after; peak RSS $(gb "$rss") GB"
      skip_row "$size" "train step ${b}x$seq" "no training artifact; PyTorch: $pm ms, peak RSS $ptrss GB"
      continue
    fi
    row "$size" "compile train b$b" "wall s" "$wall" - "loomc: $cpu s CPU"
    row "$size" "compile train b$b" "peak RSS GB" "$(gb "$rss")" -
    row "$size" "train artifact b$b" "GiB" \
      "$(awk -v s="$(stat -c %s "$art")" 'BEGIN { printf "%.3f", s / 2 ^ 30 }')" - \
      "no cap (tensors in the data section)"
    read -r rc _ _ rss < <(measure "$base.train_b$b.log" "$bin/loom-run" "$art" \
      --data "$base.npz" --steps "$steps" --batch "$b" --threads "$threads" \
      --warmup "$warmup" --log-every "$steps" --print-memory)
    if [ "$rc" != 0 ]; then
      fail_row "$size" "train step ${b}x$seq" "$base.train_b$b.log"
      row "$size" "train step ${b}x$seq" "median ms" - "$pm" "PyTorch eager, peak RSS $ptrss GB"
    else
      row "$size" "train step ${b}x$seq" "median ms" "$(median_ms "$base.train_b$b.log")" \
        "$pm" "PyTorch eager AdamW, $threads threads"
      row "$size" "train step ${b}x$seq" "peak RSS GB" "$(gb "$rss")" "$ptrss" "PyTorch eager"
      # Where Loom's memory goes (loom-run --print-memory), in the log.
      grep '^memory:' "$base.train_b$b.log" | sed 's/^/    /' || true
      row "$size" "train step ${b}x$seq" "mean loss" "$(mean_loss "$base.train_b$b.log")" \
        "$([ "$prc" = 0 ] && mean_loss "$base.torch_b$b.log" || echo -)" "over $steps steps (should agree)"
      [ "$b" = "$min_batch" ] && roundtrip "$size" "$base" "$art" "$b"
    fi
    rm -f "$art"
  done
done
