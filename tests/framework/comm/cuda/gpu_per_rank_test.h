#pragma once
// The fixture the NCCL tests share: every rank holds the MPI world and a GPU of its own (rank_gpu.h); with fewer
// GPUs than ranks (CI has none) the test skips. Tests compare a device communicator with the MPI one.

#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>

#include "framework/comm/cuda/rank_gpu.h"
#include "framework/comm/mpi_runtime.h"
#include "framework/core/check.h"
#include "framework/tensor/device_memory.h"

namespace hai::testing {

class GpuPerRankTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() < mpi_->size()) {
      GTEST_SKIP() << mpi_->size() << " ranks, " << cuda_device_count() << " GPU(s): NCCL needs a GPU per rank";
    }
    device_ = choose_rank_gpu(MPI_COMM_WORLD);
  }

  int rank() const { return mpi_->rank(); }
  int size() const { return mpi_->size(); }

  OwnedTensor on_device(const Tensor& host) const {
    OwnedTensor copy(host.shape(), host.dtype(), device_);
    copy_tensor(copy, host);
    return copy;
  }

  // A communicator of its own for an NCCL communicator to take (it frees it).
  static MPI_Comm duplicate_of_world() {
    MPI_Comm comm = MPI_COMM_NULL;
    HAI_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    return comm;
  }

  MpiRuntime runtime_;
  std::unique_ptr<Communicator> mpi_ = runtime_.world();
  Device device_;
};

}  // namespace hai::testing
