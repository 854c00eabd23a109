#pragma once
// MpiRuntime: MPI's lifetime as an object. Create one at the top of main(), before any communicator; it
// initialises MPI (asking for MPI_THREAD_MULTIPLE and accepting what the library provides) and finalizes it on
// destruction, after every communicator is gone. It works under mpirun, srun, and in a process started alone
// (an MPI singleton of one rank). If MPI is already initialised (by a test main, say), it neither initialises
// nor finalizes. MPI can be initialised once per process: a runtime created after MPI_Finalize throws.

#include <memory>

#include "framework/comm/communicator.h"

namespace hai {

class MpiRuntime {
 public:
  MpiRuntime();
  ~MpiRuntime();
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;

  // The thread support MPI provides: MPI_THREAD_SINGLE ... MPI_THREAD_MULTIPLE.
  int thread_level() const { return thread_level_; }

  // A communicator over every rank of the job (a duplicate of MPI_COMM_WORLD, so that its error handler and
  // messages are its own). Destroy it before the runtime.
  std::unique_ptr<Communicator> world() const;

 private:
  bool owns_mpi_ = false;
  int thread_level_ = 0;
};

}  // namespace hai
