#!/usr/bin/env python3
"""One operator sum against several programs that train the same model: the step `kjoule predict
--model` gives from a --no-trace result of bench/predict_step/run.py (sweeps, fit, predict), judged
against each --no-sweep result of the same shape (the step measured, untraced and under kjoule run:
eager PyTorch, torch.compile, ...). Per program: the errors in time and energy against the mean
traced step and the untraced one, and per kernel tier the predicted time against the measured, so
what the sum misses in each program can be named. CPU only: reads the results as they came from
the device, nothing typed in (commit them beside the result: its command names them); refuses
results of other shapes or GPUs.

usage: bench/predict_step/programs.py --sweeps NOTRACE.json --traced STEP.json [--traced STEP.json ...]
       [--note TEXT] -o bench/results/predict_step_programs.json
"""
import argparse
import datetime
import json
import os
import sys

from run import err_pct, num  # this folder's run.py: the step bench whose results are judged here

SHAPE_KEYS = ("layers", "hidden", "heads", "seq", "batch", "precision", "norm")


def pct(pred, meas):
    """(pred - meas) / meas in %, to 0.01, None (never 0) when either is missing."""
    e = err_pct(pred, meas)
    return None if e is None else round(e, 2)


def predicted_by_tier(sweeps):
    """{tier: {time_us, energy_j, operators}} of the operator sum; a tier with an operator lacking
    its prediction is None there."""
    by = {}
    for e in sweeps["operators"]:
        d = by.setdefault(e["tier"], {"time_us": 0.0, "energy_j": 0.0, "operators": []})
        d["operators"].append(e["op"])
        t, j = num(e.get("step_time_us")), num(e.get("step_energy_uj"))
        d["time_us"] = None if t is None or d["time_us"] is None else d["time_us"] + t
        d["energy_j"] = None if j is None or d["energy_j"] is None else d["energy_j"] + j / 1e6
    return by


def sweep_sums(sweeps):
    """The step's energy (J) from the sweep's own rows at the model's shape, each operator counted
    at the mean of its warm- and cold-L2 energies (as the models learn it), at the warm one, at the
    cold one, and with the GEMM tier alone at its cold one (a GEMM beside memory-bound kernels runs
    at a higher clock, as the cold figure's flush makes it); None where a figure is missing."""
    out = {}
    for name, pick in (("mean", lambda o, d: "%s_uj" % d), ("warm", lambda o, d: "%s_uj_warm" % d),
                       ("cold", lambda o, d: "%s_uj_cold" % d),
                       ("gemm_cold", lambda o, d: "%s_uj_cold" % d if o["tier"] == "gemm" else "%s_uj" % d)):
        total = 0.0
        for o in sweeps["operators"]:
            m = o.get("measured_at_shape") or {}
            dirs = ("fwd", "bwd") if o.get("backward") else ("fwd",)
            vals = [num(m.get(pick(o, d))) for d in dirs]
            if None in vals:
                total = None
                break
            total += o["count"] * sum(vals) / 1e6
        out[name] = total
    return out


