#!/usr/bin/env python3
"""Summarise the FP8 study of scripts/fp8_study.sh (docs/fp8.md).

  scripts/plot_fp8.py OUT_DIR [--png fp8_loss.png] [--summary summary.json] [--smoothing 0.95]

Reads OUT_DIR/loss_{bf16,fp8}.jsonl and OUT_DIR/speed_{bf16,fp8}.jsonl (hai-train's metrics; either pair may be
missing) and prints a markdown table:
- loss parity: the training lm_loss of each run smoothed by an exponential moving average (--smoothing), the final
  smoothed values, their relative difference |fp8 - bf16| / bf16 (the target: under 0.25%) and its largest value
  over the second half of the run, and the last eval_loss of each;
- speed: mean tokens/s and median step time after the warm-up steps (the first max(3, steps / 5), as
  scripts/bench.sh), peak memory, and the fp8 / bf16 ratio of tokens/s (the target: at least 1.3).
- seeds (when OUT_DIR also has loss_{bf16,fp8}_seed<i>.jsonl, from fp8_study.sh --seeds): each precision's final
  smoothed lm_loss over all seeds, its mean and sample standard deviation, and the relative difference of the two
  means against the relative spread between one precision's seeds: a difference well inside that spread is run-to-run
  noise, not an FP8 cost.
- control (when OUT_DIR has loss_control[_seed<i>].jsonl, from fp8_study.sh --runs ...,control): bf16 runs that differ
  from the bf16 runs only in the order of their sums (half the micro-batch size); per seed, the relative difference
  of each run's final smoothed lm_loss from the same seed's bf16 run, for fp8 and for the control, and their means
  over the seeds: the control's is how far rounding alone moves a run.
--summary writes the same numbers as JSON; --png draws the smoothed curves and their relative difference (needs
matplotlib; without it the table is all), and with control runs also <png name>_seeds.png: each seed's signed
difference from its bf16 run over the steps, fp8 solid and control dashed.
"""
import argparse
import glob
import importlib.util
import json
import os
import re
import statistics

LOSS_TARGET = 0.0025
SPEED_TARGET = 1.3


def read_steps(path):
    """The step records of a metrics.jsonl (not eval or expert-load records), by step; None when missing."""
    if not os.path.exists(path):
        return None
    steps = {}
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            if "step_ms" in record and "eval_loss" not in record:
                steps[record["step"]] = record
    return steps


def last_eval_loss(path):
    losses = []
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            if record.get("eval_loss") is not None:
                losses.append(record["eval_loss"])
    return losses[-1] if losses else None


def smoothed_losses(steps, factor):
    """[(step, EMA of lm_loss)] over the steps that were not skipped."""
    curve, average = [], None
    for step in sorted(steps):
        record = steps[step]
        if record.get("skipped") or record.get("lm_loss") is None:
            continue
        value = record["lm_loss"]
        average = value if average is None else factor * average + (1 - factor) * value
        curve.append((step, average))
    return curve


def loss_summary(out_dir, factor):
    runs = {mode: read_steps(os.path.join(out_dir, f"loss_{mode}.jsonl")) for mode in ("bf16", "fp8")}
    if any(not steps for steps in runs.values()):
        return None
    curves = {mode: smoothed_losses(steps, factor) for mode, steps in runs.items()}
    bf16, fp8 = dict(curves["bf16"]), dict(curves["fp8"])
    common = sorted(set(bf16) & set(fp8))
    relative = [(step, abs(fp8[step] - bf16[step]) / bf16[step]) for step in common]
    second_half = [value for step, value in relative if step > common[-1] / 2]
    final = relative[-1][1]
    summary = {"steps": common[-1], "smoothing": factor, "target": LOSS_TARGET, "final_relative_difference": final,
               "max_relative_difference_second_half": max(second_half), "passes": final < LOSS_TARGET}
    for mode in ("bf16", "fp8"):
        skipped = sum(1 for record in runs[mode].values() if record.get("skipped"))
        summary[mode] = {"final_smoothed_lm_loss": curves[mode][-1][1],
                         "final_lm_loss": runs[mode][common[-1]]["lm_loss"],
                         "last_eval_loss": last_eval_loss(os.path.join(out_dir, f"loss_{mode}.jsonl")),
                         "skipped_steps": skipped}
    return summary, curves, relative


def final_smoothed(path, factor):
    steps = read_steps(path)
    curve = smoothed_losses(steps, factor) if steps else []
    return curve[-1][1] if curve else None


def seed_files(out_dir, mode):
    """{seed: path} of one kind of loss run (seed 0: loss_<mode>.jsonl)."""
    paths = {}
    first = os.path.join(out_dir, f"loss_{mode}.jsonl")
    if os.path.exists(first):
        paths[0] = first
    for path in glob.glob(os.path.join(out_dir, f"loss_{mode}_seed*.jsonl")):
        paths[int(re.search(r"_seed(\d+)\.jsonl$", path).group(1))] = path
    return paths


