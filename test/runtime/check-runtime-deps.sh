#!/usr/bin/env bash
# The runtime never depends on the compiler: neither libloom_runtime.so,
# loom-run nor loom-serve (when built) links libMLIR or libLLVM. The
# include directions (no mlir/ or llvm/ header under runtime/, common/,
# tools/loom-run/ or tools/loom-serve/) are scripts/check-deps.sh's.
# usage: check-runtime-deps.sh SOURCE_DIR LOOM_RUN LIBLOOM_RUNTIME [LOOM_SERVE]
set -euo pipefail
src=$1; loom_run=$2; lib=$3; loom_serve=${4:-}
status=0
for bin in "$loom_run" "$lib" $loom_serve; do
  if ldd "$bin" | grep -E 'libMLIR|libLLVM'; then
    echo "error: $bin links MLIR or LLVM (above)"
    status=1
  fi
done
[ $status = 0 ] && echo "runtime: no compiler libraries"
exit $status
