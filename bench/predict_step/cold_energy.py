#!/usr/bin/env python3
"""The training-step bench with the sweep's energy counted as kjoule replay counts a kernel (the
mean of its warm-L2 and cold-L2 energies, since 2026-11-27) against the same bench with warm energies
(an earlier result): per operator, the energy at the step's shape (count x (fwd + bwd)) in each,
and the step's predicted energy against each measured step. Reads the results of
bench/predict_step/run.py as they came from the device; CPU only, nothing typed in.

usage: bench/predict_step/cold_energy.py --warm OLD.json --traced CALL.json [--sweeps CALL.json]
       -o bench/results/predict_step_cold_energy.json
--traced: a full run (trace, compare, sweeps; its sweeps may be incomplete); --sweeps: a
--no-trace run whose sweeps are complete (its prediction is judged against --traced's step).
"""
import argparse
import datetime
import json


def step_j(op):
    m = op.get("measured_at_shape")
    if not m or m.get("fwd_uj") is None:
        return None
    return (m["fwd_uj"] + (m.get("bwd_uj") or 0)) * op["count"] / 1e6


def pct(a, b):
    return None if a is None or not b else round(100 * (a - b) / b, 2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--warm", required=True)
    ap.add_argument("--traced", required=True)
    ap.add_argument("--sweeps")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    warm, traced = json.load(open(a.warm)), json.load(open(a.traced))
    sweeps = json.load(open(a.sweeps)) if a.sweeps else None
    w_ops = {o["op"]: o for o in warm["operators"]}
    s_ops = {o["op"]: o for o in sweeps["operators"]} if sweeps else {}
    rows = []
    for o in traced["operators"]:
        ew, et = step_j(w_ops.get(o["op"], {})), step_j(o)
        es = step_j(s_ops[o["op"]]) if o["op"] in s_ops else None
        rows.append({"op": o["op"], "count": o["count"], "warm_j": ew, "mean_j_traced_call": et,
                     "mean_j_sweeps_call": es, "traced_call_over_warm_pct": pct(et, ew),
                     "sweeps_call_over_warm_pct": pct(es, ew)})
    both = [r for r in rows if r["warm_j"] and r["mean_j_traced_call"]]
    res = {"benchmark": "predict_step_cold_energy",
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
           "command": "bench/predict_step/cold_energy.py --warm %s --traced %s%s" % (
               a.warm, a.traced, " --sweeps " + a.sweeps if a.sweeps else ""),
           "devices": {"warm": warm["device"], "traced": traced["device"],
                       "sweeps": sweeps["device"] if sweeps else None},
           "operators": rows,
           "ops_measured_in_both": {
               "n": len(both), "warm_j": round(sum(r["warm_j"] for r in both), 4),
               "mean_j": round(sum(r["mean_j_traced_call"] for r in both), 4)},
           "measured_step_j": {"warm_call": warm["measured"].get("step_energy_j_mean"),
                               "warm_call_untraced": (warm.get("untraced") or {}).get("energy_j_per_step_nvml"),
                               "traced_call": traced["measured"].get("step_energy_j_mean"),
                               "traced_call_untraced": (traced.get("untraced") or {}).get("energy_j_per_step_nvml")},
           "predicted_step_j": {"warm_call": warm["predicted"]["energy_uj"] / 1e6,
                                "sweeps_call": sweeps["predicted"]["energy_uj"] / 1e6 if sweeps else None},
           "raw": {"traced": traced, "sweeps": sweeps}}
    b = res["ops_measured_in_both"]
    b["mean_over_warm_pct"] = pct(b["mean_j"], b["warm_j"])
    m, p = res["measured_step_j"], res["predicted_step_j"]
    res["errors_pct"] = {
        "warm_prediction_vs_its_step": pct(p["warm_call"], m["warm_call"]),
        "warm_prediction_vs_its_untraced_step": pct(p["warm_call"], m["warm_call_untraced"]),
        "mean_prediction_vs_traced_call_step": pct(p["sweeps_call"], m["traced_call"]),
        "mean_prediction_vs_traced_call_untraced_step": pct(p["sweeps_call"], m["traced_call_untraced"])}
    with open(a.output, "w") as f:
        json.dump(res, f, indent=1)
    for r in rows:
        print(f"{r['op']:28s} warm {r['warm_j']}  mean (traced call) {r['mean_j_traced_call']}"
              f" ({r['traced_call_over_warm_pct']} %)  mean (sweeps call) {r['mean_j_sweeps_call']} ({r['sweeps_call_over_warm_pct']} %)")
    print("ops in both:", b)
    print("measured:", m, "\npredicted:", p, "\nerrors:", res["errors_pct"])


if __name__ == "__main__":
    main()
