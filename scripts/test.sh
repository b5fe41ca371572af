#!/usr/bin/env bash
# Installs dependencies, builds Loom and runs every test through CTest:
# lit + FileCheck, GoogleTest units, the example checks, the format check
# and the generated-docs check.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
