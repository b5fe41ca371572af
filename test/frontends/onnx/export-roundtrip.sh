#!/usr/bin/env bash
# Round trips ONNX -> IR -> ONNX -> IR for every backend node test that
# imports (node-import-expected.txt) and for the PyTorch models under
# test/models, and compares the two IRs after --cse --loom-sort-constants
# (which only merge equal constants and put them in one order). `loomc
# export` runs the ONNX checker with strict shape inference itself; the
# exported models are checked again by python3-onnx's onnx.checker.
# With KEEP_DIR, the exports that round trip are kept there as NAME.onnx
# (export-ort.sh runs them in ONNX Runtime).
# One process does them all (loom-onnx-roundtrip); see its file comment.
# Usage: export-roundtrip.sh LOOM_ONNX_ROUNDTRIP [KEEP_DIR]
set -uo pipefail
tool="$1"; keep="${2:-}"
here="$(cd "$(dirname "$0")" && pwd)"
models="$(cd "$here/../../models" && pwd)"
data=/usr/share/libonnx-testdata/data/node
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
if [ -n "$keep" ]; then rm -rf "$keep"; mkdir -p "$keep"; fi

# Node tests that import but do not round trip, each with its reason, in
# export-roundtrip-skip.txt ("NAME: reason").
skip="$here/export-roundtrip-skip.txt"
while read -r name; do
  [ -n "$name" ] || continue
  grep -q "^$name:" "$skip" 2>/dev/null && continue
  echo "$name $data/$name/model.onnx"
done < "$here/node-import-expected.txt" > "$tmp/list"
for model in "$models"/*.onnx; do
  echo "model_$(basename "$model" .onnx) $model"
done >> "$tmp/list"
"$tool" "$tmp/list" --keep "$tmp/out" > "$tmp/log"
grep -v '^ok ' "$tmp/log" | grep -v '^roundtrip: '
equal=$(grep -c '^ok ' "$tmp/log"); differ=$(grep -c '^FAIL ' "$tmp/log")

# The exported PyTorch models: onnx.checker with full shape inference.
for model in "$models"/*.onnx; do
  name="model_$(basename "$model" .onnx)"
  [ -f "$tmp/out/$name.onnx" ] || continue
  if ! /usr/bin/python3 -c "import onnx, sys
onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)" \
      "$tmp/out/$name.onnx" 2>"$tmp/err"; then
    echo "FAIL $name: onnx.checker: $(tail -3 "$tmp/err")"
    differ=$((differ + 1)); equal=$((equal - 1))
    rm -f "$tmp/out/$name.onnx"
  fi
done
if [ -n "$keep" ]; then cp "$tmp"/out/*.onnx "$keep/" 2>/dev/null; fi

echo "export-roundtrip: $equal equal, $differ differ"
[ "$differ" -eq 0 ] && [ "$equal" -gt 0 ]
