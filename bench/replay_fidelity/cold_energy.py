#!/usr/bin/env python3
"""Energy predicted from per-kernel replays with warm L2 (same buffers again), with cold L2
(flushed before each launch; replay_energy_cold) and with their mean per kernel (compare's
prediction since 2026-11-27), against the measured energy, over the untuned-programs bench calls
given (each ran `bench/untuned_programs/run.py` on the device: `kjoule run`, `kjoule replay
--energy` with defaults, `kjoule compare --json`). Writes one JSON with every call as it came
(device, date, command, raw compare figures), a row per program and call, and the mean absolute
error of each estimate over the rows compare judged. CPU only; nothing is typed in.

usage: bench/replay_fidelity/cold_energy.py CALL.json [CALL.json ...] -o bench/results/cold_energy.json
"""
import argparse
import datetime
import json
import os


def rows_of(call, name):
    out = []
    for prog, p in call["programs"].items():
        c, e = p.get("compare", {}), p.get("energy_errors_pct", {})
        out.append({"call": name, "device": call["device"], "program": prog,
                    "judged": c.get("energy_error_judgeable"),
                    "measured_j": c.get("energy_measured_j"),
                    "kernels_warm_j": c.get("energy_kernels_warm_j"),
                    "kernels_cold_j": c.get("energy_kernels_cold_j"),
                    "kernels_mean_j": c.get("energy_kernels_j"), "idle_j": c.get("energy_idle_j"),
                    "cold_time_coverage": c.get("energy_cold_time_coverage"),
                    "cold_ratio": c.get("energy_cold_ratio"),
                    "error_warm_pct": e.get("warm"), "error_cold_pct": e.get("cold"),
                    "error_mean_pct": e.get("mean"), "replay_s": p.get("replay_s"),
                    "unique_kernels": p.get("unique_kernels")})
    return out


def mae(rows, key):
    v = [abs(r[key]) for r in rows if r[key] is not None]
    return {"n": len(v), "mean_abs_pct": round(sum(v) / len(v), 2) if v else None,
            "max_abs_pct": round(max(v), 2) if v else None}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("calls", nargs="+")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    calls, rows = [], []
    for f in a.calls:
        d = json.load(open(f))
        name = os.path.splitext(os.path.basename(f))[0]
        calls.append({"name": name, **d})
        rows += rows_of(d, name)
    judged = [r for r in rows if r["judged"]]
    with_cold = [r for r in judged if r["error_cold_pct"] is not None]
    res = {"benchmark": "cold_energy", "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
           "command": "bench/replay_fidelity/cold_energy.py " + " ".join(a.calls),
           "rows": rows,
           "judged": {k: mae(judged, "error_" + k + "_pct") for k in ("warm", "mean")},
           "judged_with_cold": {k: mae(with_cold, "error_" + k + "_pct") for k in ("warm", "cold", "mean")},
           "calls": calls}
    with open(a.output, "w") as f:
        json.dump(res, f, indent=1)
    print(f"{'call':16s} {'program':15s} {'judged':6s} {'warm%':>7s} {'cold%':>7s} {'mean%':>7s} {'coldcov':>7s} device")
    for r in rows:
        print(f"{r['call']:16s} {r['program']:15s} {str(r['judged']):6s} {str(r['error_warm_pct']):>7s}"
              f" {str(r['error_cold_pct']):>7s} {str(r['error_mean_pct']):>7s} {str(r['cold_time_coverage']):>7s} {r['device']}")
    print("judged:", res["judged"], "\njudged with a cold figure:", res["judged_with_cold"])


if __name__ == "__main__":
    main()
