#!/usr/bin/env bash
# Serving under load: loom-serve with the CPU inference benchmark's MLP
# (1024-4096-4096-1024, dynamic batch), loaded by loom-bench-serve over
# loopback at rising concurrency (throughput, p50/p99 latency, errors),
# then a soak at one concurrency sampling the server's resident memory;
# then the same levels against ONNX Runtime behind bench/serve/ort_serve.js
# (skipped without onnxruntime-node, scripts/install-ort.sh). The client
# and the servers share this machine's cores.
#
# usage: bench/serve/run.sh [--seconds S] [--soak-seconds T] [--levels 1,4,16,64]
#                           [--rows R] [--soak-concurrency C] [--no-peer]
#                           [--serve-flags "--max-batch 16 --max-wait-ms 1"]
# needs: build/ with loom-serve, loom-bench-serve and loomc
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
seconds=10; soak=300; levels=1,4,16,64; rows=1; soakc=16; peer=1
serve_flags="--max-batch 16 --max-wait-ms 1"
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --soak-seconds) soak=$2; shift 2 ;;
    --levels) levels=$2; shift 2 ;;
    --rows) rows=$2; shift 2 ;;
    --soak-concurrency) soakc=$2; shift 2 ;;
    --serve-flags) serve_flags=$2; shift 2 ;;
    --no-peer) peer=0; shift ;;
    *) sed -n 2,14p "$0"; exit 2 ;;
  esac
done
bin="$root/build/bin"
out="$root/build/bench/serve"
mkdir -p "$out"
[ -f "$out/mlp.onnx" ] || /usr/bin/python3 "$root/bench/cpu_inference/make_models.py" "$out" >/dev/null
[ -f "$out/mlp.loom" ] || "$bin/loomc" compile "$out/mlp.onnx" -o "$out/mlp.loom"

# Starts a server (its command line in "$@"), sets $pid and $port.
start() {
  "$@" > "$out/server.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    port=$(sed -n 's/.*listening on [0-9.]*:\([0-9]*\).*/\1/p' "$out/server.log")
    [ -n "$port" ] && return 0
    sleep 0.1
  done
  cat "$out/server.log"; kill "$pid"; exit 1
}

echo "== loom-serve ($serve_flags), $(nproc) cores"
# One request-handling thread per client, so that keep-alive connections
# do not queue behind each other.
start "$bin/loom-serve" --model mlp="$out/mlp.loom" --port 0 --threads 64 \
    --intra-op-threads 1 $serve_flags
status=0
"$bin/loom-bench-serve" --port "$port" --model mlp --rows "$rows" \
    --concurrency "$levels" --seconds "$seconds" --soak-seconds "$soak" \
    --soak-concurrency "$soakc" --pid "$pid" || status=1
curl -s "127.0.0.1:$port/metrics" | grep -E '^loom_serve_(batch_size_(sum|count)|arena_bytes|run_contexts|requests_total)' || true
kill -TERM "$pid"
wait "$pid" || { echo "loom-serve exited with $?"; status=1; }

ort="${LOOM_ORT_PREFIX:-$HOME/.cache/loom/ort}/node_modules/onnxruntime-node"
if [ "$peer" = 1 ] && [ -d "$ort" ]; then
  echo "== ONNX Runtime (onnxruntime-node $(node -p "require('$ort/package.json').version"), bench/serve/ort_serve.js)"
  start node "$root/bench/serve/ort_serve.js" --model mlp="$out/mlp.onnx" \
      --port 0 --threads 1
  "$bin/loom-bench-serve" --port "$port" --model mlp --rows "$rows" \
      --concurrency "$levels" --seconds "$seconds" --soak-seconds 0 || status=1
  kill -TERM "$pid"; wait "$pid" || true
elif [ "$peer" = 1 ]; then
  echo "== ONNX Runtime: skipped (scripts/install-ort.sh installs onnxruntime-node)"
fi
exit $status
