#pragma once
// The GPU of a rank: one per rank, chosen from the rank's place on its node (docs/architecture.md "Parallel layout").
// The node-local rank is the launcher's (launch.h: mpirun's OMPI_COMM_WORLD_LOCAL_RANK, srun's SLURM_LOCALID)
// or, where the launcher does not say, the rank among the job's ranks that share this node's memory
// (MPI_COMM_TYPE_SHARED). The GPU is that rank modulo the GPUs this process sees, so both "every rank sees every
// GPU of the node" and "each rank sees only its own" (srun --gpus-per-task, CUDA_VISIBLE_DEVICES per rank) work.
// The ranks of a node then compare their choices by PCI bus id: two ranks on one GPU are an error (NCCL refuses
// them, and they would share its memory), raised on every rank alike.

#include <mpi.h>

#include "framework/tensor/tensor.h"

namespace hai {

// Collective over `job` (every rank calls it); MPI_COMM_NULL for a process alone, without MPI. Makes the chosen
// GPU current for the calling thread and returns it. Throws when this process sees no GPU, or when two ranks of
// a node would share one (more ranks on the node than GPUs).
Device choose_rank_gpu(MPI_Comm job);

}  // namespace hai
