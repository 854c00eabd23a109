#include "apps/hai-train/training_world.h"

#include <unistd.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include <mpi.h>
#include <spdlog/spdlog.h>

#include "framework/core/check.h"
#include "framework/tensor/device_memory.h"
#include "parallel/rank_values.h"

#if HAI_WITH_CUDA
#include "framework/comm/cuda/host_device_communicator.h"
#include "framework/comm/cuda/nccl_communicator.h"
#include "framework/comm/cuda/rank_gpu.h"
#endif

namespace hai {
namespace {

// The ranks of the job that share this process's node (its memory).
int ranks_on_this_node() {
  MPI_Comm node = MPI_COMM_NULL;
  HAI_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int ranks = 0;
  HAI_MPI_CHECK(MPI_Comm_size(node, &ranks));
  HAI_MPI_CHECK(MPI_Comm_free(&node));
  return ranks;
}

// Whether the ranks train on GPUs: for auto, whether every rank has a GPU of its own (agreed over `world`).
bool trains_on_gpus(RuntimeDevice setting, Communicator& world) {
  if (setting != RuntimeDevice::automatic) return setting == RuntimeDevice::cuda;
  bool own_gpu = cuda_device_count() > 0 && cuda_device_count() >= ranks_on_this_node();
  OwnedTensor every_rank(Shape{1}, DType::i32);  // [1] 1 where a rank has a GPU of its own, then the minimum
  every_rank.data<int32_t>()[0] = own_gpu ? 1 : 0;
  world.all_reduce(every_rank, ReduceOp::min);
  return every_rank.data<int32_t>()[0] == 1;
}

#if HAI_WITH_CUDA
// Rank 0 logs every rank's host and GPU.
void log_rank_gpus(Communicator& world, Device device) {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::vector<std::string> places =
      all_gather_strings(world, fmt::format("rank {} on {}: {}", world.rank(), host, to_string(device)));
  for (const std::string& place : places) spdlog::info("GPU of {}", place);
}

TrainingWorld gpu_world(std::unique_ptr<Communicator> host_world, const RuntimeConfig& settings,
                        int abort_exit_code) {
  Device device = choose_rank_gpu(MPI_COMM_WORLD);
  MPI_Comm nccl_world = MPI_COMM_NULL;
  HAI_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &nccl_world));
  NcclOptions options{.stream = Stream{},  // NOTE: the default stream, where the model's ops and copies queue
                      .collective_timeout = std::chrono::seconds(settings.collective_timeout_s),
                      .abort_exit_code = abort_exit_code};
  auto device_world = std::make_unique<NcclCommunicator>(nccl_world, device, options);
  TrainingWorld world{std::make_unique<HostDeviceCommunicator>(std::move(host_world), std::move(device_world)),
                      device};
  log_rank_gpus(*world.communicator, device);
  return world;
}
#else
TrainingWorld gpu_world(std::unique_ptr<Communicator>, const RuntimeConfig&, int) {
  HAI_THROW("runtime.device cuda on several ranks: this build has no CUDA backend");
}
#endif

}  // namespace

TrainingWorld make_training_world(const MpiRuntime& runtime, const RuntimeConfig& settings, int abort_exit_code) {
  std::unique_ptr<Communicator> host_world = runtime.world();
  if (trains_on_gpus(settings.device, *host_world)) {
    return gpu_world(std::move(host_world), settings, abort_exit_code);
  }
  return {std::move(host_world), Device::cpu()};
}

}  // namespace hai
