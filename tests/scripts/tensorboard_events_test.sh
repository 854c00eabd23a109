#!/usr/bin/env bash
# logging.tensorboard end to end: hai-train writes event files that read_tfevents.py (a reader of the format; the
# `tensorboard` package is used instead where it can be imported) decodes back to metrics.jsonl's values; a
# resumed run adds a second file that starts with a SessionLog START at the checkpoint's step.
# Usage: tensorboard_events_test.sh HAI_TRAIN WORK_DIR
set -euo pipefail
hai_train=$1
work=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rm -rf "$work" && mkdir -p "$work" && cd "$work"
cat > tb.yaml <<'YAML'
model: {vocab_size: 257, hidden_size: 32, num_layers: 2, first_dense_layers: 1, dense_ffn_size: 64, num_heads: 2,
        q_lora_rank: 16, kv_lora_rank: 16, qk_nope_head_dim: 8, qk_rope_head_dim: 8, v_head_dim: 8,
        max_seq_len: 16, mtp_depth: 1,
        moe: {routed_experts: 4, shared_experts: 1, experts_per_token: 2, expert_ffn_size: 16, groups: 2,
              groups_per_token: 1}}
train: {steps: 4, seq_len: 16, micro_batch_size: 2, global_batch_size: 4, eval_interval: 2, eval_batches: 2}
data: {source: synthetic}
checkpoint: {dir: run/checkpoints, interval: 2}
logging: {run_dir: run, interval: 1, tensorboard: true}
runtime: {device: cpu}
YAML
"$hai_train" --config tb.yaml > first.log 2>&1 || { cat first.log; exit 1; }
sleep 1  # NOTE: a new second, so the resumed run's file sorts after the first (TensorBoard reads them in order)
"$hai_train" --config tb.yaml --set train.steps=6 > second.log 2>&1 || { cat second.log; exit 1; }
python3 "$here/read_tfevents.py" run | tee reader.log
grep -q "session starts at \[4\]" reader.log || { echo "the resumed file has no SessionLog START at step 4"; exit 1; }
if python3 -c "import tensorboard" 2>/dev/null; then
  python3 - <<'PY'
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
import glob
accumulator = EventAccumulator("run/tensorboard")
accumulator.Reload()
steps = [event.step for event in accumulator.Scalars("train/loss")]
assert steps == [1, 2, 3, 4, 5, 6], steps
print("tensorboard package: train/loss at steps", steps)
PY
else
  echo "tensorboard_events_test: the tensorboard Python package is not installed; read_tfevents.py checked the files"
fi
