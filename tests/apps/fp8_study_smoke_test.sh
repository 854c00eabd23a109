#!/usr/bin/env bash
# scripts/fp8_study.sh --cpu-smoke end to end: two seeds of bf16, fp8 and the control run, three at a time; the
# summary must hold every run's final loss and the paired differences, and the control (bf16 summed in another
# order) must stay within rounding of its bf16 run after a few steps.
#   fp8_study_smoke_test.sh BUILD_DIR WORK_DIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=$2/fp8_study_smoke
rm -rf "$out"
FP8_SMOKE_STEPS=4 HAI_BUILD_DIR=$1 bash "$root/scripts/fp8_study.sh" "$out" --cpu-smoke --only loss --seeds 2 \
    --jobs 3 --runs bf16,fp8,control --set optimizer.grad_clip=1.0
python3 - "$out/summary.json" <<'PYTHON'
import json, math, sys
seeds = json.load(open(sys.argv[1]))["seeds"]
for mode in ("bf16", "fp8", "control"):
    finals = seeds[mode]["final_smoothed_lm_loss"]
    assert sorted(finals) == ["0", "1"], (mode, finals)
    assert all(math.isfinite(v) and 4.0 < v < 6.0 for v in finals.values()), (mode, finals)
paired = seeds["paired"]
assert sorted(paired["per_seed"]) == ["0", "1"], paired
assert paired["control"]["mean_absolute"] < 1e-4, paired
assert paired["fp8"]["mean_absolute"] < 1e-3, paired
print("fp8_study smoke: ok", paired["fp8"], paired["control"])
PYTHON
