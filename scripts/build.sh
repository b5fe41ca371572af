#!/usr/bin/env bash
# Installs the system dependencies, configures (once) and builds Loom into
# build/, executables in build/bin. Incremental: ccache keys on paths
# relative to the checkout, so a fresh clone reuses earlier compiles.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh

export CCACHE_BASEDIR="$PWD"
export CCACHE_NOHASHDIR=true
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros}"

if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
ninja -C build
