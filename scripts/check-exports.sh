#!/usr/bin/env bash
# What libloom_runtime.so exports (CTest runtime-exports): the C API
# (loom_*, marked LOOM_API in runtime.h) and the ABI the generated code
# calls (loom/common/CodegenAbi.h: loom_rt_*, loom_cpu_* and their MLIR C
# interfaces _mlir_ciface_loom_*), nothing else: the runtime is built with
# -fvisibility=hidden and the static libraries linked into it (protobuf,
# the schema, Gloo, the CUDA loader) do not re-export theirs
# (-Wl,--exclude-libs,ALL), and runtime/loom_runtime.map keeps the rest
# local. Prints each other symbol and fails.
# usage: check-exports.sh LIBRARY
set -uo pipefail
lib=${1:?usage: check-exports.sh libloom_runtime.so}
symbols=$(nm -D --defined-only "$lib" | awk '{print $NF}') || exit 2
[ -n "$symbols" ] || { echo "$lib: no exported symbols" >&2; exit 2; }
bad=$(printf '%s\n' "$symbols" |
      grep -vE '^(loom_[a-z0-9_]+|_mlir_ciface_loom_[a-z0-9_]+|_init|_fini)$')
if [ -n "$bad" ]; then
  echo "$lib exports symbols that are not Loom's API or ABI:" >&2
  printf '%s\n' "$bad" | head -50 >&2
  echo "($(printf '%s\n' "$bad" | wc -l) in all)" >&2
  exit 1
fi
grep -q '^loom_session_run$' <<<"$symbols" ||
  { echo "$lib does not export loom_session_run" >&2; exit 1; }
echo "$lib: $(printf '%s\n' "$symbols" | wc -l) symbols, all loom_*"
