// A two-rank job that hangs in an NCCL collective, for the GPU watchdog test: `nccl_hang TIMEOUT_MS SLEEP_S` builds
// an NCCL communicator with TIMEOUT_MS as its collective timeout, runs two all_reduces (#1, #2) on every rank, then
// rank 1 sleeps SLEEP_S seconds before the third (#3), which the other rank has queued on its GPU and waits for.
// Exits 0 only if nothing aborted it.

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "framework/comm/cuda/nccl_communicator.h"
#include "framework/comm/cuda/rank_gpu.h"
#include "framework/comm/mpi_runtime.h"
#include "framework/core/check.h"
#include "framework/core/logging.h"
#include "framework/tensor/tensor.h"

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  std::chrono::milliseconds timeout(std::stoll(argv[1]));
  std::chrono::seconds sleep(std::stoll(argv[2]));
  hai::MpiRuntime runtime;
  MPI_Comm world = MPI_COMM_NULL;
  HAI_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &world));
  hai::Device device = hai::choose_rank_gpu(world);
  hai::NcclCommunicator nccl(world, device, {.stream = {}, .collective_timeout = timeout});
  hai::init_logging(nccl.rank(), true);
  hai::OwnedTensor value = hai::zero_tensor(hai::Shape{1}, hai::DType::f32, device);  // [1]
  nccl.all_reduce(value, hai::ReduceOp::sum);
  nccl.all_reduce(value, hai::ReduceOp::sum);
  nccl.synchronize();
  if (nccl.rank() == 1) std::this_thread::sleep_for(sleep);
  nccl.all_reduce(value, hai::ReduceOp::sum);
  nccl.synchronize();
  return 0;
}
