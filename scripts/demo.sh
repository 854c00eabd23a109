#!/usr/bin/env bash
# The demo on a fresh machine: installs what is missing, builds, turns the fortunes corpus (Debian's fortunes
# packages) into a token dataset, and runs hai-train on the tiny model (configs/tiny.yaml).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${HAI_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
cd "$root"

# Demo data: one document per fortune, byte-level tokens. Rebuilt only when missing.
if [[ ! -f data/fortunes.idx || ! -f data/fortunes.bin ]]; then
  mkdir -p data
  "$build_dir/apps/hai-data/hai-data" --format fortune --output data/fortunes \
    --input /usr/share/games/fortunes
fi

"$build_dir/apps/hai-train/hai-train" --config configs/tiny.yaml "$@"
