#!/usr/bin/env bash
# Installs every Debian package Tessera needs, idempotently and quietly.
# Packages already present are skipped, so a second run costs a dpkg query.
set -euo pipefail

PACKAGES=(
  # LLVM/MLIR 22: all four are needed by find_package(MLIR)
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  # build
  cmake ninja-build ccache lld g++
  # tests
  googletest libgtest-dev
  # import (ONNX via protobuf), plans and reports (JSON)
  libonnx-dev libprotobuf-dev protobuf-compiler nlohmann-json3-dev
  # CPU runtime: MPI collectives and BLAS GEMMs
  libopenmpi-dev openmpi-bin libopenblas-dev
  # reference models and exporter (Debian's python3, not the one on PATH)
  python3-torch python3-onnx
  # ONNX node tests the importer is checked against
  libonnx-testdata
  # libFuzzer and the sanitizers' run-time (scripts/fuzz.sh)
  clang-14 libclang-rt-14-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${#missing[@]} package(s): ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done" >&2
