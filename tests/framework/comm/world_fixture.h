#pragma once
// The fixture of the multi-rank tests: a fresh world communicator per test, over whatever MPI job runs the
// binary (mpirun -np N, or the binary started alone: one rank). tests/mpi_test_main.cc initialises MPI, so the
// runtime here neither initialises nor finalizes it.

#include <gtest/gtest.h>

#include <memory>

#include "framework/comm/mpi_runtime.h"

namespace hai::testing {

class World : public ::testing::Test {
 protected:
  int rank() const { return world_->rank(); }
  int size() const { return world_->size(); }
  int next() const { return (rank() + 1) % size(); }
  int previous() const { return (rank() + size() - 1) % size(); }

  MpiRuntime runtime_;
  std::unique_ptr<Communicator> world_ = runtime_.world();
};

}  // namespace hai::testing
