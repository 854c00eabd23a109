#pragma once
// The communicator a job of several ranks trains over, and this rank's device, from runtime.device:
//   cpu   MPI's world (host tensors only); every rank on the CPU backend.
//   cuda  one GPU per rank (choose_rank_gpu, framework/comm/cuda/rank_gpu.h) and a HostDeviceCommunicator over
//         the world: MPI for host tensors, NCCL (over a duplicate of MPI_COMM_WORLD, on the default stream where the
//         model's ops run, watched on the GPU with runtime.collective_timeout_s) for device tensors. It is an
//         error for a rank to see no GPU, for two ranks of a node to share one, or for a build without CUDA.
//   auto  cuda when every rank of the job has a GPU of its own (each sees at least as many GPUs as its node runs
//         ranks), else cpu. Ranks that each see one GPU only (CUDA_VISIBLE_DEVICES per rank) need cuda.
// With GPUs, rank 0 logs which GPU each rank uses. Collective over every rank of the job.

#include <memory>

#include "framework/comm/communicator.h"
#include "framework/comm/mpi_runtime.h"
#include "framework/config/config.h"
#include "framework/tensor/tensor.h"

namespace hai {

struct TrainingWorld {
  std::unique_ptr<Communicator> communicator;  // every rank of the job
  Device device;                               // this rank's: the CPU or its GPU (made current)
};

// abort_exit_code: the exit status of a job that the GPU-side watchdog aborts.
TrainingWorld make_training_world(const MpiRuntime& runtime, const RuntimeConfig& settings, int abort_exit_code);

}  // namespace hai
