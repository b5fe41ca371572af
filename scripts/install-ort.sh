#!/usr/bin/env bash
# Installs ONNX Runtime for Node (onnxruntime-node, from the npm registry;
# its package ships libonnxruntime.so for linux-x64, so no install script
# has to download anything) into ${LOOM_ORT_PREFIX:-~/.cache/loom/ort}.
# The tests that run exported models in ONNX Runtime use it when present
# and skip otherwise. Idempotent.
set -euo pipefail
prefix="${LOOM_ORT_PREFIX:-$HOME/.cache/loom/ort}"
if [ -f "$prefix/node_modules/onnxruntime-node/package.json" ]; then
  echo "onnxruntime-node already in $prefix"
  exit 0
fi
command -v npm >/dev/null || apt-get install -y --no-install-recommends nodejs npm
mkdir -p "$prefix"
npm install --prefix "$prefix" --ignore-scripts --no-audit --no-fund \
  onnxruntime-node
node -e "require('$prefix/node_modules/onnxruntime-node')" &&
  echo "onnxruntime-node installed in $prefix"
