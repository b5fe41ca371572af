#!/usr/bin/env bash
# The runtime never depends on the compiler: no mlir/ or llvm/ header is
# included under runtime/, tools/loom-run/ or tools/loom-serve/, and neither
# libloom_runtime.so, loom-run nor loom-serve (when built) links libMLIR or
# libLLVM.
# usage: check-runtime-deps.sh SOURCE_DIR LOOM_RUN LIBLOOM_RUNTIME [LOOM_SERVE]
set -euo pipefail
src=$1; loom_run=$2; lib=$3; loom_serve=${4:-}
status=0
if grep -rnE '#\s*include\s*[<"](mlir|llvm|llvm-c)/' \
    "$src/runtime" "$src/tools/loom-run" "$src/tools/loom-serve"; then
  echo "error: the runtime includes compiler headers (above)"
  status=1
fi
for bin in "$loom_run" "$lib" $loom_serve; do
  if ldd "$bin" | grep -E 'libMLIR|libLLVM'; then
    echo "error: $bin links MLIR or LLVM (above)"
    status=1
  fi
done
[ $status = 0 ] && echo "runtime: no compiler headers, no compiler libraries"
exit $status
