#!/usr/bin/env python3
"""Per-kernel GPU time of a training step from an Nsight Compute CSV (scripts/kernel_split.sh writes it).

usage: kernel_split.py NCU_CSV STEPS [--top N] [--json OUT]
Sums gpu__time_duration.sum by kernel name (template arguments kept, parameter lists dropped), divides by the number
of profiled steps, and prints the kernels by time: ms a step, calls a step, name. ncu runs the SMs at base clocks,
so the times are ~1.1-1.2x those of an unprofiled step; compare them with each other, not with step_ms.
"""
import argparse
import collections
import csv
import json
import re

UNIT_MS = {"nsecond": 1e-6, "ns": 1e-6, "usecond": 1e-3, "us": 1e-3, "msecond": 1.0, "ms": 1.0, "second": 1e3}


def kernel_times(path):
    header, times, calls = None, collections.defaultdict(float), collections.Counter()
    with open(path, newline="") as stream:
        for row in csv.reader(stream):
            if "Kernel Name" in row and "Metric Value" in row:
                header = row
                continue
            if header is None or len(row) != len(header):
                continue
            record = dict(zip(header, row))
            if record["Metric Name"] != "gpu__time_duration.sum":
                continue
            name = re.sub(r"\(.*", "", record["Kernel Name"])
            times[name] += float(record["Metric Value"].replace(",", "")) * UNIT_MS[record.get("Metric Unit", "ns")]
            calls[name] += 1
    return times, calls


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv")
    parser.add_argument("steps", type=float)
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--json")
    args = parser.parse_args()
    times, calls = kernel_times(args.csv)
    ordered = sorted(times.items(), key=lambda item: -item[1])
    total = sum(times.values()) / args.steps
    print(f"{total:.2f} ms of kernels a step ({sum(calls.values()) / args.steps:.0f} launches)")
    for name, ms in ordered[: args.top]:
        print(f"{ms / args.steps:8.3f} ms {calls[name] / args.steps:7.1f} calls  {name}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"ms_per_step": total, "kernels": [
                {"name": name, "ms": ms / args.steps, "calls": calls[name] / args.steps} for name, ms in ordered]},
                out, indent=1)


if __name__ == "__main__":
    main()
