#!/usr/bin/env bash
# Imports every node test of the ONNX backend test data (libonnx-testdata)
# with loomc and prints "imported N, not imported M", and the same for the
# core set: the tests whose ops are all in test/tools/core-ops.txt. Fails
# when loomc crashes on any model (bad input must get an error, never a crash), when a model
# listed in node-import-expected.txt no longer imports, or when the core
# tests that do not import differ from node-import-failures.txt, which
# lists each with loomc's reason. --update rewrites both lists.
# Usage: node-import.sh LOOMC [--update]
set -uo pipefail
loomc="$1"
here="$(cd "$(dirname "$0")" && pwd)"
tools="$(cd "$here/../../tools" && pwd)"
data=/usr/share/libonnx-testdata/data/node
expected="$here/node-import-expected.txt"
failures="$here/node-import-failures.txt"
if [ ! -d "$data" ]; then
  echo "node-import: $data missing (apt-get install libonnx-testdata)"
  exit 1
fi
CORE_OPS="$(grep -v '^#' "$tools/core-ops.txt")"
declare -A isCoreOp isCore isImported
for op in $CORE_OPS; do isCoreOp[$op]=1; done
while read -r name ops; do
  core=1
  for op in $ops; do [ -n "${isCoreOp[$op]:-}" ] || core=0; done
  [ $core -eq 1 ] && isCore[$name]=1
done < <(/usr/bin/python3 "$tools/onnx_node_ops.py" "$data"/*/)

err="$(mktemp)"; trap 'rm -f "$err"' EXIT
ok=0; failed=0; coreOk=0; coreFailed=0; status=0
imported=(); coreFailures=()
for dir in "$data"/*/; do
  name="$(basename "$dir")"
  "$loomc" import "$dir/model.onnx" -o /dev/null 2>"$err"
  rc=$?
  if [ $rc -eq 0 ]; then
    ok=$((ok + 1)); imported+=("$name"); isImported[$name]=1
    [ -n "${isCore[$name]:-}" ] && coreOk=$((coreOk + 1))
  elif [ $rc -eq 1 ]; then
    failed=$((failed + 1))
    if [ -n "${isCore[$name]:-}" ]; then
      coreFailed=$((coreFailed + 1))
      reason="$(grep -m1 'error: ' "$err" | sed 's/^.*error: //')"
      coreFailures+=("$name: ${reason:-no diagnostic}")
    fi
  else
    echo "CRASH (exit $rc): $name"; status=1
  fi
done
if [ "${2:-}" = "--update" ]; then
  printf '%s\n' "${imported[@]}" > "$expected"
  printf '%s\n' "${coreFailures[@]}" > "$failures"
fi
while read -r name; do
  [ -z "$name" ] && continue
  if [ -z "${isImported[$name]:-}" ]; then
    echo "REGRESSION: $name no longer imports"; status=1
  fi
done < "$expected"
if ! diff <(printf '%s\n' "${coreFailures[@]}") "$failures" >"$err"; then
  echo "the core-set failures differ from $(basename "$failures")" \
       "(--update rewrites it):"
  head -40 "$err"; status=1
fi
echo "node-import: imported $ok, not imported $failed"
echo "node-import: core set: $coreOk imported, $coreFailed failed" \
     "(reasons in $(basename "$failures"))"
exit $status
