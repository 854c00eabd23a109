#!/usr/bin/env bash
# The FP8 study of docs/fp8.md as one command (one device call on one H200):
#   1. loss parity: configs/fp8_study.yaml trained for STEPS steps in bf16 and then in fp8, the same seed and data:
#      byte-level real text (the Python standard library's sources, found on the machine itself: it has no
#      network), turned into an indexed dataset by hai-data;
#   2. speed: configs/bench_moe_1p7b.yaml trained for SPEED_STEPS steps in bf16 and then in fp8 (tokens/s and peak
#      memory; the first steps are warm-up);
# then scripts/plot_fp8.py summarises the runs: smoothed loss curves, the final relative difference of the smoothed
# loss (target < 0.25%), the speed ratio (target >= 1.3x) and peak memory.
#   NCCL_NVLS_ENABLE=0 bash scripts/fp8_study.sh OUT_DIR [--steps N] [--speed-steps N] [--only loss|speed]
#                                                [--seeds N] [--jobs N] [--runs bf16,fp8,control]
#                                                [--set KEY=VALUE ...] [--mps]
#   bash scripts/fp8_study.sh OUT_DIR --cpu-smoke     # the whole pipeline on the CPU: tiny model, a few steps
# --seeds N trains the loss part with N seeds (train.seed = the config's + 0 .. N - 1: weights and data order) per
# precision, so that the fp8 - bf16 difference can be set against the spread between seeds of one precision.
# --runs picks the loss runs per seed (default bf16,fp8); "control" is a bf16 run with half the micro-batch size
# and twice the micro-batches (the same data and the same arithmetic, summed in another order): how far two runs that
# differ only by rounding drift apart is the noise floor that the fp8 - bf16 difference is measured against.
# --set KEY=VALUE (repeatable) overrides the loss config in every loss run (a variant of the study's model or data).
# --jobs N trains up to N of the loss runs at once on the one GPU (the study's model leaves most of an H200 idle).
# Each run's numbers are the same as when run alone. --mps runs them under a CUDA MPS daemon of the study's own
# (started and stopped by this script), so that they share the GPU's multiprocessors instead of taking turns: on an
# H200, 6 runs of 600 steps of configs/fp8_study.yaml took ~380 s together under MPS (one such run alone: ~2 min).
# OUT_DIR receives loss_{bf16,fp8}.jsonl (and loss_{bf16,fp8}_seed<i>.jsonl for seeds i >= 1) and
# speed_{bf16,fp8}.jsonl (hai-train's metrics), summary.json, study.log (hai-data's and hai-train's output) and
# fp8_loss.png (with matplotlib). Everything else
# (corpus, dataset, checkpoints) goes to a temporary directory. The build directory is $HAI_BUILD_DIR (default
# build-gpu; configured with the CUDA backend when it does not exist yet); only hai-train and hai-data are built.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${HAI_BUILD_DIR:-$root/build-gpu}
steps=300
speed_steps=20
seeds=1
jobs=1
mps=false
runs=bf16,fp8
only=all
cpu_smoke=false
extra_overrides=()
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --steps) steps=$2; shift 2 ;;
    --speed-steps) speed_steps=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --set) extra_overrides+=(--set "$2"); shift 2 ;;
    --mps) mps=true; shift ;;
    --cpu-smoke) cpu_smoke=true; shift ;;
    -*) echo "fp8_study.sh: unknown option $1" >&2; exit 2 ;;
    *) out=$1; shift ;;
  esac
done
if [[ -z "$out" ]]; then echo "fp8_study.sh: give the output directory" >&2; exit 2; fi
for run in ${runs//,/ }; do
  case "$run" in
    bf16 | fp8 | control) ;;
    *) echo "fp8_study.sh: unknown run $run in --runs (bf16, fp8 or control)" >&2; exit 2 ;;
  esac
done
export NCCL_NVLS_ENABLE=0
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [[ "$mps" == true ]]; then
  if ! command -v nvidia-cuda-mps-control >/dev/null; then
    echo "fp8_study.sh: --mps needs nvidia-cuda-mps-control (the CUDA driver's MPS)" >&2; exit 2
  fi
  export CUDA_MPS_PIPE_DIRECTORY=$work/mps_pipe CUDA_MPS_LOG_DIRECTORY=$work/mps_log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d || { echo "fp8_study.sh: the MPS daemon did not start" >&2; exit 1; }
  trap 'echo quit | nvidia-cuda-mps-control; rm -rf "$work"' EXIT
fi
log=$out/study.log
: >"$log"

loss_config=$root/configs/fp8_study.yaml
speed_config=$root/configs/bench_moe_1p7b.yaml
loss_overrides=()
speed_overrides=()
corpus_files=0  # all of them
cuda=ON
if [[ "$cpu_smoke" == true ]]; then
  # The tiny model of configs/tiny.yaml on both parts, a few steps, on the CPU: checks the plumbing only.
  loss_config=$root/configs/tiny.yaml
  speed_config=$root/configs/tiny.yaml
  steps=${FP8_SMOKE_STEPS:-6}
  speed_steps=4
  corpus_files=40
  cuda=OFF
  loss_overrides=(--set runtime.device=cpu --set train.eval_interval=3 --set train.eval_batches=2
                  --set ema.enabled=false)
  speed_overrides=(--set runtime.device=cpu --set data.source=synthetic --set ema.enabled=false)
fi

