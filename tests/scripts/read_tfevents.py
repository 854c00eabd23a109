#!/usr/bin/env python3
"""A small reader of TensorBoard event files (tfevents), standing in for the `tensorboard` package, which Debian 12
does not ship (no python3-tensorboard) and PyPI is not used here.

  read_tfevents.py RUN_DIR

Checks every record's framing and masked CRC-32C, decodes the Event protobufs (wall_time, step, file_version,
summary.value {tag, simple_value}, session_log.status) and compares the scalars with RUN_DIR/metrics.jsonl:
train/loss, lm/mtp/balance loss, lr, grad norm, loss scale, tokens/s, step ms, memory per step, eval/loss per
evaluation, expert_load/cv per MoE layer, as float32. Exits non-zero with a message on the first difference.
"""
import glob
import json
import math
import os
import struct
import sys


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(path):
    with open(path, "rb") as stream:
        data = stream.read()
    at = 0
    while at < len(data):
        header = data[at:at + 12]
        (length,) = struct.unpack("<Q", header[:8])
        (length_crc,) = struct.unpack("<I", header[8:12])
        assert length_crc == masked(header[:8]), f"{path}: bad length CRC at byte {at}"
        body = data[at + 12:at + 12 + length]
        (body_crc,) = struct.unpack("<I", data[at + 12 + length:at + 16 + length])
        assert body_crc == masked(body), f"{path}: bad data CRC at byte {at}"
        yield body
        at += 16 + length


def varint(data, at):
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def fields(data):
    """(field number, wire type, value) of a protobuf message: ints, bytes, or raw 4/8-byte strings."""
    at = 0
    while at < len(data):
        key, at = varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = varint(data, at)
        elif wire == 1:
            value, at = data[at:at + 8], at + 8
        elif wire == 2:
            length, at = varint(data, at)
            value, at = data[at:at + length], at + length
        elif wire == 5:
            value, at = data[at:at + 4], at + 4
        else:
            raise ValueError(f"wire type {wire}")
        yield number, wire, value


def decode_event(data):
    event = {"step": 0, "values": {}}
    for number, _, value in fields(data):
        if number == 1:
            event["wall_time"] = struct.unpack("<d", value)[0]
        elif number == 2:
            event["step"] = value
        elif number == 3:
            event["file_version"] = value.decode()
        elif number == 5:
            for _, _, item in fields(value):
                tag, simple = None, None
                for field, _, part in fields(item):
                    if field == 1:
                        tag = part.decode()
                    elif field == 2:
                        simple = struct.unpack("<f", part)[0]
                event["values"][tag] = simple
        elif number == 6:
            event["session_status"] = dict((f, v) for f, _, v in fields(value)).get(1)
    return event


def as_float32(value):
    return struct.unpack("<f", struct.pack("<f", value))[0]


def same(written, expected):
    return (math.isnan(written) and math.isnan(expected)) or written == as_float32(expected)


def main():
    run_dir = sys.argv[1]
    files = sorted(glob.glob(os.path.join(run_dir, "tensorboard", "events.out.tfevents.*")))
    assert files, f"no event files under {run_dir}/tensorboard"
    scalars = {}  # (tag, step) -> value, later files replacing the steps they redo
    for path in files:
        events = [decode_event(body) for body in records(path)]
        assert events[0].get("file_version") == "brain.Event:2", f"{path}: first event {events[0]}"
        starts = [e["step"] for e in events if e.get("session_status") == 1]
        for event in events:
            for tag, value in event["values"].items():
                scalars[(tag, event["step"])] = value
        print(f"{os.path.basename(path)}: {len(events)} events, session starts at {starts}")

    step_tags = {"loss": "train/loss", "lm_loss": "train/lm_loss", "mtp_loss": "train/mtp_loss",
                 "balance_loss": "train/balance_loss", "lr": "train/lr", "grad_norm": "train/grad_norm",
                 "loss_scale": "train/loss_scale", "tokens_per_s": "perf/tokens_per_s", "step_ms": "perf/step_ms",
                 "mem_gib": "perf/mem_gib", "mfu": "perf/mfu"}
    checked = 0
    with open(os.path.join(run_dir, "metrics.jsonl")) as stream:
        for line in stream:
            record = json.loads(line)
            step = record["step"]
            if "loss" in record:
                for key, tag in step_tags.items():
                    if record[key] is None:  # not known (MFU on the CPU): left out
                        assert (tag, step) not in scalars, f"{tag} at step {step} written though unknown"
                        continue
                    assert same(scalars[(tag, step)], record[key]), f"{tag} step {step}: {scalars[(tag, step)]}"
                    checked += 1
            elif "eval_loss" in record:
                assert same(scalars[("eval/loss", step)], record["eval_loss"]), f"eval/loss step {step}"
                checked += 1
            elif "expert_load" in record:
                for layer in record["expert_load"]:
                    tag = f"expert_load/cv/layer_{layer['layer']}"
                    assert same(scalars[(tag, step)], layer["cv"]), f"{tag} step {step}"
                    checked += 1
    print(f"read_tfevents: {len(files)} file(s), {checked} scalars equal to metrics.jsonl")
    return files


if __name__ == "__main__":
    main()
