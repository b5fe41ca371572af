#!/usr/bin/env bash
# Runs the models export-roundtrip.sh exported (EXPORT_DIR/NAME.onnx) in
# ONNX Runtime and compares their outputs with the originals':
#  - the PyTorch models of test/models: the original in ONNX Runtime must
#    match PyTorch (rtol 1e-4, atol 1e-5: two runtimes), and the export
#    must match the original in ONNX Runtime (rtol 1e-5, atol 1e-6);
#  - every backend node test that round trips: the export must match the
#    original in ONNX Runtime on test_data_set_0 (rtol 1e-5, atol 1e-6);
#    where ONNX Runtime cannot run the original, the export is compared
#    with the test's expected outputs (rtol 1e-3, atol 1e-7, the backend
#    tests' tolerance).
# Exit 77 (skipped) when node or onnxruntime-node is missing
# (scripts/install-ort.sh installs it).
# Usage: export-ort.sh EXPORT_DIR
set -uo pipefail
exports="$1"
here="$(cd "$(dirname "$0")" && pwd)"
tools="$(cd "$here/../../tools" && pwd)"
models="$(cd "$here/../../models" && pwd)"
data=/usr/share/libonnx-testdata/data/node
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT

if ! command -v node >/dev/null; then
  echo "export-ort: node is not installed (scripts/install-ort.sh)"; exit 77
fi
: > "$tmp/none.jsonl"
node "$tools/ort_run.js" --batch "$tmp/none.jsonl" >/dev/null
rc=$?
if [ $rc -ne 0 ]; then exit $rc; fi
if [ ! -d "$exports" ]; then
  echo "export-ort: $exports missing (run onnx-export-roundtrip first)"
  exit 1
fi

# json_list FILE...: a JSON array of the existing files, in version order
# (input_2 before input_10).
json_list() {
  local out="" f
  while read -r f; do
    [ -e "$f" ] && out+="${out:+, }\"$f\""
  done < <(printf '%s\n' "$@" | sort -V)
  echo "[$out]"
}

jobs="$tmp/jobs.jsonl"
for model in "$models"/*.onnx; do
  base="$(basename "$model" .onnx)"
  ins="$(json_list "$models/$base".input_*.npy)"
  outs="$(json_list "$models/$base".output_*.npy)"
  echo "{\"name\": \"$base (ONNX Runtime vs PyTorch)\", \"model\": \"$model\"," \
       "\"in\": $ins, \"expect\": $outs, \"rtol\": 1e-4, \"atol\": 1e-5}" >>"$jobs"
  if [ ! -f "$exports/model_$base.onnx" ]; then
    echo "FAIL $base: no export (it did not round trip)"; exit 1
  fi
  echo "{\"name\": \"$base (export vs original)\"," \
       "\"model\": \"$exports/model_$base.onnx\", \"reference\": \"$model\"," \
       "\"in\": $ins, \"expect\": $outs}" >>"$jobs"
done

pairs=()
for export in "$exports"/*.onnx; do
  name="$(basename "$export" .onnx)"
  case "$name" in model_*) continue ;; esac
  set0="$data/$name/test_data_set_0"
  [ -d "$set0" ] || continue
  pairs+=("$set0" "$tmp/$name")
done
/usr/bin/python3 "$tools/pb2npy.py" "${pairs[@]}" || exit 1
for ((i = 1; i < ${#pairs[@]}; i += 2)); do
  dir="${pairs[$i]}"; name="$(basename "$dir")"
  ins="$(json_list "$dir"/input_*.npy)"
  outs="$(json_list "$dir"/output_*.npy)"
  echo "{\"name\": \"$name\", \"model\": \"$exports/$name.onnx\"," \
       "\"reference\": \"$data/$name/model.onnx\", \"in\": $ins," \
       "\"expect\": $outs}" >>"$jobs"
done

node "$tools/ort_run.js" --batch "$jobs"
