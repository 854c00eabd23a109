#pragma once
// What the launcher (mpirun, srun, or none: a singleton) tells this process about the job, read from the
// environment once, before MPI or any communicator exists. Config validation, rank-tagged errors, the CPU thread
// count (cores / local_size) and the GPU of each rank (local_rank) use it. docs/launch.md shows the launches.

#include <functional>
#include <string>

namespace hai {

struct LaunchInfo {
  int rank = 0;        // this process's rank in the job
  int world_size = 1;  // ranks in the job
  int local_rank = 0;  // rank among the processes on this node (picks the GPU)
  int local_size = 1;
  bool local_rank_known = false;  // whether the launcher said; if not, local_rank is 0 (ask MPI for the node's ranks)
};

// getenv's shape: the value of a variable, or null when it is not set.
using Environment = std::function<const char*(const char*)>;

// Read in this order: Open MPI (OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE), PMIx (PMIX_RANK), PMI
// (PMI_RANK/PMI_SIZE, MPI_LOCALRANKID/MPI_LOCALNRANKS), then Slurm's task variables, inside a job step only (srun:
// SLURM_STEP_NUM_TASKS set; SLURM_PROCID, SLURM_LOCALID, SLURM_STEP_TASKS_PER_NODE at SLURM_NODEID). A process
// started alone, or from a batch script's shell without srun, is rank 0 of 1.
LaunchInfo read_launch_info(const Environment& environment);

// The tasks Slurm places on node `node` (0-based) from its compressed list ("4(x2),3": 4, 4, 3); 0 past its end.
int slurm_tasks_on_node(const std::string& tasks_per_node, int node);

// read_launch_info of this process's environment, read once.
const LaunchInfo& launch_info();

}  // namespace hai
