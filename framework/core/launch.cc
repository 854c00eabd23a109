#include "framework/core/launch.h"

#include <cstdlib>
#include <initializer_list>

namespace hai {
namespace {

const char* first_set(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (const char* value = std::getenv(name)) return value;
  }
  return nullptr;
}

int first_integer(std::initializer_list<const char*> names, int fallback) {
  const char* value = first_set(names);
  return value != nullptr ? std::atoi(value) : fallback;
}

LaunchInfo read_launch_info() {
  LaunchInfo info;
  info.rank = first_integer({"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}, 0);
  info.world_size = first_integer({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}, 1);
  std::initializer_list<const char*> local_rank_names = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                                         "SLURM_LOCALID"};
  info.local_rank = first_integer(local_rank_names, 0);
  info.local_rank_known = first_set(local_rank_names) != nullptr;
  info.local_size = first_integer({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"}, 1);
  return info;
}

}  // namespace

const LaunchInfo& launch_info() {
  static const LaunchInfo info = read_launch_info();
  return info;
}

}  // namespace hai
