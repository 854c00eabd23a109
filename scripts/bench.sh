#!/usr/bin/env bash
# The GPU benchmark as one command (one device call): configures with the CUDA backend into build-gpu (or
# $HAI_BUILD_DIR), builds hai-bench and hai-train, runs the op-level benchmarks (hai-bench: GEMMs at the model's
# shapes against the cuBLASLt ceiling, attention, grouped expert GEMMs, FP8, memory-bound ops), then trains the
# config (--config FILE, default configs/bench_moe_1p7b.yaml; configs/bench_v3_layers.yaml has DeepSeek-V3's layers)
# for a few steps and summarises its metrics.jsonl (docs/formats.md): tokens/s, MFU, step time, peak memory; then
# profiles a few more steps (hai-train --profile-steps: the time of each phase of a step, by layer kind, and the
# pool's live memory after each layer; docs/performance.md "Step profile").
# Writes one JSON object {"ops": <hai-bench>, "training": <summary>, "step_profile": <report>} to OUT (default
# bench.json) and prints it.
#   NCCL_NVLS_ENABLE=0 bash scripts/bench.sh [OUT] [--config FILE] [--ops SECTIONS] [--steps N] [--profile-steps N]
#     [--set key=value]...
#   NCCL_NVLS_ENABLE=0 bash scripts/bench.sh [OUT] --multi-gpu
#     [--layouts dp2,dp2_gather_in_step,ep2,pp2_1f1b,pp2_dualpipe,tp2,tp2sp]
#     [--steps N] [--set key=value]...
# --ops: hai-bench's sections to run, comma-separated (default all; none skips hai-bench). --steps (default 30) and
# --set go to hai-train (and --set to hai-bench); the first max(3, steps / 5) steps are left out of the summary
# as warm-up. Either part failing is reported in the JSON ({"error": ...}) and makes the exit code non-zero.
# --multi-gpu (a machine with two GPUs): instead of the op benchmarks and the profile, trains on one GPU and on two
# (mpirun -np 2, one rank per GPU) with each layout: dp 2 (dp2_gather_in_step: parallel.overlap_param_gather off) and
# ep 2 (dp 2) at a micro-batch per GPU per step, pp 2 under 1f1b and dualpipe at 4 micro-batches per step, tp 2 at
# two micro-batches per step (dp 2's global batch, each micro-batch on both GPUs) and the same with sequence
# parallelism (tp2sp), each also profiled (--profile-steps; the TP all-reduces, and under sequence parallelism the
# all-gathers and reduce-scatters along the tokens, are the kind "tp_collective"). One GPU trains twice:
# at dp 2's global batch (two micro-batches per step, every step logged: the loss curve dp 2 and ep 2 must
# reproduce) and at the config's own batch (one micro-batch per step). Writes {"training": <one GPU, dp 2's batch>,
# "one_gpu_per_gpu_batch": <one GPU, its own batch>, "multi_gpu": {<layout>: <summary> with tokens_per_s_per_gpu,
# per_gpu_vs_one_gpu (against the one-GPU run that does a GPU's share of the layout's tokens per step: weak
# scaling, the same work per GPU and optimizer step; dp 2 and ep 2 against one micro-batch, pp 2 against two),
# "profile": {"step_ms", "kinds": {kind: share of the step}, "pipeline": <the bubble report, pp layouts>},
# peak_mem_vs_one_gpu (the layout's peak memory over the one-GPU run's at the config's batch), for tp2sp
# peak_mem_vs_tp2 (its peak memory over tp 2's without sequence parallelism), and for dp 2, ep 2, tp 2 and tp2sp
# "loss_vs_one_gpu": the per-step losses against the one-GPU run at their global batch}}.
# The runs' logs are kept beside OUT in OUT_logs/ (OUT without .json).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${HAI_BUILD_DIR:-$root/build-gpu}
config=$root/configs/bench_moe_1p7b.yaml
out=bench.json
steps=30
profile_steps=5
multi_gpu=false
only_layouts=""
ops=all
train_overrides=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --config) config=$(realpath "$2"); shift 2 ;;
    --ops) ops=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --multi-gpu) multi_gpu=true; shift ;;
    --layouts) only_layouts=$2; shift 2 ;;
    --profile-steps) profile_steps=$2; shift 2 ;;
    --set) train_overrides+=(--set "$2"); shift 2 ;;
    -*) echo "bench.sh: unknown option $1" >&2; exit 2 ;;
    *) out=$1; shift ;;
  esac
