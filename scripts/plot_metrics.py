#!/usr/bin/env python3
"""Summarise and plot hai-train metrics.jsonl files (training loss, eval loss).

  scripts/plot_metrics.py runs/tiny/metrics.jsonl [more.jsonl ...] [--png curve.png] [--every 100]

Prints a markdown table (step, smoothed training loss, eval loss per file) and, with --png, draws the curves
(needs matplotlib: apt-get install python3-matplotlib). Training loss is the lm_loss smoothed by an exponential
moving average (--smoothing, default 0.9) so runs can be compared at a glance.
"""
import argparse
import json
import math
import sys


def read_metrics(path):
    steps, evals = {}, {}
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            if "eval_loss" in record:
                evals[record["step"]] = record["eval_loss"]
            elif "lm_loss" in record and record["lm_loss"] is not None:
                steps[record["step"]] = record["lm_loss"]
    return steps, evals


def smooth(values, factor):
    smoothed, average = {}, None
    for step in sorted(values):
        value = values[step]
        average = value if average is None else factor * average + (1 - factor) * value
        smoothed[step] = average
    return smoothed


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+")
    parser.add_argument("--png")
    parser.add_argument("--every", type=int, default=100, help="table row interval in steps")
    parser.add_argument("--smoothing", type=float, default=0.9)
    args = parser.parse_args()

    plt = None
    if args.png:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            sys.exit("plot_metrics.py: --png needs matplotlib: install the Debian package python3-matplotlib "
                     "(apt-get install python3-matplotlib), or leave out --png for the table")
    try:
        runs = [(path, *read_metrics(path)) for path in args.files]
    except OSError as error:
        sys.exit(f"plot_metrics.py: cannot read {error.filename}: {error.strerror}")
    header = "| step | " + " | ".join(f"{p} train (EMA) | {p} eval" for p, _, _ in runs) + " |"
    print(header)
    print("|" + "---|" * (1 + 2 * len(runs)))
    last = max(max(steps) for _, steps, _ in runs)
    for step in list(range(args.every, last + 1, args.every)):
        cells = []
        for _, steps, evals in runs:
            train = smooth(steps, args.smoothing).get(step, math.nan)
            cells += [f"{train:.4f}", f"{evals[step]:.4f}" if step in evals else ""]
        print(f"| {step} | " + " | ".join(cells) + " |")

    if plt is not None:
        figure, axes = plt.subplots(figsize=(8, 5))
        for path, steps, evals in runs:
            curve = smooth(steps, args.smoothing)
            axes.plot(list(curve), list(curve.values()), label=f"{path} train (EMA {args.smoothing})")
            if evals:
                axes.plot(list(evals), list(evals.values()), "o-", label=f"{path} eval")
        axes.set_xlabel("step")
        axes.set_ylabel("loss (nats per token)")
        axes.grid(alpha=0.3)
        axes.legend()
        figure.savefig(args.png, dpi=120, bbox_inches="tight")


if __name__ == "__main__":
    main()
