#!/usr/bin/env bash
# Configures and builds hai-train into build/ (or $HAI_BUILD_DIR). Extra arguments go to cmake's configure step,
# e.g. scripts/build.sh -DHAI_CUDA=OFF.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${HAI_BUILD_DIR:-$root/build}
generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  cmake -S "$root" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
elif [[ $# -gt 0 ]]; then
  cmake "$build_dir" "$@"
fi
cmake --build "$build_dir" -j "$(nproc)"