def seed_summary(out_dir, factor):
    """The final smoothed lm_loss of every seed of each precision, or None with fewer than two seeds of bf16 and fp8
    and no control run; with control runs also each seed's fp8 and control differences from its bf16 run."""
    finals = {}
    for mode in ("bf16", "fp8", "control"):
        values = {seed: final_smoothed(path, factor) for seed, path in sorted(seed_files(out_dir, mode).items())}
        finals[mode] = {seed: value for seed, value in values.items() if value is not None}
    has_control = bool(finals["control"])
    if not has_control and any(len(finals[mode]) < 2 for mode in ("bf16", "fp8")):
        return None
    summary = {"smoothing": factor, "target": LOSS_TARGET}
    for mode, values in finals.items():
        if len(values) < 2:
            continue
        mean = statistics.mean(values.values())
        summary[mode] = {"final_smoothed_lm_loss": values, "mean": mean, "stdev": statistics.stdev(values.values()),
                         "relative_stdev": statistics.stdev(values.values()) / mean}
    if "bf16" in summary and "fp8" in summary:
        bf16_mean, fp8_mean = summary["bf16"]["mean"], summary["fp8"]["mean"]
        summary["relative_difference_of_means"] = (fp8_mean - bf16_mean) / bf16_mean
        summary["passes"] = abs(summary["relative_difference_of_means"]) < LOSS_TARGET
    if has_control:
        summary["paired"] = paired_differences(finals)
    return summary


def paired_differences(finals):
    """Per seed with a bf16 run: (run - bf16) / bf16 of the fp8 and the control run, and the mean over the seeds of
    each difference and of its absolute value."""
    paired = {"per_seed": {}}
    for mode in ("fp8", "control"):
        differences = {seed: (finals[mode][seed] - bf16) / bf16 for seed, bf16 in finals["bf16"].items()
                       if seed in finals[mode]}
        for seed, difference in differences.items():
            paired["per_seed"].setdefault(seed, {})[mode] = difference
        if differences:
            paired[mode] = {"mean": statistics.mean(differences.values()),
                            "mean_absolute": statistics.mean(abs(d) for d in differences.values())}
    return paired


def speed_of(steps):
    step_numbers = sorted(steps)
    warmup = max(3, len(step_numbers) // 5)
    measured = [steps[step] for step in step_numbers[warmup:] if not steps[step].get("skipped")]
    if not measured:
        return {"error": f"{len(step_numbers)} steps, none after the {warmup} warm-up steps"}
    return {"steps_measured": len(measured), "warmup_steps": warmup,
            "tokens_per_s": statistics.mean(r["tokens_per_s"] for r in measured),
            "step_ms": statistics.median(r["step_ms"] for r in measured),
            "peak_mem_gib": max(steps[step]["mem_gib"] for step in step_numbers),
            # NOTE: mfu is null on the CPU (no peak to compare with).
            "mfu": None if any(r["mfu"] is None for r in measured) else statistics.mean(r["mfu"] for r in measured)}


def speed_summary(out_dir):
    runs = {mode: read_steps(os.path.join(out_dir, f"speed_{mode}.jsonl")) for mode in ("bf16", "fp8")}
    if any(not steps for steps in runs.values()):
        return None
    summary = {mode: speed_of(steps) for mode, steps in runs.items()}
    if all("tokens_per_s" in summary[mode] for mode in runs):
        ratio = summary["fp8"]["tokens_per_s"] / summary["bf16"]["tokens_per_s"]
        summary.update({"tokens_per_s_ratio": ratio, "target": SPEED_TARGET, "passes": ratio >= SPEED_TARGET,
                        "peak_mem_ratio": summary["fp8"]["peak_mem_gib"] / summary["bf16"]["peak_mem_gib"]})
    return summary


def cell(value):
    return f"{value:.4f}" if isinstance(value, float) else "" if value is None else str(value)


def print_seeds(seeds):
    modes = [mode for mode in ("bf16", "fp8", "control") if mode in seeds]
    if modes:
        print(f"| seeds: final smoothed lm_loss | {' | '.join(modes)} |\n|---|{'---|' * len(modes)}")
        all_seeds = sorted(set().union(*(seeds[mode]["final_smoothed_lm_loss"] for mode in modes)))
        for seed in all_seeds:
            row = [cell(seeds[mode]["final_smoothed_lm_loss"].get(seed)) for mode in modes]
            print(f"| seed {seed} | {' | '.join(row)} |")
        for key in ("mean", "stdev"):
            print(f"| {key} | {' | '.join(cell(seeds[mode][key]) for mode in modes)} |")
        print()
    if "relative_difference_of_means" in seeds:
        print(f"relative difference of the means {100 * seeds['relative_difference_of_means']:+.3f}% (target "
              f"|.| < {100 * LOSS_TARGET}%: {'pass' if seeds['passes'] else 'FAIL'}); spread between seeds "
              f"(relative stdev) bf16 {100 * seeds['bf16']['relative_stdev']:.3f}%, "
              f"fp8 {100 * seeds['fp8']['relative_stdev']:.3f}%\n")
    if "paired" in seeds:
        paired = seeds["paired"]
        print("| seed: (run - bf16) / bf16 | fp8 | control |\n|---|---|---|")
        for seed, differences in sorted(paired["per_seed"].items()):
            row = [f"{100 * differences[mode]:+.3f}%" if mode in differences else "" for mode in ("fp8", "control")]
            print(f"| seed {seed} | {' | '.join(row)} |")
        for key in ("mean", "mean_absolute"):
            row = [f"{100 * paired[mode][key]:+.3f}%" if mode in paired else "" for mode in ("fp8", "control")]
            print(f"| {key} | {' | '.join(row)} |")
        print()


def print_tables(loss, speed):
    if loss:
        print("| loss parity | bf16 | fp8 |\n|---|---|---|")
        for key in ("final_smoothed_lm_loss", "final_lm_loss", "last_eval_loss", "skipped_steps"):
            print(f"| {key} | {cell(loss['bf16'][key])} | {cell(loss['fp8'][key])} |")
        print(f"\nsteps {loss['steps']}: final relative difference of the smoothed lm_loss "
              f"{100 * loss['final_relative_difference']:.3f}% (target < {100 * LOSS_TARGET}%: "
              f"{'pass' if loss['passes'] else 'FAIL'}); largest over the second half "
              f"{100 * loss['max_relative_difference_second_half']:.3f}%\n")
    if speed:
        print("| speed | bf16 | fp8 |\n|---|---|---|")
        for key in ("tokens_per_s", "step_ms", "peak_mem_gib", "mfu"):
            print(f"| {key} | {cell(speed['bf16'].get(key))} | {cell(speed['fp8'].get(key))} |")
        if "tokens_per_s_ratio" in speed:
            print(f"\nfp8 / bf16 tokens/s: {speed['tokens_per_s_ratio']:.3f}x (target >= {SPEED_TARGET}x: "
                  f"{'pass' if speed['passes'] else 'FAIL'}); peak memory ratio {speed['peak_mem_ratio']:.3f}")


def plot(curves, relative, png):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no matplotlib: no plot)")
        return
    figure, (losses, difference) = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    for mode, curve in curves.items():
        losses.plot([s for s, _ in curve], [v for _, v in curve], label=mode)
    losses.set_ylabel("smoothed training lm_loss")
    losses.legend()
    difference.plot([s for s, _ in relative], [100 * v for _, v in relative])
    difference.axhline(100 * LOSS_TARGET, linestyle="--", color="gray")
    difference.set_ylabel("|fp8 - bf16| / bf16 (%)")
    difference.set_xlabel("step")
    figure.tight_layout()
    figure.savefig(png, dpi=120)
    print(f"wrote {png}")


