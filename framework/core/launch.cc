#include "framework/core/launch.h"

#include <cstdlib>
#include <initializer_list>

namespace hai {
namespace {

int first_integer(std::initializer_list<const char*> names, int fallback) {
  for (const char* name : names) {
    if (const char* value = std::getenv(name)) return std::atoi(value);
  }
  return fallback;
}

LaunchInfo read_launch_info() {
  LaunchInfo info;
  info.rank = first_integer({"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}, 0);
  info.world_size = first_integer({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}, 1);
  info.local_rank = first_integer({"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}, 0);
  info.local_size = first_integer({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"}, 1);
  return info;
}

}  // namespace

const LaunchInfo& launch_info() {
  static const LaunchInfo info = read_launch_info();
  return info;
}

}  // namespace hai
