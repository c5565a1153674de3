#!/usr/bin/env python3
"""capture_outside.sh's result: the turns of each program (OUT/outside_decode.json,
OUT/outside_gpt2m.json, either may be missing) into OUT/capture_outside.json, with the device, date
and command, and a table of ratios to untraced (median and quartiles over rounds) printed last.

  outside_summary.py OUT COMMAND
"""
import datetime
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_pairs import write_json  # noqa: E402

KEEP = ("workload", "command", "date", "rounds_done", "block", "estimator", "summary", "ratio_per_round")


def print_ratios(label, turns, width=32):
    """One line per contestant of a turns result: its ratio to untraced, quartiles and rounds."""
    for c, v in (turns.get("summary") or {}).items():
        if isinstance(v, dict) and isinstance(v.get("ratio_to_plain"), (int, float)):
            print(f"{label:8s} {c:{width}s} {v['ratio_to_plain']:6.3f} {v['ratio_q25']:6.3f} {v['ratio_q75']:6.3f}  "
                  f"{turns.get('rounds_done')}")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    out, command = sys.argv[1], sys.argv[2]
    res = {"benchmark": "capture outside the window (turns)", "command": command,
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "device": None, "programs": {}}
    for name in ("decode", "gpt2m"):
        try:
            with open(os.path.join(out, f"outside_{name}.json")) as f:
                t = json.load(f)
        except (OSError, ValueError) as e:
            res["programs"][name] = {"error": f"not measured: {e}"}
            continue
        res["device"] = res["device"] or t.get("device")
        res["programs"][name] = {k: t.get(k) for k in KEEP}
    write_json(os.path.join(out, "capture_outside.json"), res)
    print(f"{'program':8s} {'contestant':32s} {'ratio':>6s} {'q25':>6s} {'q75':>6s}  rounds")
    for name, p in res["programs"].items():
        print_ratios(name, p)
        if "error" in p:
            print(f"{name:8s} {p['error']}")


if __name__ == "__main__":
    main()
