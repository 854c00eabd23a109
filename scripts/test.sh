#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit and multi-rank) with ctest.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
# NOTE: CI (CI=true) builds without debug information and at -O1: the build takes about half as long and the
# tests run about as fast. Elsewhere build.sh's RelWithDebInfo is kept.
ci_flags=()
if [[ "${CI:-}" == true ]]; then
  ci_flags=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG" "-DCMAKE_CUDA_FLAGS_RELEASE=-O1 -DNDEBUG")
fi
"$root/scripts/build.sh" "${ci_flags[@]}" "$@"
build_dir=${HAI_BUILD_DIR:-$root/build}
cd "$build_dir"
ctest --output-on-failure -j "$(nproc)" --timeout 600
