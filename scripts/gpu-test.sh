#!/usr/bin/env bash
# The GPU tests as one command (one device call): configures with the CUDA backend into build-gpu (or
# $HAI_BUILD_DIR), builds, runs the CPU/GPU parity tests and the whole-step test (test_trainer_cuda) with a GPU
# required (HAI_REQUIRE_GPU=1: a missing GPU fails instead of skipping), then builds everything and runs the CPU
# unit tests. Exits non-zero if any part failed.
#   NCCL_NVLS_ENABLE=0 bash scripts/gpu-test.sh              # GPU tests, then the CPU unit tests
#   NCCL_NVLS_ENABLE=0 bash scripts/gpu-test.sh --gpu-only   # builds and runs the GPU tests alone
#   NCCL_NVLS_ENABLE=0 bash scripts/gpu-test.sh --multi-gpu  # the GPU tests, then the multi-GPU ones (2 GPUs)
#   NCCL_NVLS_ENABLE=0 bash scripts/gpu-test.sh --multi-gpu-only  # the multi-GPU tests alone
# --multi-gpu (a machine with two GPUs; fails with fewer) adds, after the GPU tests: the GPU-side watchdog unit test
# (test_comm_cuda), the NCCL and host-device communicators against MPI (mpirun -np 2), the NCCL watchdog end to end
# (test_nccl_watchdog) and hai-train on two GPUs against one (test_multi_gpu_training: dp 2, ep 2, pp 2 DualPipe),
# and skips the CPU unit tests.
# Every test binary runs under a time limit (HAI_GPU_TEST_TIMEOUT seconds, default 300): a test that hangs (a GPU
# collective waiting forever) fails and the next one runs, instead of using up the machine's time.
# NOTE: it does not run setup.sh: the GPU machine has every dependency but no apt and no network.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${HAI_BUILD_DIR:-$root/build-gpu}
gpu_only=false
multi_gpu=false
multi_gpu_only=false
if [[ "${1:-}" == --gpu-only ]]; then gpu_only=true; fi
if [[ "${1:-}" == --multi-gpu ]]; then multi_gpu=true; fi
if [[ "${1:-}" == --multi-gpu-only ]]; then multi_gpu=true; multi_gpu_only=true; fi
export NCCL_NVLS_ENABLE=0
export HAI_REQUIRE_GPU=1
jobs=$(nproc)
limit=(timeout -k 10 "${HAI_GPU_TEST_TIMEOUT:-300}")

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
cmake -S "$root" -B "$build_dir" -G Ninja -DHAI_CUDA=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
status=0
if [[ "$multi_gpu_only" == false ]]; then
  cmake --build "$build_dir" -j "$jobs" --target test_device_cuda test_trainer_cuda
  echo "gpu-test: CPU/GPU parity tests"
  "${limit[@]}" "$build_dir/tests/test_device_cuda" || status=1
  echo "gpu-test: one training step, GPU against CPU"
  "${limit[@]}" "$build_dir/tests/test_trainer_cuda" || status=1
fi
if [[ "$gpu_only" == true ]]; then exit "$status"; fi
if [[ "$multi_gpu" == true ]]; then
  gpus=$(nvidia-smi -L | wc -l)
  if (( gpus < 2 )); then echo "gpu-test: --multi-gpu needs two GPUs, sees $gpus" >&2; exit 1; fi
  cmake --build "$build_dir" -j "$jobs" --target test_comm_cuda nccl_communicator_mpi_test \
    host_device_communicator_mpi_test test_nccl_watchdog test_multi_gpu_training || exit 1
  mpirun=("${limit[@]}" mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE)
  echo "gpu-test: the GPU-side watchdog"
  "${limit[@]}" "$build_dir/tests/test_comm_cuda" || status=1
  echo "gpu-test: NCCL communicator against MPI on two GPUs"
  "${mpirun[@]}" "$build_dir/tests/nccl_communicator_mpi_test" || status=1
  echo "gpu-test: host-device communicator against MPI on two GPUs"
  "${mpirun[@]}" "$build_dir/tests/host_device_communicator_mpi_test" || status=1
  echo "gpu-test: the NCCL watchdog end to end"
  "${limit[@]}" "$build_dir/tests/test_nccl_watchdog" || status=1
  echo "gpu-test: hai-train on two GPUs against one"
  "${limit[@]}" "$build_dir/tests/test_multi_gpu_training" || status=1
  exit "$status"
fi

echo "gpu-test: CPU unit tests"
cmake --build "$build_dir" -j "$jobs" || exit 1
(cd "$build_dir" && ctest -L unit -E '^Cuda' --output-on-failure -j "$jobs" --timeout 600) || status=1
exit "$status"
