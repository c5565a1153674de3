#!/usr/bin/env python3
"""Gathers scripts/gpu/cost_self.sh output (one line per run: model, setting, the process's median
forward time, each part of kjoule's launch handler as calls x mean ns, and where the loader put the
library's thread-local block where the line says) into one JSON result.

usage: cost_self_json.py --device NAME [--device-of LABEL=NAME ...] --date ISO --command CMD [--note TEXT]
       LABEL=FILE ... -o OUT.json
"""
import argparse
import json
import os
import re
import sys

LINE = re.compile(r"^(\S+) (\S+): forward_ms_median ([0-9.]+) n (\d+) \|(.*)$")
PART = re.compile(r"^\s*(\w+) (\d+) x ([0-9.]+) ns$")
TLS = re.compile(r"^\s*thread-local block (static|dynamic|unknown)$")


def parse(path):
    """Every run line of one cost_self.sh output; a line that does not parse is an error."""
    runs = []
    with open(path) as f:
        for no, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            m = LINE.match(line)
            if not m:
                sys.exit(f"{path}:{no}: not a cost_self.sh run line: {line[:80]!r}")
            parts, tls = {}, None
            for item in filter(str.strip, m.group(5).split(";")):
                p, t = PART.match(item), TLS.match(item)
                if t:
                    tls = t.group(1)
                    continue
                if not p:
                    sys.exit(f"{path}:{no}: not 'part calls x ns': {item.strip()!r}")
                parts[p.group(1)] = {"calls": int(p.group(2)), "mean_ns": float(p.group(3))}
            run = {"model": m.group(1), "setting": m.group(2), "forward_ms_median": float(m.group(3)),
                   "forwards": int(m.group(4)), "parts": parts}
            if tls:
                run["thread_local_block"] = tls
            runs.append(run)
    return runs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", required=True, help="the GPU machine of every input not named by --device-of")
    ap.add_argument("--device-of", action="append", default=[], metavar="LABEL=NAME",
                    help="another machine for the input LABEL")
    ap.add_argument("--date", required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("--note", default="")
    ap.add_argument("inputs", nargs="+", metavar="LABEL=FILE")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    device_of = dict(x.partition("=")[::2] for x in a.device_of)
    calls = {}
    for arg in a.inputs:
        label, sep, path = arg.partition("=")
        if not sep or not label:
            sys.exit(f"cost_self_json.py: {arg!r}: expected LABEL=FILE")
        calls[label] = {"file": os.path.relpath(path), "device": device_of.get(label, a.device), "runs": parse(path)}
    unknown = set(device_of) - set(calls)
    if unknown:
        sys.exit(f"cost_self_json.py: --device-of names no input: {' '.join(sorted(unknown))}")
    out = {"benchmark": "cost_self (scripts/gpu/cost_self.sh): kjoule's launch handler timed part by part",
           "device": a.device, "date": a.date, "command": a.command, "note": a.note, "calls": calls}
    with open(a.output + ".tmp", "w") as f:
        json.dump(out, f, indent=1)
    os.replace(a.output + ".tmp", a.output)


if __name__ == "__main__":
    main()
