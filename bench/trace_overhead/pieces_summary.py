#!/usr/bin/env python3
"""Which piece of CUPTI a program pays for outside a --capture window: turns.py results of one
program whose contestants take CUPTI apart (a window that never opens; the same under
KJOULE_CUPTI_STUDY=no_activity / no_subscribe / no_nvtx and all three; KJOULE_COST_STUDY=512,
nothing ever enabled; an injection library that does nothing) into one result file, each run with
its own command, rounds and ratios to untraced, and a table printed last.

  pieces_summary.py OUT.json COMMAND TURNS.json [TURNS.json ...]
"""
import datetime
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_pairs import write_json  # noqa: E402
from outside_summary import KEEP, print_ratios  # noqa: E402  (one copy)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    out, command, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    res = {"benchmark": "capture_cupti_pieces", "command": command,
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "device": None, "runs": []}
    for path in files:
        try:
            with open(path) as f:
                t = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"pieces_summary.py: {path}: {e}")
        if not isinstance(t.get("summary"), dict):
            sys.exit(f"pieces_summary.py: {path}: no turns summary")
        res["device"] = res["device"] or t.get("device")
        res["runs"].append({k: t.get(k) for k in KEEP})
    write_json(out, res)
    print(f"{'run':8s} {'contestant':52s} {'ratio':>6s} {'q25':>6s} {'q75':>6s}  rounds")
    for i, run in enumerate(res["runs"]):
        print_ratios(str(i), run, 52)


if __name__ == "__main__":
    main()
