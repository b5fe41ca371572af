#!/usr/bin/env bash
# Installs every system dependency of Loom from Debian's registry. Idempotent:
# packages already present are skipped, and nothing is fetched from elsewhere.
set -euo pipefail

PKGS=(cmake ninja-build g++ ccache lld clang-format
      llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools
      libgtest-dev libgmock-dev libprotobuf-dev protobuf-compiler
      libonnx-dev libonnx-testdata python3-onnx python3-numpy libgloo-dev
      libopenblas-dev libdnnl-dev zlib1g-dev libcpp-httplib-dev nlohmann-json3-dev
      clang-19 libclang-rt-19-dev
      pybind11-dev python3-dev python3-pytest python3-torch openmpi-bin)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
