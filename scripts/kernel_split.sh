#!/usr/bin/env bash
# Where a training step's GPU time goes, kernel by kernel (the "ncu, base clocks" splits in docs/performance.md):
# builds hai-train with CUDA in build-gpu (or $HAI_BUILD_DIR), trains configs/bench_moe_1p7b.yaml for STEPS steps
# (default 3) under Nsight Compute collecting only each kernel's duration, and prints the per-kernel time a step of
# the steps after the first (scripts/kernel_split.py --steady). One H200: ~70 s a precision. The SMs run at base clocks; HAI_NCU_CLOCK_CONTROL=none
# leaves them at the clocks an unprofiled run gets (each kernel still runs alone).
#   NCCL_NVLS_ENABLE=0 bash scripts/kernel_split.sh OUT_DIR [--steps N] [--modes bf16,fp8] [--set key=value]...
# OUT_DIR receives ncu_<mode>.csv and split_<mode>.json.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${HAI_BUILD_DIR:-$root/build-gpu}
out=${1:?usage: kernel_split.sh OUT_DIR [--steps N] [--modes bf16,fp8] [--set key=value]...}
shift
steps=3
modes=bf16,fp8
overrides=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --steps) steps=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --set) overrides+=(--set "$2"); shift 2 ;;
    *) echo "kernel_split.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
export NCCL_NVLS_ENABLE=0
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
mkdir -p "$out"
cmake -S "$root" -B "$build_dir" -G Ninja -DHAI_CUDA=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build_dir" -j "$(nproc)" --target hai-train >/dev/null
for mode in ${modes//,/ }; do
  "$ncu" --metrics gpu__time_duration.sum --csv --print-units base --clock-control "${HAI_NCU_CLOCK_CONTROL:-base}" \
    "$build_dir/apps/hai-train/hai-train" --config "$root/configs/bench_moe_1p7b.yaml" --set train.steps="$steps" \
    --set logging.interval=1 --set checkpoint.save=false --set precision.mode="$mode" \
    --set logging.run_dir="$out/run_$mode" "${overrides[@]}" >"$out/ncu_$mode.csv" 2>"$out/ncu_$mode.log"
  echo "== $mode"
  python3 "$root/scripts/kernel_split.py" "$out/ncu_$mode.csv" "$steps" --steady --json "$out/split_$mode.json"
done
