#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit and multi-rank) with ctest.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
# NOTE: CI (CI=true) builds without debug information and at -O1: its heaviest sources compile in 50-75% of the
# time of RelWithDebInfo's -O2 -g, and the tests ran as fast (within 2%). Elsewhere build.sh's RelWithDebInfo is kept.
ci_flags=()
if [[ "${CI:-}" == true ]]; then
  ci_flags=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG"
            "-DCMAKE_CUDA_FLAGS_RELEASE=-O1 -DNDEBUG")
fi
"$root/scripts/build.sh" "${ci_flags[@]}" "$@"
build_dir=${HAI_BUILD_DIR:-$root/build}
cd "$build_dir"
# NOTE: without a GPU the GPU tests skip; ctest would list each of them twice, this prints one line for them all.
ctest --output-on-failure -j "$(nproc)" --timeout 600 | awk '
  /\*\*\*Skipped/ {
    skipped++; name = $0; sub(/^.*Test +#[0-9]+: /, "", name); sub(/ .*$/, "", name); split(name, parts, ".")
    suites[parts[1]]++; next
  }
  /^The following tests did not run:/ { listing = 1; next }
  listing && /\(Skipped\)$/ { next }
  { listing = 0; print }
  END {
    if (skipped == 0) exit
    line = "ctest: " skipped " tests skipped (GPU tests skip on a machine without a GPU):"
    for (suite in suites) line = line " " suite " (" suites[suite] ")"
    print line
  }'
