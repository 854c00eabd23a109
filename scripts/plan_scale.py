#!/usr/bin/env python3
"""The --dry-run plan of a config by pipeline rank, and the smallest world sizes on which it fits.

  scripts/plan_scale.py build/apps/hai-train/hai-train configs/deepseek_v3_671b.yaml --world-size 2048 \
      [--set key=value ...] [--device-memory-gib GIB] [--search]

Prints a markdown table of the plan at --world-size (GiB per pipeline rank: params, grads, optimizer, activations,
backward temporaries, pipeline buffers, total) and, with --search, for pp 8/16 x ep 8/32/64 the smallest world size
whose every rank fits: dp runs over the multiples of ep that divide the global batch (micro-batches per step a whole
number, even and >= 2 pp under dualpipe). docs/scale.md holds its output.
"""
import argparse
import json
import subprocess

GIB = 2 ** 30


def dry_run(binary, config, world, overrides, device_gib):
    command = [binary, "--config", config, "--dry-run", "--world-size", str(world)]
    if device_gib is not None:
        command += ["--device-memory-gib", str(device_gib)]
    for override in overrides:
        command += ["--set", override]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        return None  # a layout the config rules refuse
    return json.loads(result.stdout.strip().splitlines()[-1])


def plan_table(report):
    rows = ["| pipeline rank | stages (layers) | holds | parameters | params | grads | optimizer | activations "
            "| backward temporaries | pipeline buffers | total |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for rank in report["memory_per_pipeline_rank"]:
        stages = ", ".join(f"{s} ({a}-{b})" for s, (a, b) in zip(rank["stages"], rank["layers"]))
        holds = " + ".join(name for name, held in (("embedding", rank["embedding"]),
                                                  ("head, MTP", rank["head_and_mtp"])) if held) or "-"
        gib = [f"{rank[k] / GIB:.2f}" for k in ("params", "grads", "optimizer", "activations",
                                                   "backward_temporaries", "pipeline_buffers", "total")]
        rows.append(f"| {rank['pipeline_rank']} | {stages} | {holds} | {rank['parameters'] / 1e9:.2f}B | "
                    + " | ".join(gib) + " |")
    return "\n".join(rows)


def smallest_fitting(binary, config, overrides, device_gib, pp, ep, batch, max_world):
    """The smallest pp x dp that fits, dp a multiple of ep, and its largest rank's GiB; if none fits, None and the
    largest world tried with its GiB. Memory falls as dp grows (ZeRO-1), so a bisection."""
    candidates = [dp for dp in range(ep, max_world // pp + 1, ep)
                  if batch % dp == 0 and batch // dp >= 2 * pp and (batch // dp) % 2 == 0]

    def plan(dp):
        return dry_run(binary, config, pp * dp, overrides + [f"parallel.pp={pp}", f"parallel.ep={ep}"], device_gib)

    if not candidates:
        return None, None
    largest = plan(candidates[-1])
    if not largest["fits"]:
        return None, f"{pp * candidates[-1]}: {largest['memory_per_rank']['total'] / GIB:.2f}"
    low, high = 0, len(candidates) - 1  # candidates[high] fits
    while low < high:
        middle = (low + high) // 2
        if plan(candidates[middle])["fits"]:
            high = middle
        else:
            low = middle + 1
    return pp * candidates[high], f'{plan(candidates[high])["memory_per_rank"]["total"] / GIB:.2f}'


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary")
    parser.add_argument("config")
    parser.add_argument("--world-size", type=int, default=2048)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--device-memory-gib", type=float, default=None,
                        help="GiB of one device (default: the config's runtime.device_memory_gib)")
    parser.add_argument("--search", action="store_true")
    parser.add_argument("--global-batch", type=int, default=15360)
    parser.add_argument("--max-world", type=int, default=16384)
    args = parser.parse_args()
    report = dry_run(args.binary, args.config, args.world_size, args.overrides, args.device_memory_gib)
    print(f"world {args.world_size}, layout {report['layout']}, largest rank "
          f"{report['memory_per_rank']['total'] / GIB:.2f} GiB, "
          f"fits {report['device_memory_gib']:g} GiB: {report['fits']}")
    print()
    print(plan_table(report))
    if not args.search:
        return
    print()
    print("| pp | ep | smallest world that fits | largest rank there (GiB; if none: at the largest world tried) |")
    print("|---|---|---|---|")
    for pp in (8, 16):
        for ep in (8, 32, 64):
            world, gib = smallest_fitting(args.binary, args.config, args.overrides, args.device_memory_gib, pp, ep,
                                          args.global_batch, args.max_world)
            print(f"| {pp} | {ep} | {world if world else 'none up to ' + str(args.max_world)} | {gib or '-'} |")


if __name__ == "__main__":
    main()
