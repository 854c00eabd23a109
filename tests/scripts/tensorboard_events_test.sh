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
cp "$here/tiny_synthetic.yaml" tiny.yaml
settings=(--set train.eval_interval=2 --set checkpoint.interval=2 --set logging.tensorboard=true)
"$hai_train" --config tiny.yaml "${settings[@]}" --set train.steps=4 > first.log 2>&1 || { cat first.log; exit 1; }
sleep 1  # NOTE: a new second, so the resumed run's file sorts after the first (TensorBoard reads them in order)
"$hai_train" --config tiny.yaml "${settings[@]}" --set train.steps=6 > second.log 2>&1 || { cat second.log; exit 1; }
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