if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  cmake -S "$root" -B "$build_dir" -G Ninja -DHAI_CUDA=$cuda -DCMAKE_BUILD_TYPE=RelWithDebInfo >>"$log" || exit 1
fi
cmake --build "$build_dir" -j "$(nproc)" --target hai-train hai-data >>"$log" || exit 1
hai_train=$build_dir/apps/hai-train/hai-train
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >>"$log" 2>&1 || true

# The corpus: every .py file of the Python standard library (site-packages left out), in path order, one document
# per file. Printed: the number of files and bytes.
make_corpus() {
  python3 - "$work/corpus" "$corpus_files" <<'PYTHON'
import os, shutil, sys, sysconfig
target, limit = sys.argv[1], int(sys.argv[2])
stdlib = sysconfig.get_paths()["stdlib"]
paths = []
for directory, subdirectories, files in os.walk(stdlib):
    subdirectories[:] = sorted(d for d in subdirectories if d not in ("site-packages", "dist-packages", "__pycache__"))
    paths += [os.path.join(directory, name) for name in sorted(files) if name.endswith(".py")]
if limit > 0:
    paths = paths[:limit]
os.makedirs(target)
total = 0
for index, path in enumerate(paths):
    shutil.copyfile(path, os.path.join(target, f"{index:06d}.py"))
    total += os.path.getsize(path)
print(f"corpus: {len(paths)} files, {total} bytes from {stdlib}")
PYTHON
}

# train NAME CONFIG STEPS PRECISION [--set ...]: hai-train into $work/NAME, its metrics copied to $out/NAME.jsonl,
# its output appended to study.log when it ends.
train() {
  local name=$1 config=$2 train_steps=$3 precision=$4
  shift 4
  echo "fp8_study.sh: $name: $(basename "$config"), $precision, $train_steps steps" | tee -a "$log" >&2
  local status=0
  "$hai_train" --config "$config" --set precision.mode="$precision" --set train.steps="$train_steps" \
      --set logging.run_dir="$work/$name" --set checkpoint.dir="$work/$name/checkpoints" \
      --set checkpoint.resume=none --set checkpoint.save=false "$@" >"$work/$name.log" 2>&1 || status=$?
  cat "$work/$name.log" >>"$log"
  if [[ $status -ne 0 ]]; then
    echo "fp8_study.sh: $name failed (exit $status); its last lines:" >&2
    tail -n 20 "$work/$name.log" >&2
  fi
  cp "$work/$name/metrics.jsonl" "$out/$name.jsonl" 2>/dev/null || true
  return $status
}

# loss_setting KEY: an integer setting of the loss runs: its last --set, else the config file's (by its last name).
loss_setting() {
  local key=$1 value override
  value=$(sed -n "s/^ *${key##*.}: *\([0-9][0-9]*\).*/\1/p" "$loss_config" | head -n 1)
  for override in "${loss_overrides[@]}" "${extra_overrides[@]}"; do
    if [[ "$override" == "$key="* ]]; then value=${override#*=}; fi
  done
  echo "$value"
}

status=0
if [[ "$only" == all || "$only" == loss ]]; then
  make_corpus | tee -a "$log" >&2
  "$build_dir/apps/hai-data/hai-data" --format file --input "$work/corpus" --output "$work/corpus_tokens" >>"$log"
  data=(--set data.path="$work/corpus_tokens")
  running=()  # the process ids of the loss runs in flight, oldest first
  base_seed=$(loss_setting train.seed)
  micro_batch_size=$(loss_setting train.micro_batch_size)
  eval_batches=$(loss_setting train.eval_batches)
  if [[ ",$runs," == *,control,* && $((micro_batch_size % 2)) -ne 0 ]]; then
    echo "fp8_study.sh: the control run halves micro_batch_size ($micro_batch_size): it must be even" >&2; exit 2
  fi
  for ((seed = 0; seed < seeds; seed++)); do
    suffix=$([[ $seed -eq 0 ]] && echo "" || echo "_seed$seed")
    seeded=(--set train.seed=$((${base_seed:-1234} + seed)))
    for run in ${runs//,/ }; do
      # NOTE: the runs take about as long as each other, so waiting for the oldest frees the first slot.
      if [[ ${#running[@]} -ge $jobs ]]; then
        wait "${running[0]}" || status=1
        running=("${running[@]:1}")
      fi
      case "$run" in
        bf16 | fp8) precision=$run; variant=() ;;
        control) precision=bf16; variant=(--set train.micro_batch_size=$((micro_batch_size / 2))
                                          --set train.eval_batches=$((eval_batches * 2))) ;;
      esac
      train "loss_$run$suffix" "$loss_config" "$steps" "$precision" "${data[@]}" "${seeded[@]}" \
          "${loss_overrides[@]}" "${extra_overrides[@]}" "${variant[@]}" &
      running+=($!)
    done
  done
  for pid in "${running[@]}"; do wait "$pid" || status=1; done
fi
if [[ "$only" == all || "$only" == speed ]]; then
  train speed_bf16 "$speed_config" "$speed_steps" bf16 "${speed_overrides[@]}" || status=1
  train speed_fp8 "$speed_config" "$speed_steps" fp8 "${speed_overrides[@]}" || status=1
fi

python3 "$root/scripts/plot_fp8.py" "$out" --png "$out/fp8_loss.png" --summary "$out/summary.json" || status=1
exit "$status"
