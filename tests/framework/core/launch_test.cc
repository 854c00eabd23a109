// read_launch_info: the rank, world, local rank and local size from the environments that srun (Slurm's PMIx and
// PMI-2 plugins), mpirun (Open MPI) and a batch script's shell give a process, emulated variable by variable.

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "framework/core/launch.h"

namespace hai {
namespace {

LaunchInfo launch_from(const std::map<std::string, std::string>& variables) {
  return read_launch_info([&](const char* name) -> const char* {
    auto found = variables.find(name);
    return found != variables.end() ? found->second.c_str() : nullptr;
  });
}

// What `srun --ntasks-per-node=4 --nodes 2` gives its task 6 (node 1, local task 2) under --mpi=pmix; the
// allocation-level SLURM_NTASKS of the batch script is there too.
std::map<std::string, std::string> srun_task_six() {
  return {{"SLURM_JOB_ID", "4242"},         {"SLURM_NTASKS", "8"},       {"SLURM_PROCID", "6"},
          {"SLURM_LOCALID", "2"},           {"SLURM_NODEID", "1"},       {"SLURM_STEP_NUM_TASKS", "8"},
          {"SLURM_STEP_TASKS_PER_NODE", "4(x2)"}, {"SLURM_TASKS_PER_NODE", "4(x2)"}, {"PMIX_RANK", "6"}};
}

TEST(LaunchInfo, AloneIsRankZeroOfOne) {
  LaunchInfo info = launch_from({});
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.world_size, 1);
  EXPECT_EQ(info.local_rank, 0);
  EXPECT_EQ(info.local_size, 1);
  EXPECT_FALSE(info.local_rank_known);
}

TEST(LaunchInfo, SrunWithPmix) {
  LaunchInfo info = launch_from(srun_task_six());
  EXPECT_EQ(info.rank, 6);
  EXPECT_EQ(info.world_size, 8);
  EXPECT_EQ(info.local_rank, 2);
  EXPECT_TRUE(info.local_rank_known);
  EXPECT_EQ(info.local_size, 4);
}

TEST(LaunchInfo, SrunWithPmi2) {
  std::map<std::string, std::string> variables = srun_task_six();
  variables.erase("PMIX_RANK");
  variables["PMI_RANK"] = "6";
  variables["PMI_SIZE"] = "8";
  LaunchInfo info = launch_from(variables);
  EXPECT_EQ(info.rank, 6);
  EXPECT_EQ(info.world_size, 8);
  EXPECT_EQ(info.local_rank, 2);
}

// srun --mpi=none (no PMI at all): Slurm's own variables still place the task.
TEST(LaunchInfo, SrunWithoutPmi) {
  std::map<std::string, std::string> variables = srun_task_six();
  variables.erase("PMIX_RANK");
  LaunchInfo info = launch_from(variables);
  EXPECT_EQ(info.rank, 6);
  EXPECT_EQ(info.world_size, 8);
  EXPECT_EQ(info.local_rank, 2);
  EXPECT_EQ(info.local_size, 4);
}

// Uneven nodes: "3(x2),2" puts 3 tasks on nodes 0 and 1 and 2 on node 2.
TEST(LaunchInfo, SrunUnevenNodes) {
  std::map<std::string, std::string> variables = srun_task_six();
  variables["SLURM_STEP_TASKS_PER_NODE"] = "3(x2),2";
  variables["SLURM_NODEID"] = "2";
  EXPECT_EQ(launch_from(variables).local_size, 2);
  EXPECT_EQ(slurm_tasks_on_node("3(x2),2", 0), 3);
  EXPECT_EQ(slurm_tasks_on_node("3(x2),2", 1), 3);
  EXPECT_EQ(slurm_tasks_on_node("3(x2),2", 2), 2);
  EXPECT_EQ(slurm_tasks_on_node("3(x2),2", 3), 0);
  EXPECT_EQ(slurm_tasks_on_node("8", 0), 8);
}

// hai-train run straight from an sbatch script (no srun): one process, whatever the allocation holds.
TEST(LaunchInfo, BatchScriptShellIsOneProcess) {
  LaunchInfo info = launch_from({{"SLURM_JOB_ID", "4242"}, {"SLURM_NTASKS", "8"}, {"SLURM_PROCID", "0"},
                                 {"SLURM_LOCALID", "0"}, {"SLURM_TASKS_PER_NODE", "4(x2)"}});
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.world_size, 1);
  EXPECT_EQ(info.local_size, 1);
  EXPECT_FALSE(info.local_rank_known);
}

// mpirun inside a Slurm allocation: Open MPI's variables win over the allocation's Slurm ones.
TEST(LaunchInfo, OpenMpiInsideAnAllocation) {
  LaunchInfo info = launch_from({{"SLURM_JOB_ID", "4242"}, {"SLURM_NTASKS", "8"}, {"SLURM_PROCID", "0"},
                                 {"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "16"},
                                 {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "8"},
                                 {"PMIX_RANK", "5"}});
  EXPECT_EQ(info.rank, 5);
  EXPECT_EQ(info.world_size, 16);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_TRUE(info.local_rank_known);
  EXPECT_EQ(info.local_size, 8);
}

}  // namespace
}  // namespace hai
