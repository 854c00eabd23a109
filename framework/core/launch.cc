#include "framework/core/launch.h"

#include <cstdlib>
#include <initializer_list>
#include <string>

namespace hai {
namespace {

const char* first_set(const Environment& environment, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (const char* value = environment(name)) return value;
  }
  return nullptr;
}

int first_integer(const Environment& environment, std::initializer_list<const char*> names, int fallback) {
  const char* value = first_set(environment, names);
  return value != nullptr ? std::atoi(value) : fallback;
}

}  // namespace

int slurm_tasks_on_node(const std::string& tasks_per_node, int node) {
  // NOTE: Slurm's compressed form: "4(x2),3" is 4 tasks on nodes 0 and 1, then 3 on node 2.
  size_t at = 0;
  int first_node = 0;
  while (at < tasks_per_node.size()) {
    size_t end = tasks_per_node.find(',', at);
    std::string entry = tasks_per_node.substr(at, end == std::string::npos ? std::string::npos : end - at);
    int tasks = std::atoi(entry.c_str());
    int repeat = 1;
    if (size_t times = entry.find("(x"); times != std::string::npos) repeat = std::atoi(entry.c_str() + times + 2);
    if (node < first_node + repeat) return tasks;
    first_node += repeat;
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return 0;
}

LaunchInfo read_launch_info(const Environment& environment) {
  LaunchInfo info;
  // NOTE: Slurm's task variables count only inside a job step (srun sets SLURM_STEP_NUM_TASKS): a batch script's
  // own shell also has SLURM_PROCID and SLURM_NTASKS (the allocation's), but hai-train started there is one process.
  bool slurm_step = environment("SLURM_STEP_NUM_TASKS") != nullptr;
  info.rank = first_integer(environment, {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"},
                            slurm_step ? first_integer(environment, {"SLURM_PROCID"}, 0) : 0);
  info.world_size = first_integer(environment, {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"},
                                  slurm_step ? first_integer(environment, {"SLURM_STEP_NUM_TASKS"}, 1) : 1);
  std::initializer_list<const char*> local_rank_names = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"};
  const char* local_rank = first_set(environment, local_rank_names);
  if (local_rank == nullptr && slurm_step) local_rank = environment("SLURM_LOCALID");
  info.local_rank = local_rank != nullptr ? std::atoi(local_rank) : 0;
  info.local_rank_known = local_rank != nullptr;
  info.local_size = first_integer(environment, {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}, 0);
  if (info.local_size == 0 && slurm_step) {
    const char* tasks_per_node = environment("SLURM_STEP_TASKS_PER_NODE");
    int node = first_integer(environment, {"SLURM_NODEID"}, 0);
    if (tasks_per_node != nullptr) info.local_size = slurm_tasks_on_node(tasks_per_node, node);
  }
  if (info.local_size <= 0) info.local_size = 1;
  return info;
}

const LaunchInfo& launch_info() {
  static const LaunchInfo info = read_launch_info([](const char* name) { return std::getenv(name); });
  return info;
}

}  // namespace hai
