#!/usr/bin/env bash
# Round trips ONNX -> IR -> ONNX -> IR for every backend node test that
# imports (node-import-expected.txt) and for the PyTorch models under
# test/models, and compares the two IRs after --cse --loom-sort-constants
# (which only merge equal constants and put them in one order). `loomc
# export` runs the ONNX checker with strict shape inference itself; the
# exported models are checked again by python3-onnx's onnx.checker.
# With KEEP_DIR, the exports that round trip are kept there as NAME.onnx
# (export-ort.sh runs them in ONNX Runtime).
# Usage: export-roundtrip.sh LOOMC LOOM_OPT [KEEP_DIR]
set -uo pipefail
loomc="$1"; opt="$2"; keep="${3:-}"
here="$(cd "$(dirname "$0")" && pwd)"
models="$(cd "$here/../../models" && pwd)"
data=/usr/share/libonnx-testdata/data/node
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
if [ -n "$keep" ]; then rm -rf "$keep"; mkdir -p "$keep"; fi
equal=0; differ=0

normalize() { "$opt" --canonicalize --cse --loom-sort-constants "$1"; }

# roundtrip NAME MODEL: prints why on failure.
roundtrip() {
  local name="$1" model="$2"
  if ! "$loomc" import "$model" -o "$tmp/a.mlir" 2>"$tmp/err"; then
    echo "FAIL $name: import: $(head -c 300 "$tmp/err")"; return 1
  fi
  if ! "$loomc" export "$tmp/a.mlir" -o "$tmp/$name.onnx" 2>"$tmp/err"; then
    echo "FAIL $name: export: $(head -c 300 "$tmp/err")"; return 1
  fi
  if ! "$loomc" import "$tmp/$name.onnx" -o "$tmp/b.mlir" 2>"$tmp/err"; then
    echo "FAIL $name: re-import: $(head -c 300 "$tmp/err")"; return 1
  fi
  if ! diff <(normalize "$tmp/a.mlir") <(normalize "$tmp/b.mlir") \
      >"$tmp/diff"; then
    echo "FAIL $name: the IRs differ:"; head -20 "$tmp/diff"; return 1
  fi
  if [ -n "$keep" ]; then cp "$tmp/$name.onnx" "$keep/"; fi
}

while read -r name; do
  [ -z "$name" ] && continue
  if roundtrip "$name" "$data/$name/model.onnx"; then
    equal=$((equal + 1))
  else
    differ=$((differ + 1))
  fi
done < "$here/node-import-expected.txt"

for model in "$models"/*.onnx; do
  name="model_$(basename "$model" .onnx)"
  if roundtrip "$name" "$model"; then
    equal=$((equal + 1))
  else
    differ=$((differ + 1)); continue
  fi
  # The exported PyTorch models: onnx.checker with full shape inference.
  if ! /usr/bin/python3 -c "import onnx, sys
onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)" \
      "$tmp/$name.onnx" 2>"$tmp/err"; then
    echo "FAIL $name: onnx.checker: $(tail -3 "$tmp/err")"
    differ=$((differ + 1)); equal=$((equal - 1))
    if [ -n "$keep" ]; then rm -f "$keep/$name.onnx"; fi
  fi
done

echo "export-roundtrip: $equal equal, $differ differ"
[ "$differ" -eq 0 ]