def judge(pred, by_tier, traced, path, sums):
    m = traced.get("measured")
    if not m:
        return {"file": path, "program": traced["settings"].get("program", "eager"),
                "not_measured": "no measured step in this result (see its skipped)",
                "skipped": traced.get("skipped")}
    un = traced.get("untraced") or {}
    un_ms = num(un.get("ms_per_step_median"))
    t, e = pred["time_us"], pred["energy_uj"] / 1e6 if pred["energy_uj"] is not None else None
    tiers = []
    seen = set()
    for tr in (traced.get("compare") or {}).get("tiers") or []:
        p = by_tier.get(tr["tier"], {"time_us": 0.0, "energy_j": 0.0, "operators": []})
        seen.add(tr["tier"])
        mu = num(tr.get("measured_us"))
        tiers.append({"tier": tr["tier"], "operators": p["operators"], "predicted_us": p["time_us"],
                      "predicted_j": p["energy_j"], "measured_us": mu,
                      "launches_per_iteration": num(tr.get("launches_per_iteration")),
                      "unique_kernels": tr.get("unique_kernels"),
                      "predicted_minus_measured_us": (p["time_us"] - mu
                                                      if p["time_us"] is not None and mu is not None else None)})
    for k, p in by_tier.items():  # a tier the program ran no kernel in
        if k not in seen:
            tiers.append({"tier": k, "operators": p["operators"], "predicted_us": p["time_us"],
                          "predicted_j": p["energy_j"], "measured_us": 0.0, "launches_per_iteration": 0.0,
                          "unique_kernels": 0, "predicted_minus_measured_us": p["time_us"]})
    tiers.sort(key=lambda d: -(d["measured_us"] or 0))
    return {"file": path, "program": traced["settings"].get("program", "eager"),
            "device": traced["device"], "date": traced["date"], "command": traced["command"],
            "git_commit": traced.get("git_commit"),
            "measured": {"step_time_us_mean": num(m.get("step_time_us_mean")),
                         "step_time_us_median": num(m.get("step_time_us_median")),
                         "step_energy_j_mean": num(m.get("step_energy_j_mean")),
                         "step_energy_j_unc_of_mean": num(m.get("step_energy_j_unc_of_mean")),
                         "kernel_sum_us": num((m.get("decomposition_us") or {}).get("kernel_sum")),
                         "kernels_per_iteration": num(m.get("kernels_per_iteration")),
                         "untraced_ms_per_step_median": un_ms,
                         "untraced_energy_j_per_step": num(un.get("energy_j_per_step_nvml")),
                         "untraced_energy_not_measured": un.get("energy_not_measured")},
            "errors_pct": {"time_vs_traced_mean_wall": pct(t, num(m.get("step_time_us_mean"))),
                           "energy_vs_traced_mean": pct(e, num(m.get("step_energy_j_mean"))),
                           "time_vs_untraced": pct(t, un_ms * 1e3 if un_ms else None),
                           "energy_vs_untraced": pct(e, num(un.get("energy_j_per_step_nvml"))),
                           "time_vs_kernel_sum": pct(t, num((m.get("decomposition_us") or {}).get("kernel_sum")))},
            "energy_of_sweep_rows_pct": {k: pct(v, num(m.get("step_energy_j_mean"))) for k, v in sums.items()},
            "tiers": tiers}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sweeps", required=True, help="run.py --no-trace result")
    ap.add_argument("--traced", action="append", required=True, help="run.py --no-sweep result")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--note", default=None, help="what the result is (which device runs, what differs)")
    a = ap.parse_args()
    sweeps = json.load(open(a.sweeps))
    pred = sweeps.get("predicted")
    if not pred or num(pred.get("time_us")) is None or num(pred.get("energy_uj")) is None:
        sys.exit(f"{a.sweeps}: no predicted step time and energy in it (predicted: {pred})")
    if pred.get("missing_models"):
        sys.exit(f"{a.sweeps}: the prediction lacks models: {pred['missing_models']}")
    traced = []
    for path in a.traced:
        t = json.load(open(path))
        for k in SHAPE_KEYS:
            if t["model"].get(k) != sweeps["model"].get(k):
                sys.exit(f"{path}: model {k} {t['model'].get(k)!r} is not the sweeps' {sweeps['model'].get(k)!r}")
        if t["device"] != sweeps["device"]:
            sys.exit(f"{path}: measured on {t['device']!r}, the sweeps on {sweeps['device']!r}")
        traced.append((path, t))
    by_tier = predicted_by_tier(sweeps)
    sums = sweep_sums(sweeps)
    res = {"benchmark": "predict_step_programs",
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "command": " ".join(["bench/predict_step/programs.py"] + sys.argv[1:]),
           "device": sweeps["device"], "model": sweeps["model"], "note": a.note,
           "predicted": {"time_us": pred["time_us"], "energy_j": pred["energy_uj"] / 1e6,
                         "from": a.sweeps, "date": sweeps["date"], "command": sweeps["command"],
                         "git_commit": sweeps.get("git_commit"),
                         "by_tier": by_tier},
           "sweep_rows_energy_j": sums,
           "programs": [judge(pred, by_tier, t, p, sums) for p, t in traced]}
    tmp = a.output + ".tmp"
    with open(tmp, "w") as f:
        json.dump(res, f, indent=1, allow_nan=False)
    os.replace(tmp, a.output)
    f = lambda x, d=1: "-" if x is None else f"{x:.{d}f}"
    print(f"predicted step: {f(pred['time_us'] / 1e3, 2)} ms, {f(pred['energy_uj'] / 1e6, 3)} J ({sweeps['device']})")
    w = max([15] + [len(p["program"]) for p in res["programs"]])
    print(f"{'program':<{w}} {'ms traced':>9} {'J traced':>9} {'ms untr.':>9} {'J untr.':>9} "
          f"{'time %':>7} {'energy %':>8} {'t% untr':>7} {'e% untr':>7}")
    for p in res["programs"]:
        if "not_measured" in p:
            print(f"{p['program']:<{w}} not measured: {p['not_measured']}")
            continue
        m, e = p["measured"], p["errors_pct"]
        print(f"{p['program']:<{w}} {f(m['step_time_us_mean'] and m['step_time_us_mean'] / 1e3, 2):>9} "
              f"{f(m['step_energy_j_mean'], 3):>9} {f(m['untraced_ms_per_step_median'], 2):>9} "
              f"{f(m['untraced_energy_j_per_step'], 3):>9} {f(e['time_vs_traced_mean_wall']):>7} "
              f"{f(e['energy_vs_traced_mean']):>8} {f(e['time_vs_untraced']):>7} {f(e['energy_vs_untraced']):>7}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
