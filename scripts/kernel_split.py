#!/usr/bin/env python3
"""Per-kernel GPU time of a training step from an Nsight Compute CSV (scripts/kernel_split.sh writes it).

usage: kernel_split.py NCU_CSV STEPS [--steady] [--top N] [--json OUT]
Sums gpu__time_duration.sum by kernel name (template arguments kept, parameter lists dropped), divides by the number
of profiled steps, and prints the kernels by time: ms a step, calls a step, name. With --steady the launches up to
the end of the first optimizer step (its first run of launches named *adamw*) are left out, with the set-up before
it, and the rest is divided by STEPS - 1: the steady state, without the first step's one-off work (the first
rounding of every compute copy). ncu runs the SMs at base clocks unless told otherwise (kernel_split.sh), so the
times are then ~1.1-1.2x those of an unprofiled step; compare them with each other, not with step_ms.
"""
import argparse
import collections
import csv
import json
import re

UNIT_MS = {"nsecond": 1e-6, "ns": 1e-6, "usecond": 1e-3, "us": 1e-3, "msecond": 1.0, "ms": 1.0, "second": 1e3}


def launches(path):
    """(kernel name, ms) of every launch in the file, in launch order."""
    header, result = None, []
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
            ms = float(record["Metric Value"].replace(",", "")) * UNIT_MS[record.get("Metric Unit", "ns")]
            result.append((name, ms))
    return result


def after_first_step(ordered):
    """The launches after the first run of launches named *adamw* (all of them when there is none)."""
    names = [name for name, _ in ordered]
    first = next((i for i, name in enumerate(names) if "adamw" in name), None)
    if first is None:
        return ordered
    end = first
    while end < len(names) and "adamw" in names[end]:
        end += 1
    return ordered[end:]


def kernel_times(ordered):
    times, calls = collections.defaultdict(float), collections.Counter()
    for name, ms in ordered:
        times[name] += ms
        calls[name] += 1
    return times, calls


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv")
    parser.add_argument("steps", type=float)
    parser.add_argument("--steady", action="store_true")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--json")
    args = parser.parse_args()
    recorded = launches(args.csv)
    steps = args.steps
    if args.steady:
        if steps < 2:
            parser.error("--steady needs at least 2 steps")
        recorded, steps = after_first_step(recorded), steps - 1
    times, calls = kernel_times(recorded)
    ordered = sorted(times.items(), key=lambda item: -item[1])
    total = sum(times.values()) / steps
    print(f"{total:.2f} ms of kernels a step ({sum(calls.values()) / steps:.0f} launches)")
    for name, ms in ordered[: args.top]:
        print(f"{ms / steps:8.3f} ms {calls[name] / steps:7.1f} calls  {name}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"ms_per_step": total, "kernels": [
                {"name": name, "ms": ms / steps, "calls": calls[name] / steps} for name, ms in ordered]},
                out, indent=1)


if __name__ == "__main__":
    main()
