#pragma once
// What the launcher (mpirun, srun, or none: a singleton) tells this process about the job, read from the
// environment once, before MPI or any communicator exists. Config validation and rank-tagged errors use it.

namespace hai {

struct LaunchInfo {
  int rank = 0;        // this process's rank in the job
  int world_size = 1;  // ranks in the job
  int local_rank = 0;  // rank among the processes on this node (picks the GPU)
  int local_size = 1;
  bool local_rank_known = false;  // whether the launcher said; if not, local_rank is 0 (ask MPI for the node's ranks)
};

// Open MPI (OMPI_COMM_WORLD_*), PMIx (PMIX_RANK), PMI (PMI_RANK/PMI_SIZE) and Slurm (SLURM_PROCID/...) are read
// in that order; a process started alone is rank 0 of 1.
const LaunchInfo& launch_info();

}  // namespace hai
