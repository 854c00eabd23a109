#!/usr/bin/env bash
# scripts/kernel_split.py on a small Nsight Compute CSV (the layout `ncu --csv --print-units base` writes: a header
# row, then one row per kernel launch and metric): per-kernel sums over the launches, in ms a step, by time; with
# --steady, over the launches after the first optimizer step.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/ncu.csv" <<'CSV'
==PROF== Connected to process 1
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","1","hai-train","h","void adamw_kernel<float>(Args)","1","7","(256, 1, 1)","(99, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","3,000,000"
"1","1","hai-train","h","gemm_kernel(int, float *)","1","7","(384, 1, 1)","(132, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","1,000,000"
"2","1","hai-train","h","gemm_kernel(int, float *)","1","7","(384, 1, 1)","(132, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","1,500,000"
"3","1","hai-train","h","void adamw_kernel<float>(Args)","1","7","(256, 1, 1)","(99, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","3,000,000"
CSV
python3 "$root/scripts/kernel_split.py" "$dir/ncu.csv" 2 --json "$dir/split.json" >"$dir/out.txt"
cat "$dir/out.txt"
python3 - "$dir/split.json" <<'PY'
import json, sys
split = json.load(open(sys.argv[1]))
assert abs(split["ms_per_step"] - 4.25) < 1e-9, split
kernels = split["kernels"]
assert [k["name"] for k in kernels] == ["void adamw_kernel<float>", "gemm_kernel"], kernels
assert abs(kernels[0]["ms"] - 3.0) < 1e-9 and kernels[0]["calls"] == 1.0, kernels
assert abs(kernels[1]["ms"] - 1.25) < 1e-9 and kernels[1]["calls"] == 1.0, kernels
PY
grep -q "4.25 ms of kernels a step (2 launches)" "$dir/out.txt"
# --steady: the set-up and the first step (up to its optimizer launches, here the first one) left out
python3 "$root/scripts/kernel_split.py" "$dir/ncu.csv" 2 --steady >"$dir/steady.txt"
cat "$dir/steady.txt"
grep -q "5.50 ms of kernels a step (3 launches)" "$dir/steady.txt"
echo "kernel_split_test: ok"
