#!/usr/bin/env python3
"""Summary of a `kjoule replay --json` file, for the device scripts' logs: coverage, the warm and
cold sums against the traced GPU busy time, and the kernels that did not replay.

usage: replay_summary.py REPLAY.json [--energy-wall-s S]
  --energy-wall-s S: the replay ran with --energy and took S s; adds a "bench" block (wall, kernels
  with energy, s per kernel) to the file and prints it."""
import argparse
import json


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("replay_json")
    ap.add_argument("--energy-wall-s", type=float)
    a = ap.parse_args()
    with open(a.replay_json) as f:
        d = json.load(f)
    if a.energy_wall_s is not None:
        n = sum(1 for k in d["kernels"] if k.get("energy"))
        d["bench"] = {"energy_replay_wall_s": a.energy_wall_s, "kernels_with_energy": n,
                      "s_per_kernel": a.energy_wall_s / max(n, 1)}
        with open(a.replay_json, "w") as f:
            json.dump(d, f, indent=1)
        print(f"energy replay: {a.energy_wall_s:.1f} s for {n} unique kernels = {a.energy_wall_s / max(n, 1):.2f} s/kernel")
    busy = d["traced_busy_ns"]
    print("coverage", d["coverage"])
    for key in ("replay_warm_sum_ns", "replay_cold_sum_ns"):
        v = d[key]
        print(key, v, "(%+.1f%% vs traced busy %d)" % (100 * (v - busy) / busy, busy) if v and busy else "")
    for k in d["kernels"]:
        if k["status"] not in ("ok", "relocated"):
            print("  not replayed:", k["unique_id"], k["name"][:60], k["status"], (k["error"] or "")[:120])


if __name__ == "__main__":
    main()
