#include "framework/comm/mpi_runtime.h"

#include "framework/comm/mpi_communicator.h"
#include "framework/core/check.h"

namespace hai {

MpiRuntime::MpiRuntime() {
  int finalized = 0;
  HAI_MPI_CHECK(MPI_Finalized(&finalized));
  HAI_CHECK(!finalized, "MPI was already finalized; it can be initialised only once per process");
  int initialized = 0;
  HAI_MPI_CHECK(MPI_Initialized(&initialized));
  if (initialized) {
    HAI_MPI_CHECK(MPI_Query_thread(&thread_level_));
    return;
  }
  HAI_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &thread_level_));
  owns_mpi_ = true;
}

MpiRuntime::~MpiRuntime() {
  if (owns_mpi_) MPI_Finalize();  // NOTE: not checked: a destructor must not throw, and nothing follows it
}

std::unique_ptr<Communicator> MpiRuntime::world() const {
  MPI_Comm world = MPI_COMM_NULL;
  HAI_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &world));
  return std::make_unique<MpiCommunicator>(world);
}

}  // namespace hai
