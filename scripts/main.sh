#!/usr/bin/env bash
# The main job on the CPU default: install dependencies, build Loom, build
# the GPT-2 example with the C++ GraphBuilder and print its verified graph
# IR. Later stages (compile, train, run) extend this script.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
build/bin/loom-example-gpt2 "$@"
