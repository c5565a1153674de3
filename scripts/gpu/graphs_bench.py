#!/usr/bin/env python3
"""Figures of graph-launched and compiler-generated programs (issue 11) from their run databases
and `kjoule compare --json`: one JSON with the device, date, command and raw numbers.

For each kind: kernels per iteration against the kernels of one graph launch, GPU busy per
iteration against the busy time of the iteration's own graph launches (union of their kernels and
copies, computed here from the database independently of compare), the replay sums, the replayed
graph iteration against traced busy, energy predicted against measured, replay time, and any inf,
NaN or ratio beyond 3x found in compare's output."""
import argparse
import datetime
import json
import math
import os
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "tools"))
from graph_iteration_check import graph_launch_busy  # noqa: E402  (one copy, tested by test_graph)


def timed(cmd, log, timeout):
    """Runs cmd with its output in log: (exit status, seconds), 124 when it ran past timeout."""
    t = time.monotonic()
    with open(log, "w") as f:
        try:
            rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            rc = 124
    return rc, round(time.monotonic() - t, 1)


def bad_numbers(x, path="", out=None):
    out = [] if out is None else out
    if isinstance(x, dict):
        for k, v in x.items():
            bad_numbers(v, f"{path}.{k}", out)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            bad_numbers(v, f"{path}[{i}]", out)
    elif isinstance(x, float) and not math.isfinite(x):
        out.append(path)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", required=True)
    ap.add_argument("--kinds", required=True)
    ap.add_argument("--command", default="")
    ap.add_argument("-o", "--out", required=True)
    a = ap.parse_args()
    times = {}
    tp = os.path.join(a.runs, "times.txt")
    if os.path.exists(tp):
        for line in open(tp):
            f = line.split()
            if len(f) >= 2:
                times.setdefault(f[0], {})[f[1]] = float(f[2])
    try:
        dev = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True).stdout.strip()
    except OSError:
        dev = None  # not on the GPU machine: the device each run database recorded
    res = {"device": dev, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "command": a.command,
           "kinds": {}}
    for k in a.kinds.split():
        p = os.path.join(a.runs, f"{k}.kjdb")
        if not os.path.exists(p):
            continue
        db = sqlite3.connect(p)
        try:
            c = json.load(open(os.path.join(a.runs, f"{k}.compare.json")))
        except (OSError, ValueError) as e:
            res["kinds"][k] = {"error": f"compare JSON unreadable: {e}"}
            continue
        gb, gk, nl, _, _ = graph_launch_busy(db, (c.get("iterations") or {}).get("region"))
        seq = {m: ns / 1e3 for m, ns in db.execute("SELECT mode, median_ns FROM replay_sequence WHERE median_ns > 0")}
        busy = c.get("busy_us")
        ratios = {}
        for key in ("replay_sum_warm_us", "replay_sum_cold_us", "replay_sum_sequence_us"):
            if c.get(key) is not None and c.get("kernel_sum_us"):
                ratios[key] = c[key] / c["kernel_sum_us"]
        row = db.execute("SELECT name, driver_version FROM device ORDER BY id LIMIT 1").fetchone()
        traced = db.execute("SELECT value FROM meta WHERE key = 'start_realtime'").fetchone()
        if res["device"] is None and row:
            res["device"] = f"{row[0]}, {row[1]} (from the run databases)"
        r = {
            "traced_at": traced[0] if traced else None,
            "command": (db.execute("SELECT value FROM meta WHERE key = 'command'").fetchone() or [None])[0],
            "iteration": c.get("iterations"),
            "kernels_per_iteration": c.get("kernels_per_iteration"),
            "graph_launches": nl,
            "graph_kernels_per_iteration_median": gk,
            "graph_launches_busy_us_median": gb,
            "busy_us": busy,
            "busy_vs_graph_launch_pct": (100 * (busy - gb) / gb) if (busy and gb) else None,
            "kernel_sum_us": c.get("kernel_sum_us"),
            "replay_sum_warm_us": c.get("replay_sum_warm_us"),
            "replay_sum_cold_us": c.get("replay_sum_cold_us"),
            "replay_sum_sequence_us": c.get("replay_sum_sequence_us"),
            "sequence_graph_us": seq.get("graph"),
            "sequence_eager_us": seq.get("eager"),
            "sequence_graph_vs_busy_pct": (100 * (seq["graph"] - busy) / busy) if (busy and seq.get("graph")) else None,
            "explained_fraction": c.get("explained_fraction"),
            "explained_fraction_sequence": c.get("explained_fraction_sequence"),
            "energy_measured_j": c.get("energy_measured_j"),
            "energy_predicted_j": c.get("energy_predicted_j"),
            "energy_error_pct": c.get("energy_error_pct"),
            "energy_kernels_extrapolated": c.get("energy_kernels_extrapolated"),
            "replay_status": dict(db.execute("SELECT status, count(*) FROM replay_kernel GROUP BY status").fetchall()),
            "unique_kernels": db.execute("SELECT count(*) FROM unique_kernel").fetchone()[0],
            "not_replayable_alone": [w["name"][:80] + ": " + w["reason"] for w in c.get("not_replayable_alone", [])],
            "replayed_sum_ratios": ratios,
            "ratios_beyond_3x": [k2 for k2, v in ratios.items() if not (1 / 3 <= v <= 3)],
            "non_finite_in_compare": bad_numbers(c),
            "seconds": times.get(k, {}),
        }
        res["kinds"][k] = r
    json.dump(res, open(a.out, "w"), indent=1)
    print(f"{'kind':12} {'k/iter':>7} {'k/graph':>8} {'busy':>9} {'vs launch':>9} {'seq graph':>9} {'vs busy':>8} {'expl':>6} {'e err%':>7} {'replay s':>8}")
    for k, r in res["kinds"].items():
        if "error" in r:
            print(k, r["error"])
            continue
        f = lambda v, w=8, p=1: (f"{v:{w}.{p}f}" if isinstance(v, (int, float)) else f"{'-':>{w}}")
        print(f"{k:12} {f(r['kernels_per_iteration'],7)} {f(r['graph_kernels_per_iteration_median'],8,0)} {f(r['busy_us'],9)} "
              f"{f(r['busy_vs_graph_launch_pct'],9,2)} {f(r['sequence_graph_us'],9)} {f(r['sequence_graph_vs_busy_pct'],8)} "
              f"{f(r['explained_fraction'],6,3)} {f(r['energy_error_pct'],7)} {f(r['seconds'].get('replay_s'),8)}")


if __name__ == "__main__":
    main()
