#!/usr/bin/env bash
# Imports every node test of the ONNX backend test data (libonnx-testdata)
# with loomc and prints "imported N, not imported M". Fails when loomc
# crashes on any model (bad input must get an error, never a crash), or
# when a model listed in node-import-expected.txt no longer imports.
# Usage: node-import.sh LOOMC [--update]
set -uo pipefail
loomc="$1"
here="$(cd "$(dirname "$0")" && pwd)"
data=/usr/share/libonnx-testdata/data/node
expected="$here/node-import-expected.txt"
if [ ! -d "$data" ]; then
  echo "node-import: $data missing (apt-get install libonnx-testdata)"
  exit 1
fi
ok=0; failed=0; status=0
imported=()
declare -A isImported
for dir in "$data"/*/; do
  name="$(basename "$dir")"
  "$loomc" import "$dir/model.onnx" -o /dev/null 2>/tmp/loom-node-import.$$
  rc=$?
  if [ $rc -eq 0 ]; then
    ok=$((ok + 1)); imported+=("$name"); isImported[$name]=1
  elif [ $rc -eq 1 ]; then
    failed=$((failed + 1))
  else
    echo "CRASH (exit $rc): $name"; status=1
  fi
done
rm -f /tmp/loom-node-import.$$
if [ "${2:-}" = "--update" ]; then
  printf '%s\n' "${imported[@]}" > "$expected"
fi
while read -r name; do
  [ -z "$name" ] && continue
  if [ -z "${isImported[$name]:-}" ]; then
    echo "REGRESSION: $name no longer imports"; status=1
  fi
done < "$expected"
echo "node-import: imported $ok, not imported $failed"
exit $status
