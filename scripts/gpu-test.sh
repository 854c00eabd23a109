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
# (test_nccl_watchdog) and hai-train on two GPUs against one (test_multi_gpu_training: dp 2, ep 2, pp 2 DualPipe,
# tp 2; and tp 2's fp32 step 1 against the CPU),
# and skips the CPU unit tests.
# Every test binary runs under a time limit (HAI_GPU_TEST_TIMEOUT seconds, default 300): a test that hangs (a GPU
# collective waiting forever) fails and the next one runs, instead of using up the machine's time. The summary at
# the end gives each binary's result (passed, FAILED, or TIMED OUT at the limit) and seconds, and the total.
# Tests assert correctness only: the kernels' throughput is measured by hai-bench (scripts/bench.sh).
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
timeout_s=${HAI_GPU_TEST_TIMEOUT:-300}
limit=(timeout -k 10 "$timeout_s")
summary=()
tests_start=$SECONDS

# run_test NAME COMMAND...: runs COMMAND under the time limit and records NAME's result and seconds for the summary;
# sets status=1 if it failed or timed out.
run_test() {
  local name=$1 start=$SECONDS rc=0 result=passed
  shift
  echo "gpu-test: $name"
  "${limit[@]}" "$@" || rc=$?
  if (( rc == 124 || rc == 137 )); then
    result="TIMED OUT (limit ${timeout_s} s)"
  elif (( rc != 0 )); then
    result="FAILED (exit $rc)"
  fi
  (( rc == 0 )) || status=1
  summary+=("$(printf '%-36s %-26s %5d s' "$name" "$result" $((SECONDS - start)))")
}

print_summary() {
  echo "gpu-test: summary"
  local line
  for line in "${summary[@]}"; do echo "  $line"; done
  echo "  total $((SECONDS - tests_start)) s of tests ($SECONDS s with the build), status $1"
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
cmake -S "$root" -B "$build_dir" -G Ninja -DHAI_CUDA=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
status=0
if [[ "$multi_gpu_only" == false ]]; then
  cmake --build "$build_dir" -j "$jobs" --target test_device_cuda test_trainer_cuda
  tests_start=$SECONDS
  run_test "test_device_cuda (CPU/GPU parity)" "$build_dir/tests/test_device_cuda"
  run_test "test_trainer_cuda (a step, GPU vs CPU)" "$build_dir/tests/test_trainer_cuda"
fi
if [[ "$gpu_only" == true ]]; then print_summary "$status"; exit "$status"; fi
if [[ "$multi_gpu" == true ]]; then
  gpus=$(nvidia-smi -L | wc -l)
  if (( gpus < 2 )); then echo "gpu-test: --multi-gpu needs two GPUs, sees $gpus" >&2; exit 1; fi
  cmake --build "$build_dir" -j "$jobs" --target test_comm_cuda nccl_communicator_mpi_test \
    host_device_communicator_mpi_test test_nccl_watchdog test_multi_gpu_training || exit 1
  [[ "$multi_gpu_only" == true ]] && tests_start=$SECONDS
  mpirun=(mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE)
  run_test "test_comm_cuda (GPU-side watchdog)" "$build_dir/tests/test_comm_cuda"
  run_test "nccl_communicator_mpi_test (2 GPUs)" "${mpirun[@]}" "$build_dir/tests/nccl_communicator_mpi_test"
  run_test "host_device_communicator_mpi_test" "${mpirun[@]}" "$build_dir/tests/host_device_communicator_mpi_test"
  run_test "test_nccl_watchdog (end to end)" "$build_dir/tests/test_nccl_watchdog"
  run_test "test_multi_gpu_training (2 vs 1)" "$build_dir/tests/test_multi_gpu_training"
  print_summary "$status"
  exit "$status"
fi

echo "gpu-test: CPU unit tests"
cmake --build "$build_dir" -j "$jobs" || exit 1
ctest_start=$SECONDS
(cd "$build_dir" && ctest -L unit -E '^Cuda' --output-on-failure -j "$jobs" --timeout 600) || { status=1; ctest_failed=1; }
summary+=("$(printf '%-36s %-26s %5d s' "CPU unit tests (ctest -L unit)" \
  "$([[ -n "${ctest_failed:-}" ]] && echo FAILED || echo passed)" $((SECONDS - ctest_start)))")
print_summary "$status"
exit "$status"
