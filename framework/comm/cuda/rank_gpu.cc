#include "framework/comm/cuda/rank_gpu.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "framework/core/check.h"
#include "framework/core/launch.h"
#include "framework/tensor/device_memory.h"

namespace hai {
namespace {

// What a rank tells the other ranks of its node about its choice.
struct GpuChoice {
  char pci_bus_id[32];  // "0000:3b:00.0", NUL-terminated
  int job_rank;
};

// The ranks of a job that share this node's memory, freed on destruction.
class NodeCommunicator {
 public:
  explicit NodeCommunicator(MPI_Comm job) {
    HAI_MPI_CHECK(MPI_Comm_split_type(job, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &comm_));
    HAI_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    HAI_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  }
  ~NodeCommunicator() { MPI_Comm_free(&comm_); }  // NOTE: not checked: a destructor must not throw
  NodeCommunicator(const NodeCommunicator&) = delete;
  NodeCommunicator& operator=(const NodeCommunicator&) = delete;

  MPI_Comm get() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
};

std::string visible_devices() {
  const char* value = std::getenv("CUDA_VISIBLE_DEVICES");
  return value != nullptr ? value : "unset";
}

GpuChoice describe(Device device, int job_rank) {
  GpuChoice choice{};
  HAI_CUDA_CHECK(cudaDeviceGetPCIBusId(choice.pci_bus_id, sizeof(choice.pci_bus_id), device.index));
  choice.job_rank = job_rank;
  return choice;
}

// Every rank of the node gathers every choice and throws the same error if two of them name one GPU.
void check_one_rank_per_gpu(const NodeCommunicator& node, const GpuChoice& mine, int gpus) {
  std::vector<GpuChoice> choices(static_cast<size_t>(node.size()));
  HAI_MPI_CHECK(MPI_Allgather(&mine, sizeof(GpuChoice), MPI_BYTE, choices.data(), sizeof(GpuChoice), MPI_BYTE,
                              node.get()));
  for (size_t a = 0; a < choices.size(); ++a) {
    for (size_t b = a + 1; b < choices.size(); ++b) {
      HAI_CHECK(std::strcmp(choices[a].pci_bus_id, choices[b].pci_bus_id) != 0,
                "ranks {} and {} would share the GPU at {}: {} ranks on this node, and each process sees {} "
                "GPU(s) (CUDA_VISIBLE_DEVICES={}); run at most one rank per GPU",
                choices[a].job_rank, choices[b].job_rank, choices[a].pci_bus_id, node.size(), gpus,
                visible_devices());
    }
  }
}

}  // namespace

Device choose_rank_gpu(MPI_Comm job) {
  int gpus = cuda_device_count();
  HAI_CHECK(gpus > 0, "this process sees no GPU (CUDA_VISIBLE_DEVICES={})", visible_devices());
  const LaunchInfo& launch = launch_info();
  int job_size = 1;
  if (job != MPI_COMM_NULL) HAI_MPI_CHECK(MPI_Comm_size(job, &job_size));
  if (job_size == 1) {
    Device device = Device::cuda(launch.local_rank % gpus);
    make_device_current(device);
    return device;
  }
  int job_rank = 0;
  HAI_MPI_CHECK(MPI_Comm_rank(job, &job_rank));
  NodeCommunicator node(job);
  int local_rank = launch.local_rank_known ? launch.local_rank : node.rank();
  Device device = Device::cuda(local_rank % gpus);
  check_one_rank_per_gpu(node, describe(device, job_rank), gpus);
  make_device_current(device);
  return device;
}

}  // namespace hai
