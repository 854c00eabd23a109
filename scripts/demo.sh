#!/usr/bin/env bash
# The demo on a fresh machine: installs what is missing (scripts/setup.sh), builds only hai-data and hai-train (the
# CPU backend unless a GPU is usable), turns the fortunes corpus (Debian's fortunes packages) into a token dataset,
# trains configs/tiny.yaml for 800 steps on the CPU and checks that its final validation loss is the published one
# (README, docs/training-curve.md; tests/scripts/demo_docs_test.sh keeps those equal to DEMO_EVAL_LOSS below).
# Extra arguments go to hai-train (e.g. --set train.steps=100); the loss is then not checked.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${HAI_BUILD_DIR:-$root/build}
DEMO_EVAL_LOSS=2.3277  # the validation loss at step 800, nats per byte, to 4 decimals
run_dir=runs/tiny      # logging.run_dir of configs/tiny.yaml

"$root/scripts/setup.sh"
cd "$root"
started=$SECONDS

# A build directory made here builds with CI's flags (tests/CMakeLists.txt's -O1: they compile in about half the
# time of -O2 -g and train as fast); an existing one is used as it is configured.
if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  cuda=OFF  # NOTE: nvcc without a GPU would only add CUDA objects the demo never runs
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then cuda=AUTO; fi
  generator=()
  if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
  cmake -S "$root" -B "$build_dir" "${generator[@]}" -DHAI_CUDA=$cuda -DCMAKE_BUILD_TYPE=Release \
    "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG" "-DCMAKE_CUDA_FLAGS_RELEASE=-O1 -DNDEBUG"
fi
cmake --build "$build_dir" --target hai-data hai-train -j "$(nproc)"
built=$SECONDS

# Demo data: one document per fortune, byte-level tokens. Rebuilt only when missing.
if [[ ! -f data/fortunes.idx || ! -f data/fortunes.bin ]]; then
  "$build_dir/apps/hai-data/hai-data" --format fortune --output data/fortunes --input /usr/share/games/fortunes
fi

if [[ -f "$run_dir/checkpoints/latest" && $# -eq 0 ]]; then
  # NOTE: an earlier run is never overwritten: the demo scores it instead (remove runs/tiny to train it again).
  echo "demo: $run_dir holds an earlier run (checkpoint $(cat "$run_dir/checkpoints/latest")); scoring it instead" \
       "of training again (rm -rf $run_dir to start over)"
  "$build_dir/apps/hai-train/hai-train" --config configs/tiny.yaml --eval-only
  exit 0
fi
"$build_dir/apps/hai-train/hai-train" --config configs/tiny.yaml "$@"
echo "demo: built in $((built - started)) s, trained in $((SECONDS - built)) s"
if [[ $# -gt 0 ]]; then exit 0; fi

last_eval=$(grep '"eval_loss"' "$run_dir/metrics.jsonl" | tail -n 1)
loss=$(sed -E 's/.*"eval_loss":([-0-9.eE+]+).*/\1/' <<<"$last_eval")
printf -v loss '%.4f' "$loss"
if [[ "$last_eval" != '{"step":800,'* || "$loss" != "$DEMO_EVAL_LOSS" ]]; then
  echo "demo: the final validation loss is $loss ($last_eval), not the published $DEMO_EVAL_LOSS" \
       "(docs/training-curve.md): please report it" >&2
  exit 1
fi
echo "demo: validation loss $loss nats per byte at step 800, as published (docs/training-curve.md)"
