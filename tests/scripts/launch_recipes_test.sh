#!/usr/bin/env bash
# The cluster recipes of docs/launch.md on one machine, CPU ranks:
#  1. scripts/slurm/train.sbatch as sbatch runs it, with a stand-in `srun` on PATH that checks the options it is
#     given and starts one task with the variables Slurm gives a task (SLURM_STEP_NUM_TASKS, SLURM_PROCID, ...):
#     hai-train must see one rank and train. (The rank/world/local-rank mapping of many tasks is
#     tests/framework/core/launch_test.cc: without Slurm's PMI, tasks started here could not form an MPI world.)
#  2. the multi-node mpirun example (hostfile, -x exports, ranks per node, binding) with this machine as the only
#     host: two ranks train together.
# Usage: launch_recipes_test.sh HAI_TRAIN WORK_DIR
set -euo pipefail
hai_train=$1
work=$2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
rm -rf "$work" && mkdir -p "$work/bin" && cd "$work"

cp "$root/tests/scripts/tiny_synthetic.yaml" tiny.yaml

fail() { echo "launch_recipes_test: $*" >&2; exit 1; }

# 1. sbatch's environment in the batch shell (the allocation's variables, no step yet), then a stand-in srun.
cat > bin/srun <<'SH'
#!/usr/bin/env bash
# A stand-in for srun: records its options, then starts the command as the only task of a job step.
options=()
while [[ $# -gt 0 && $1 == --* ]]; do options+=("$1"); shift; done
echo "${options[*]}" > srun.options
export SLURM_STEP_ID=0 SLURM_STEP_NUM_TASKS=1 SLURM_STEP_NUM_NODES=1 SLURM_STEP_TASKS_PER_NODE=1 SLURM_PROCID=0 \
       SLURM_LOCALID=0 SLURM_NODEID=0
exec "$@"
SH
chmod +x bin/srun
SLURM_JOB_ID=77 SLURM_JOB_NUM_NODES=1 SLURM_NTASKS=8 SLURM_PROCID=0 SLURM_TASKS_PER_NODE=8 SLURM_CPUS_PER_TASK=1 \
  PATH="$work/bin:$PATH" HAI_TRAIN="$hai_train" \
  bash "$root/scripts/slurm/train.sbatch" tiny.yaml --set logging.run_dir=run_srun \
  --set checkpoint.dir=run_srun/checkpoints > srun.log 2>&1 ||
  { cat srun.log; fail "train.sbatch failed"; }
grep -q -- "--mpi=pmix --kill-on-bad-exit=1 --cpu-bind=cores" srun.options || fail "srun options: $(cat srun.options)"
grep -q "hai-train: 1 rank(s)" run_srun/train.log || { cat srun.log; fail "train.sbatch: not one rank"; }
grep -q "step 2/2 | loss" run_srun/train.log || { cat srun.log; fail "train.sbatch: did not train"; }
# NOTE: the allocation's SLURM_NTASKS=8 is in the environment too: hai-train must count the step's task, not it.
echo "train.sbatch under the stand-in srun: one rank, 2 steps"

# 2. docs/launch.md's mpirun example, scaled to this machine: one host with 2 slots, 2 ranks, a core each.
echo "localhost slots=2" > hosts
root_flag=()
if [[ $(id -u) -eq 0 ]]; then root_flag=(--allow-run-as-root); fi
mpirun "${root_flag[@]}" -np 2 --hostfile hosts --map-by ppr:2:node --bind-to none \
  --mca btl_vader_single_copy_mechanism none \
  -x PATH -x LD_LIBRARY_PATH -x HAI_CPU_THREADS=1 \
  "$hai_train" --config tiny.yaml --set logging.run_dir=run_mpirun \
  --set checkpoint.dir=run_mpirun/checkpoints > mpirun.log 2>&1 ||
  { cat mpirun.log; fail "mpirun failed"; }
grep -q "hai-train: 2 rank(s) (dp 2" run_mpirun/train.log || { cat mpirun.log; fail "mpirun: not two ranks"; }
echo "mpirun with a hostfile: two ranks, 2 steps"
