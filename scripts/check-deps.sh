#!/usr/bin/env bash
# The layers' include directions (docs/architecture.md), checked on the
# sources (CTest check-deps):
#   1. nothing outside runtime/ includes runtime/src/ (the runtime's
#      private headers), except the files in ALLOWED below;
#   2. runtime/, common/, tools/loom-run/ and tools/loom-serve/ include
#      nothing of the compiler: compiler/, passes/, dialects/, frontends/,
#      mlir/, llvm/ or llvm-c/;
#   3. common/ includes nothing of the runtime (runtime/, loom/runtime.h).
# Prints each offending line and fails.
# usage: check-deps.sh [SOURCE_DIR]
set -uo pipefail
src=${1:-$(dirname "$0")/..}
cd "$src" || exit 2

# Known includes of runtime/src/ from outside runtime/ that are still to
# move behind a public header; remove a line once its file is clean.
ALLOWED=(
  test/unit/            # gtests of the runtime's internals
  test/launch/CommProbe.cpp
  bench/distributed/allreduce_bench.cpp  # times the Gloo communicator itself
  tools/loom-nvrtc-check/loom-nvrtc-check.cpp  # the runtime's NVRTC wrapper
  tools/loomc/CudaTarget.cpp  # loomc --arch compiles with the runtime's NVRTC wrapper
)

include_re='^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]'
sources=(--include='*.h' --include='*.hpp' --include='*.c' --include='*.cc'
         --include='*.cpp' --include='*.inc')
status=0

# Top-level source directories (no build trees, no .git).
dirs=()
for d in */; do
  d=${d%/}
  case $d in build* | runtime) continue ;; esac
  dirs+=("$d")
done

# 1. runtime/src/ from outside runtime/.
hits=$(grep -rnE "${sources[@]}" "${include_re}runtime/src/" "${dirs[@]}" || true)
bad=$(printf '%s\n' "$hits" | while IFS= read -r line; do
  [ -z "$line" ] && continue
  file=${line%%:*}
  ok=0
  for a in "${ALLOWED[@]}"; do
    [[ $file == "$a"* ]] && ok=1
  done
  [ $ok = 0 ] && printf '%s\n' "$line"
done)
if [ -n "$bad" ]; then
  printf '%s\n' "$bad"
  echo "error: files outside runtime/ include the runtime's private headers" \
       "(above); use a public header (runtime/include/loom, common/include/loom/common)"
  status=1
fi

# 2. The compiler from the runtime side.
if grep -rnE "${sources[@]}" \
    "${include_re}(compiler|passes|dialects|frontends|mlir|llvm|llvm-c)/" \
    runtime common tools/loom-run tools/loom-serve; then
  echo "error: the runtime side (runtime/, common/, loom-run, loom-serve)" \
       "includes compiler headers (above)"
  status=1
fi

# 3. The runtime from common/.
if grep -rnE "${sources[@]}" "${include_re}(runtime/|loom/runtime\.h)" common; then
  echo "error: common/ includes the runtime (above); common/ is below it"
  status=1
fi

[ $status = 0 ] && echo "check-deps: the include directions hold"
exit $status
