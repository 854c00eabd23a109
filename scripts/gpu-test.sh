#!/usr/bin/env bash
# The GPU tests as one command (one device call): configures with the CUDA backend into build-gpu (or
# $HAI_BUILD_DIR), builds, runs the CPU/GPU parity tests and the whole-step test (test_trainer_cuda) with a GPU
# required (HAI_REQUIRE_GPU=1: a missing GPU fails instead of skipping), then builds everything and runs the CPU
# unit tests. Exits non-zero if any part failed.
#   NCCL_NVLS_ENABLE=0 bash scripts/gpu-test.sh              # GPU tests, then the CPU unit tests
#   NCCL_NVLS_ENABLE=0 bash scripts/gpu-test.sh --gpu-only   # builds and runs the GPU tests alone
# NOTE: it does not run setup.sh: the GPU machine has every dependency but no apt and no network.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${HAI_BUILD_DIR:-$root/build-gpu}
gpu_only=false
if [[ "${1:-}" == --gpu-only ]]; then gpu_only=true; fi
export NCCL_NVLS_ENABLE=0
export HAI_REQUIRE_GPU=1
jobs=$(nproc)

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
cmake -S "$root" -B "$build_dir" -G Ninja -DHAI_CUDA=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$build_dir" -j "$jobs" --target test_device_cuda test_trainer_cuda

status=0
echo "gpu-test: CPU/GPU parity tests"
"$build_dir/tests/test_device_cuda" || status=1
echo "gpu-test: one training step, GPU against CPU"
"$build_dir/tests/test_trainer_cuda" || status=1
if [[ "$gpu_only" == true ]]; then exit "$status"; fi

echo "gpu-test: CPU unit tests"
cmake --build "$build_dir" -j "$jobs" || exit 1
(cd "$build_dir" && ctest -L unit -E '^Cuda' --output-on-failure -j "$jobs" --timeout 600) || status=1
exit "$status"
