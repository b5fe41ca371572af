#!/usr/bin/env bash
# All-reduce bus bandwidth of Loom's Gloo communicator against a plain
# Gloo allreduce_ring loop at the same sizes, with 2 and 4 local ranks
# (loom-launch), interleaved rounds; prints Loom / Gloo per size.
#
# usage: bench/distributed/run.sh [--ranks "2 4"] [--rounds R] [--sizes N,...]
# needs: build/ (scripts/build.sh)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
RANKS="2 4"; rounds=5; sizes=256,4096,65536,1048576,4194304
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) RANKS=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    *) echo "usage: $0 [--ranks LIST] [--rounds R] [--sizes N,...]"; exit 2 ;;
  esac
done
bin="$root/build/bin"
for n in $RANKS; do
  store=$(mktemp -d)
  "$bin/loom-launch" --nproc "$n" -- "$bin/loom-bench-allreduce" "$store" \
    --rounds "$rounds" --sizes "$sizes" | sed 's/^\[rank 0\] //'
  rm -rf "$store"
  echo
done
