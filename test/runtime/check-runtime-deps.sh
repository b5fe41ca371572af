#!/usr/bin/env bash
# The runtime never depends on the compiler: no mlir/ or llvm/ header is
# included under runtime/ or tools/loom-run/, and neither libloom_runtime.so
# nor loom-run links libMLIR or libLLVM.
# usage: check-runtime-deps.sh SOURCE_DIR LOOM_RUN LIBLOOM_RUNTIME
set -euo pipefail
src=$1; loom_run=$2; lib=$3
status=0
if grep -rnE '#\s*include\s*[<"](mlir|llvm|llvm-c)/' \
    "$src/runtime" "$src/tools/loom-run"; then
  echo "error: the runtime includes compiler headers (above)"
  status=1
fi
for bin in "$loom_run" "$lib"; do
  if ldd "$bin" | grep -E 'libMLIR|libLLVM'; then
    echo "error: $bin links MLIR or LLVM (above)"
    status=1
  fi
done
[ $status = 0 ] && echo "runtime: no compiler headers, no compiler libraries"
exit $status
