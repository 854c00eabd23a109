#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit and multi-rank) with ctest.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh" "$@"
build_dir=${HAI_BUILD_DIR:-$root/build}
cd "$build_dir"
ctest --output-on-failure -j "$(nproc)" --timeout 600