def paired_curves(out_dir, factor):
    """{seed: {mode: [(step, (run - bf16) / bf16)]}} of the smoothed lm_loss, for fp8 and control runs."""
    curves = {}
    for seed, bf16_path in seed_files(out_dir, "bf16").items():
        bf16 = dict(smoothed_losses(read_steps(bf16_path), factor))
        for mode in ("fp8", "control"):
            path = seed_files(out_dir, mode).get(seed)
            if path:
                run = dict(smoothed_losses(read_steps(path), factor))
                curves.setdefault(seed, {})[mode] = [(step, (run[step] - bf16[step]) / bf16[step])
                                                     for step in sorted(set(run) & set(bf16))]
    return curves


def plot_paired(curves, png):
    import matplotlib.pyplot as plt
    figure, axes = plt.subplots(figsize=(8, 4.5))
    for index, (seed, modes) in enumerate(sorted(curves.items())):
        for mode, style in (("fp8", "-"), ("control", "--")):
            if mode in modes:
                axes.plot([s for s, _ in modes[mode]], [100 * v for _, v in modes[mode]], style, color=f"C{index}",
                          label=f"seed {seed} {mode}")
    for sign in (1, -1):
        axes.axhline(sign * 100 * LOSS_TARGET, linestyle=":", color="gray")
    axes.set_ylabel("(run - bf16) / bf16 of the smoothed lm_loss (%)")
    axes.set_xlabel("step")
    axes.legend(fontsize="small", ncol=2)
    figure.tight_layout()
    figure.savefig(png, dpi=120)
    print(f"wrote {png}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("--png")
    parser.add_argument("--summary")
    parser.add_argument("--smoothing", type=float, default=0.95)
    args = parser.parse_args()
    loss_result = loss_summary(args.out_dir, args.smoothing)
    loss = loss_result[0] if loss_result else None
    speed = speed_summary(args.out_dir)
    seeds = seed_summary(args.out_dir, args.smoothing)
    print_tables(loss, speed)
    if seeds:
        print_seeds(seeds)
    if args.summary:
        with open(args.summary, "w") as f:
            json.dump({"loss": loss, "speed": speed, "seeds": seeds}, f, indent=2)
            f.write("\n")
    if args.png and loss_result:
        plot(loss_result[1], loss_result[2], args.png)
    if args.png and seeds and "paired" in seeds and importlib.util.find_spec("matplotlib"):
        plot_paired(paired_curves(args.out_dir, args.smoothing), os.path.splitext(args.png)[0] + "_seeds.png")


if __name__ == "__main__":
    main()