done
export NCCL_NVLS_ENABLE=0
# Every run under a time limit (HAI_BENCH_RUN_TIMEOUT seconds, default 300): a hung run fails and the next goes on.
limit=(timeout -k 10 "${HAI_BENCH_RUN_TIMEOUT:-300}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
cmake -S "$root" -B "$build_dir" -G Ninja -DHAI_CUDA=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null || exit 1
cmake --build "$build_dir" -j "$(nproc)" --target hai-bench hai-train || exit 1

status=0
if [[ "$multi_gpu" == true || "$ops" == none ]]; then
  echo '{"skipped": "--multi-gpu or --ops none"}' >"$work/ops.json"
else
  echo "bench.sh: op benchmarks (hai-bench)" >&2
  sections=()
  if [[ "$ops" != all ]]; then
    IFS=, read -ra names <<<"$ops"
    for name in "${names[@]}"; do sections+=(--section "$name"); done
  fi
  if ! "${limit[@]}" "$build_dir/apps/hai-bench/hai-bench" --config "$config" "${sections[@]}" \
      "${train_overrides[@]}" --out "$work/ops.json" >/dev/null; then
    status=1
    [[ -s "$work/ops.json" ]] || echo '{"error": "hai-bench failed before writing its JSON"}' >"$work/ops.json"
  fi
fi

# NOTE: micro-batches of the config's size; with --multi-gpu every run logs every step, and the one-GPU run takes
# dp 2's global batch (two micro-batches) so that its loss curve is the one dp 2 and ep 2 must reproduce.
micro_batch=$(sed -n 's/^ *micro_batch_size: *\([0-9]*\).*/\1/p' "$config" | head -n 1)
one_gpu_overrides=()
layout_overrides=()
if [[ "$multi_gpu" == true ]]; then
  one_gpu_overrides=(--set train.global_batch_size=$((2 * micro_batch)) --set logging.interval=1)
  layout_overrides=(--set logging.interval=1)
fi

echo "bench.sh: training $config for $steps steps (hai-train)" >&2
run_dir=$work/run
if ! "${limit[@]}" "$build_dir/apps/hai-train/hai-train" --config "$config" --set train.steps="$steps" \
    --set logging.run_dir="$run_dir" --set checkpoint.dir="$work/checkpoints" --set checkpoint.resume=none \
    --set checkpoint.save=false "${one_gpu_overrides[@]}" \
    "${train_overrides[@]}" 2>&1 | tee "$work/train.log" >&2; then
  status=1
  echo "bench.sh: hai-train failed; the summary covers the steps it logged" >&2
fi

# With --multi-gpu, one GPU also trains at the config's own batch (one micro-batch per step, as each GPU of dp 2
# and ep 2 does): the reference of their per-GPU speed (weak scaling: the same work per GPU and step).
weak_dir=$work/one_gpu_per_gpu_batch
if [[ "$multi_gpu" == true ]]; then
  echo "bench.sh: training $config on one GPU at its own batch (the per-GPU speed reference)" >&2
  if ! "${limit[@]}" "$build_dir/apps/hai-train/hai-train" --config "$config" --set train.steps="$steps" \
      --set logging.run_dir="$weak_dir/run" --set checkpoint.dir="$weak_dir/checkpoints" \
      --set checkpoint.resume=none --set checkpoint.save=false --set logging.interval=1 "${train_overrides[@]}" \
      >"$weak_dir.log" 2>&1; then
    status=1
    echo "bench.sh: the one-GPU reference run failed" >&2
  fi
fi

# train_layout NAME RANKS [--set key=value]...: hai-train on RANKS GPUs (mpirun -np RANKS, one rank per GPU)
# into $work/NAME (run/metrics.jsonl, train.log), then the same layout under --profile-steps (profile/
# step_profile.json: the phase split, the expert exchange's share, a pipeline's measured and simulated bubble);
# no checkpoint is written (a 1.7B model's takes a minute).
train_layout() {
  local name=$1 ranks=$2
  shift 2
  if [[ -n "$only_layouts" && ",$only_layouts," != *",$name,"* ]]; then return; fi
  layouts+=("$name")
  mkdir -p "$work/$name"
  local launch=("${limit[@]}" mpirun --allow-run-as-root --bind-to none -np "$ranks" -x NCCL_NVLS_ENABLE
                "$build_dir/apps/hai-train/hai-train" --config "$config" --set checkpoint.resume=none
                --set checkpoint.save=false --set checkpoint.dir="$work/$name/checkpoints" --set runtime.device=cuda
                "${layout_overrides[@]}" "$@" "${train_overrides[@]}")
  echo "bench.sh: training $config on $ranks GPUs: $name" >&2
  if ! "${launch[@]}" --set train.steps="$steps" --set logging.run_dir="$work/$name/run" \
      >"$work/$name/train.log" 2>&1; then
    status=1
    echo "bench.sh: $name failed:" >&2
    tail -n 20 "$work/$name/train.log" >&2
    return
  fi
  echo "bench.sh: profiling $profile_steps steps on $ranks GPUs: $name" >&2
  if ! "${launch[@]}" --profile-steps "$profile_steps" --set logging.run_dir="$work/$name/profile" \
      >"$work/$name/profile.out" 2>"$work/$name/profile.log"; then
    status=1
    echo "bench.sh: the profile of $name failed:" >&2
    tail -n 20 "$work/$name/profile.log" >&2
  fi
}

layouts=()
if [[ "$multi_gpu" == true ]]; then
  # dp and ep keep one micro-batch per GPU per step, pp runs 4 per step.
  train_layout dp2 2 --set parallel.dp=2 --set train.global_batch_size=$((2 * micro_batch))
  train_layout dp2_gather_in_step 2 --set parallel.dp=2 --set train.global_batch_size=$((2 * micro_batch)) \
    --set parallel.overlap_param_gather=false
  train_layout ep2 2 --set parallel.dp=2 --set parallel.ep=2 --set train.global_batch_size=$((2 * micro_batch))
  train_layout pp2_1f1b 2 --set parallel.pp=2 --set parallel.schedule=1f1b \
    --set train.global_batch_size=$((4 * micro_batch))
  train_layout pp2_dualpipe 2 --set parallel.pp=2 --set parallel.schedule=dualpipe \
    --set train.global_batch_size=$((4 * micro_batch))
  train_layout tp2 2 --set parallel.tp=2 --set parallel.dp=1 --set train.global_batch_size=$((2 * micro_batch))
  train_layout tp2sp 2 --set parallel.tp=2 --set parallel.dp=1 --set parallel.sequence_parallel=true \
    --set train.global_batch_size=$((2 * micro_batch))
else
  echo "bench.sh: profiling $profile_steps steps of $config (hai-train --profile-steps)" >&2
  if ! "${limit[@]}" "$build_dir/apps/hai-train/hai-train" --config "$config" --profile-steps "$profile_steps" \
      --set logging.run_dir="$work/profile" --set checkpoint.dir="$work/profile_checkpoints" \
      --set checkpoint.resume=none --set checkpoint.save=false "${train_overrides[@]}" \
      >"$work/profile.out" 2>"$work/profile.log"; then
    status=1
    echo "bench.sh: the step profile failed:" >&2
    tail -n 20 "$work/profile.log" >&2
  fi
fi

python3 - "$work/ops.json" "$run_dir/metrics.jsonl" "$work/train.log" "$steps" "$out" "$work/profile.out" \
    "$work" "$weak_dir" "${layouts[@]}" <<'PYTHON' || status=1
import json, statistics, sys
ops_path, metrics_path, log_path, steps, out_path, profile_path, work, weak_dir = sys.argv[1:9]
layouts = sys.argv[9:]
steps = int(steps)
with open(ops_path) as f:
    ops = json.load(f)

def training_summary(metrics_path, log_path):
    try:
        with open(metrics_path) as f:
            records = [json.loads(line) for line in f if line.strip()]
    except (OSError, json.JSONDecodeError) as error:
        with open(log_path, errors="replace") as f:
            tail = f.read()[-2000:]
        return {"error": f"no metrics from hai-train: {error}", "log_tail": tail}
    step_records = [r for r in records if "step_ms" in r and not r.get("skipped")]
    warmup = max(3, steps // 5)
    measured = [r for r in step_records if r["step"] > warmup]
    if not measured:
        return {"error": f"hai-train logged {len(step_records)} steps, none after the {warmup} warm-up steps"}
    def values(key):
        return [r[key] for r in measured if r.get(key) is not None] or [float("nan")]
    return {
        "steps_logged": len(step_records),
        "warmup_steps": warmup,
        "steps_measured": len(measured),
        "tokens_per_step": measured[-1]["tokens"] - measured[-2]["tokens"] if len(measured) > 1 else None,
        "tokens_per_s": statistics.mean(values("tokens_per_s")),
        "mfu": statistics.mean(values("mfu")),
        "step_ms": statistics.median(values("step_ms")),
        "step_ms_min": min(values("step_ms")),
        "peak_mem_gib": max(values("mem_gib")),
        "final_loss": measured[-1]["loss"],
    }

def step_profile():
    try:
        with open(profile_path) as f:
            lines = [line for line in f if line.strip()]
        return json.loads(lines[-1])
    except (OSError, IndexError, json.JSONDecodeError) as error:
        return {"error": f"no step profile from hai-train --profile-steps: {error}"}

def layout_profile(path):
    """The step time split by phase kind, and a pipeline's bubble report (rank 0's), from hai-train --profile-steps."""
    try:
        with open(path) as f:
            report = json.load(f)
    except (OSError, json.JSONDecodeError) as error:
        return {"error": f"no step profile: {error}"}
    profile = {"step_ms": report["step_ms"], "kinds": {k["kind"]: round(k["share"], 4) for k in report["kinds"]}}
    if "pipeline" in report:
        profile["pipeline"] = report["pipeline"]
    return profile

def losses(metrics_path):
    """{step: loss} of a run's metrics.jsonl."""
    try:
        with open(metrics_path) as f:
            records = [json.loads(line) for line in f if line.strip()]
    except (OSError, json.JSONDecodeError):
        return {}
    return {r["step"]: r["loss"] for r in records if "loss" in r and "step_ms" in r}

def loss_vs_one_gpu(layout):
    """The largest relative difference of the per-step losses from the one-GPU run (same global batch)."""
    reference, run = losses(metrics_path), losses(f"{work}/{layout}/run/metrics.jsonl")
    steps = sorted(set(reference) & set(run))
    if not steps:
        return {"error": "no common logged steps"}
    diffs = [abs(run[s] - reference[s]) / abs(reference[s]) for s in steps]
    return {"steps_compared": len(steps), "max_rel_diff": max(diffs), "last_rel_diff": diffs[-1]}

def multi_gpu_summary(one_gpu_runs):
    """Each layout's summary; per_gpu_vs_one_gpu is against the one-GPU run with a GPU's share of its tokens per
    step (dp 2 and ep 2: one micro-batch; pp 2 at 4 micro-batches: two), i.e. the same work per GPU and step."""
    summaries = {}
    one_gpu = one_gpu_runs[0]  # the global batch of dp 2 and ep 2: their loss reference
    for layout in layouts:
        summary = training_summary(f"{work}/{layout}/run/metrics.jsonl", f"{work}/{layout}/train.log")
        if "error" not in summary:
            summary["gpus"] = 2
            summary["tokens_per_s_per_gpu"] = summary["tokens_per_s"] / 2
            per_gpu_tokens = summary["tokens_per_step"] / 2 if summary.get("tokens_per_step") else None
            for reference in one_gpu_runs:
                if "error" not in reference and reference.get("tokens_per_step") == per_gpu_tokens:
                    summary["per_gpu_vs_one_gpu"] = summary["tokens_per_s_per_gpu"] / reference["tokens_per_s"]
                    summary["one_gpu_reference_tokens_per_step"] = per_gpu_tokens
            if "error" not in one_gpu_runs[1]:
                summary["peak_mem_vs_one_gpu"] = summary["peak_mem_gib"] / one_gpu_runs[1]["peak_mem_gib"]
            summary["profile"] = layout_profile(f"{work}/{layout}/profile/step_profile.json")
            if summary.get("tokens_per_step") == one_gpu.get("tokens_per_step"):
                summary["loss_vs_one_gpu"] = loss_vs_one_gpu(layout)
        summaries[layout] = summary
    tp2, tp2sp = summaries.get("tp2", {}), summaries.get("tp2sp", {})
    if "peak_mem_gib" in tp2 and "peak_mem_gib" in tp2sp:
        tp2sp["peak_mem_vs_tp2"] = tp2sp["peak_mem_gib"] / tp2["peak_mem_gib"]
    return summaries

one_gpu = training_summary(metrics_path, log_path)
result = {"ops": ops, "training": one_gpu, "step_profile": step_profile()}
if layouts:
    per_gpu_batch = training_summary(f"{weak_dir}/run/metrics.jsonl", f"{weak_dir}.log")
    result = {"training": one_gpu, "one_gpu_per_gpu_batch": per_gpu_batch,
              "multi_gpu": multi_gpu_summary([one_gpu, per_gpu_batch])}
text = json.dumps(result, indent=2)
print(text)
with open(out_path, "w") as f:
    f.write(text + "\n")
if any("error" in run for run in [result["training"], result.get("one_gpu_per_gpu_batch", {})]) or \
        any("error" in s for s in result.get("multi_gpu", {}).values()):
    sys.exit(1)
PYTHON
# The runs' logs beside OUT (OUT without .json, then _logs/), for a look at what a failed or slow run printed.
logs=${out%.json}_logs
mkdir -p "$logs"
(cd "$work" && find . \( -name '*.log' -o -name '*.out' -o -name step_profile.json \) -print0 |
  xargs -0 -r cp --parents -t "$logs")
echo "bench.sh: wrote $out (logs in $logs)" >&2
exit "$status"
