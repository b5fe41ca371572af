#!/usr/bin/env bash
# The libFuzzer targets (docs/hardening.md): the ONNX importer, the artifact
# loader, the checkpoint loader, built with clang-19 and ASan + UBSan in
# build-fuzz/ (CMake option LOOM_FUZZ: only what the targets need).
#
#   scripts/fuzz.sh build                  configure (once) and build them
#   scripts/fuzz.sh seed TARGET            seed TARGET's corpus (needs build/)
#   scripts/fuzz.sh run TARGET SECONDS [libFuzzer flags...]
#   scripts/fuzz.sh ci TARGET [SECONDS]    CTest's fuzz-TARGET: build, seed,
#                                          replay the regressions, fuzz 60 s
#                                          (seed $LOOM_FUZZ_SEED, default 1)
#
# TARGET is onnx, artifact or checkpoint. Seeds: test/models/*.onnx and the
# training models (onnx); artifacts that build/bin/loomc compiles
# (artifact); checkpoints of a short training run with build/bin/loom-run
# (checkpoint). The corpus grows in build-fuzz/corpus/TARGET between runs;
# crashes land in build-fuzz/crashes/TARGET. Reproduce one with
# `build-fuzz/bin/loom-fuzz-TARGET FILE`; add it under
# test/fuzz/regressions/TARGET/ with its fix.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
FUZZ_BUILD="${LOOM_FUZZ_BUILD:-$ROOT/build-fuzz}"
MAIN_BUILD="${LOOM_BUILD:-$ROOT/build}"
LOCK="${LOOM_BUILD_LOCK:-/tmp/loom-build.lock}"
export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=true
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros}"

# Leaks are not what these targets look for (MLIR's uniquing keeps memory
# per context, protobuf's per process). Manual poisoning is off: LLVM's
# BumpPtrAllocator, inlined from its header into our instrumented code,
# poisons a whole new slab and unpoisons only what it hands out, while
# libMLIR.so (not instrumented) allocates from the same slab without
# unpoisoning, so our code reading such an object (a type, an attribute)
# reports a use-after-poison that is no bug (docs/hardening.md). Heap
# errors (use-after-free, overflows) are still caught: they need no
# manual poisoning.
ASAN_DEFAULTS="detect_leaks=0:allow_user_poisoning=0"

die() { echo "fuzz.sh: $*" >&2; exit 1; }

target_ok() {
  case "$1" in onnx|artifact|checkpoint) ;; *) die "unknown target '$1' (onnx, artifact, checkpoint)";; esac
}

build() {
  command -v clang++-19 >/dev/null || die "clang++-19 is missing (scripts/install-deps.sh)"
  if [ ! -f "$FUZZ_BUILD/build.ninja" ]; then
    CC=clang-19 CXX=clang++-19 cmake -S "$ROOT" -B "$FUZZ_BUILD" -G Ninja \
      -DLOOM_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  fi
  local targets=(loom-fuzz-onnx loom-fuzz-artifact loom-fuzz-checkpoint)
  if ninja -C "$FUZZ_BUILD" -n "${targets[@]}" | grep -q "no work to do"; then
    return
  fi
  # One build at a time on a shared machine.
  flock "$LOCK" ninja -C "$FUZZ_BUILD" "${targets[@]}"
}

seed() {
  local t="$1" dir="$FUZZ_BUILD/corpus/$1"
  mkdir -p "$dir"
  case "$t" in
  onnx)
    cp test/models/*.onnx "$dir/"
    for m in test/training/*.onnx; do cp "$m" "$dir/train-$(basename "$m")"; done
    ;;
  artifact)
    [ -x "$MAIN_BUILD/bin/loomc" ] || die "no $MAIN_BUILD/bin/loomc to compile seed artifacts"
    for m in add dense linreg-train mean-train; do
      [ -f "$dir/$m.loom" ] ||
        "$MAIN_BUILD/bin/loomc" compile "test/runtime/Inputs/$m.mlir" -o "$dir/$m.loom"
    done
    ;;
  checkpoint)
    [ -x "$MAIN_BUILD/bin/loom-run" ] || die "no $MAIN_BUILD/bin/loom-run to write seed checkpoints"
    if [ ! -f "$dir/linreg.loomckpt" ]; then
      local tmp
      tmp="$(mktemp -d)"
      "$MAIN_BUILD/bin/loomc" compile test/runtime/Inputs/linreg-train.mlir -o "$tmp/lr.loom"
      /usr/bin/python3 test/runtime/Inputs/linreg_train.py data "$tmp/d.npz"
      "$MAIN_BUILD/bin/loom-run" "$tmp/lr.loom" --data "$tmp/d.npz" --steps 3 \
        --batch 4 --save "$dir/linreg.loomckpt" >/dev/null
      rm -rf "$tmp"
    fi
    ;;
  esac
  # Earlier crashes stay in the corpus.
  if [ -d "test/fuzz/regressions/$t" ]; then
    cp test/fuzz/regressions/"$t"/* "$dir/" 2>/dev/null || true
  fi
}

run() {
  local t="$1" seconds="$2"
  shift 2
  local bin="$FUZZ_BUILD/bin/loom-fuzz-$t"
  [ -x "$bin" ] || die "$bin is not built (scripts/fuzz.sh build)"
  mkdir -p "$FUZZ_BUILD/crashes/$t"
  ASAN_OPTIONS="${ASAN_OPTIONS:-$ASAN_DEFAULTS}" \
  UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}" \
    "$bin" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 \
    -artifact_prefix="$FUZZ_BUILD/crashes/$t/" -print_final_stats=1 "$@" \
    "$FUZZ_BUILD/corpus/$t"
}

ci() {
  local t="$1" seconds="${2:-60}"
  build
  seed "$t"
  # Every regression loads once (a crash fails the test).
  if compgen -G "test/fuzz/regressions/$t/*" >/dev/null; then
    ASAN_OPTIONS="$ASAN_DEFAULTS" "$FUZZ_BUILD/bin/loom-fuzz-$t" \
      test/fuzz/regressions/"$t"/* 2>&1 | tail -1
  fi
  local log="$FUZZ_BUILD/fuzz-$t.log"
  # A fixed seed (LOOM_FUZZ_SEED; 0 lets libFuzzer pick one): the same
  # build from the same seed corpus mutates the same way (a change to the
  # covered code changes the path). Fuzz longer and with other seeds with
  # `run` (docs/hardening.md).
  if ! run "$t" "$seconds" -seed="${LOOM_FUZZ_SEED:-1}" >"$log" 2>&1; then
    tail -60 "$log"
    die "fuzz-$t failed: the input is in $FUZZ_BUILD/crashes/$t/"
  fi
  local execs
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  echo "fuzz-$t: ${execs:-?} executions in $seconds s, no crash ($(ls "$FUZZ_BUILD/corpus/$t" | wc -l) inputs in the corpus)"
}

cmd="${1:-}"
shift || true
case "$cmd" in
build) build ;;
seed) target_ok "${1:-}"; seed "$1" ;;
run) target_ok "${1:-}"; [ -n "${2:-}" ] || die "run TARGET SECONDS"; run "$@" ;;
ci) target_ok "${1:-}"; ci "$@" ;;
*) sed -n '2,20p' "$0"; exit 2 ;;
esac
