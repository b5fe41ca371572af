#!/usr/bin/env bash
# Measured pipeline bubble of each schedule (gpipe, 1f1b, interleaved,
# zb-h1) against its analytic and simulated value, on CPU ranks of this
# machine (loom-launch, Gloo over loopback). See bubble.py.
#
# usage: bench/pipeline/run.sh [--stages S] [--micro-batches M] [--steps N]
#                              [--layers L] [--width W] [--batch B]
# needs: build/ (scripts/build.sh), python3-onnx and numpy
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$root/bench/pipeline/bubble.py" "$root/build/bin" "$work" "$@"
