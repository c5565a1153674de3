#!/usr/bin/env python3
"""Summarise a `kjoule replay` text log of the JAX step example into JSON (device, date, command,
raw counts): replay status per unique kernel and cache, failures by first words, and the
iteration's in-sequence figures. The log is what scripts/gpu/graphs.sh (or the command below)
leaves; nothing here is typed by hand.

  summarize.py REPLAY.log --command CMD --date ISO -o OUT.json
"""
import argparse
import collections
import json
import re


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("log")
    ap.add_argument("--command", required=True)
    ap.add_argument("--date", required=True)
    ap.add_argument("-o", "--out", required=True)
    a = ap.parse_args()
    text = open(a.log).read()
    dev = re.search(r"kjoule replay \S+ on (.+?) \(sm_", text)
    status = collections.Counter()
    fails = collections.Counter()
    # the progress lines: one per unique kernel replayed ("[n/N ...] STATUS name")
    for m in re.finditer(r"^\[\d+/\d+ [^\]]*\] (\w+)", text, re.M):
        status[m.group(1)] += 1
    for m in re.finditer(r"^\s+\d+ \S.*?: failed: (.*)$", text, re.M):
        fails[re.sub(r"\(grid.*?\)", "(...)", m.group(1))[:120]] += 1
    it = re.search(r"iteration: Σ medians ([\d.]+) ms vs traced GPU busy ([\d.]+) ms \(([-+\d.]+)%\)", text)
    head = re.search(r"kjoule replay: (\d+) unique kernels, (\d+) of them inside the iterations \('([^']*)'\)", text)
    out = {"benchmark": "replay of a jitted JAX step (XLA command buffers): per-kernel and in-sequence",
           "device": dev.group(1) if dev else None, "date": a.date, "command": a.command,
           "unique_kernels": int(head.group(1)) if head else None,
           "inside_iterations": int(head.group(2)) if head else None,
           "iteration_range": head.group(3) if head else None,
           "unique_kernels_by_status": dict(status), "failures": dict(fails.most_common(10)),
           "sequence_sum_ms": float(it.group(1)) if it else None,
           "traced_busy_ms": float(it.group(2)) if it else None,
           "sequence_vs_busy_pct": float(it.group(3)) if it else None}
    json.dump(out, open(a.out, "w"), indent=1)
    print(json.dumps(out, indent=1)[:1500])


if __name__ == "__main__":
    main()
