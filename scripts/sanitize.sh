#!/usr/bin/env bash
# ASan + UBSan over the runtime (docs/hardening.md), CTest's asan-runtime:
# builds the runtime, loom-run, loom-launch and the runtime's gtests with
# g++ -fsanitize=address,undefined in build-asan/ (the MLIR-free targets
# only; the compiler is not sanitized), then runs
#   - the runtime gtests (LoomCollectivesTests, LoomCudaRuntimeTests),
#   - end-to-end lit suites with the sanitized loom-run and the main
#     build's loomc (build-asan/bin/loomc is a link to build/bin/loomc):
#     inference of the PyTorch-exported models, bad artifacts and inputs,
#     training with checkpoints saved and resumed, the trainer's errors,
#     profiles, data parallel under loom-launch, the fuzzers' regressions,
#     and saves killed at random points (test/runtime/checkpoint-kill.py).
# Any sanitizer report fails the run. Usage: scripts/sanitize.sh [LIT_ARGS]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
ASAN_BUILD="${LOOM_ASAN_BUILD:-$ROOT/build-asan}"
MAIN_BUILD="${LOOM_BUILD:-$ROOT/build}"
LOCK="${LOOM_BUILD_LOCK:-/tmp/loom-build.lock}"
export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=true
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros}"
start=$(date +%s)

[ -x "$MAIN_BUILD/bin/loomc" ] || { echo "sanitize.sh: no $MAIN_BUILD/bin/loomc (build the main build first)" >&2; exit 1; }

SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
if [ ! -f "$ASAN_BUILD/build.ninja" ]; then
  cmake -S "$ROOT" -B "$ASAN_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Sanitize \
    -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -g1 $SAN" -DCMAKE_C_FLAGS_SANITIZE="-O1 -g1 $SAN" \
    -DCMAKE_EXE_LINKER_FLAGS_SANITIZE="$SAN" \
    -DCMAKE_SHARED_LINKER_FLAGS_SANITIZE="$SAN" >/dev/null
fi
TARGETS=(LoomRuntime loom-run loom-launch loom-comm-probe loom-ckpt-writer LoomArtifactTests
         LoomCollectivesTests LoomCudaRuntimeTests)
flock "$LOCK" ninja -C "$ASAN_BUILD" "${TARGETS[@]}" | tail -1
built=$(date +%s)

# The compiler comes from the main build.
for tool in loomc loom-opt; do
  ln -sfn "$MAIN_BUILD/bin/$tool" "$ASAN_BUILD/bin/$tool"
done

# Reports also go to files: a test that expects a failure (`not loom-run`)
# would hide one on stderr.
REPORTS="$ASAN_BUILD/sanitizer-reports"
rm -rf "$REPORTS" && mkdir -p "$REPORTS"
export ASAN_OPTIONS="log_path=$REPORTS/asan:detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=0:suppressions=$ROOT/test/sanitizers/asan.supp"
export LSAN_OPTIONS="suppressions=$ROOT/test/sanitizers/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="log_path=$REPORTS/ubsan:print_stacktrace=1:halt_on_error=1"

status=0
for t in LoomArtifactTests LoomCollectivesTests LoomCudaRuntimeTests; do
  if ! "$ASAN_BUILD/bin/$t" --gtest_brief=1 >"$ASAN_BUILD/$t.log" 2>&1; then
    tail -80 "$ASAN_BUILD/$t.log"
    echo "sanitize.sh: $t failed under ASan/UBSan" >&2
    status=1
  else
    echo "$t: $(grep -E '^\[  PASSED  \]' "$ASAN_BUILD/$t.log")"
  fi
done

LIT_TESTS=(runtime/bad-artifacts.test runtime/outputs.test
           runtime/runtime-checks.test runtime/profile.test runtime/train.test
           runtime/train-errors.test runtime/mesh.test
           runtime/distributed-train.test training/train-errors.test
           compiler/pytorch-models-run.test fuzz/regressions.test)
paths=()
for t in "${LIT_TESTS[@]}"; do paths+=("$ASAN_BUILD/test/$t"); done
if ! /usr/bin/python3 /usr/lib/llvm-19/build/utils/lit/lit.py -sv "$@" "${paths[@]}"; then
  echo "sanitize.sh: an end-to-end test failed under ASan/UBSan" >&2
  status=1
fi
# Saves killed at random points, loaded by the sanitized trainer.
if ! /usr/bin/python3 test/runtime/checkpoint-kill.py \
    "$ASAN_BUILD/bin/loom-ckpt-writer" "$MAIN_BUILD/bin/loomc" \
    "$ASAN_BUILD/checkpoint-kill" --iterations 5; then
  status=1
fi
if compgen -G "$REPORTS/*" >/dev/null; then
  head -60 "$REPORTS"/*
  echo "sanitize.sh: sanitizer reports in $REPORTS" >&2
  status=1
fi
end=$(date +%s)
echo "sanitize.sh: build $((built - start)) s, tests $((end - built)) s, $([ $status = 0 ] && echo clean || echo FAILED)"
exit $status
