#!/usr/bin/env python3
"""bench/results/trace_overhead.json from one or more result files of bench/trace_overhead/turns.py:
each run's ratios to plain (median over rounds of paired block ratios), the median over runs,
host memory, and whether each target is met. The runs' own files keep the raw forwards.

usage: summarize.py RUN.json [RUN.json ...] -o bench/results/trace_overhead.json
"""
import argparse
import json
import os
import statistics

TARGETS = {"kjoule_no_params": 1.15, "kjoule_default": 1.20, "kjoule_api": 1.35}
SHARE_TARGET = 1 / 3
RSS_TARGET_MB = 200
ALL_TARGETS = {**TARGETS, "kjoule_default_extra_over_torch_profiler_extra": SHARE_TARGET,
               "rss_over_plain_mb": RSS_TARGET_MB}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    runs = []
    for path in a.runs:
        with open(path) as f:
            r = json.load(f)
        if not r.get("summary"):
            raise SystemExit(f"{path}: no summary (a turns.py run that recorded no round?)")
        runs.append((path, r))
    pinned = [(p, r) for p, r in runs if r.get("pin_cpu") is not None]
    basis = pinned or runs
    is_contestant = lambda v: isinstance(v, dict) and "ratio_q25" in v
    names = sorted({n for _, r in basis for n in r["summary"] if is_contestant(r["summary"][n])})
    per_run = {}
    for path, r in runs:
        s = r["summary"]
        per_run[os.path.basename(path)] = {
            "date": r["date"], "device": r["device"], "command": r["command"], "pin_cpu": r.get("pin_cpu"),
            "rounds": r["rounds_done"], "block": r["block"], "copies": r.get("copies", 1),
            "ratio_to_plain": {n: s[n]["ratio_to_plain"] for n in s if is_contestant(s[n])},
            "ratio_iqr": {n: [s[n]["ratio_q25"], s[n]["ratio_q75"]] for n in s if is_contestant(s[n])},
            "kjoule_default_extra_over_torch_profiler_extra":
                s.get("kjoule_default_extra_over_torch_profiler_extra", {}).get("ratio_to_plain"),
            "rss_over_plain_mb": s.get("rss_over_plain_mb", {})}
    med = {}
    for n in names:
        xs = [r["summary"][n]["ratio_to_plain"] for _, r in basis if n in r["summary"]]
        med[n] = {"median_over_runs": statistics.median(xs), "runs": xs}
    # what kjoule adds over CUPTI's own activity records, in the runs that measured that floor
    over_floor = {}
    for _, r in basis:
        sm = r["summary"]
        if "cupti_activity_only" in sm:
            for n in names:
                if n.startswith("kjoule") and n in sm:
                    over_floor.setdefault(n, []).append(sm[n]["ratio_to_plain"] / sm["cupti_activity_only"]["ratio_to_plain"])
    over_floor = {n: {"median_over_runs": statistics.median(v), "runs": v} for n, v in over_floor.items()}
    share = None
    if "kjoule_default" in med and "torch_profiler" in med:
        share = (med["kjoule_default"]["median_over_runs"] - 1) / (med["torch_profiler"]["median_over_runs"] - 1)
    rss = {}
    for n in names:
        xs = [r["summary"]["rss_over_plain_mb"][n] for _, r in basis if n in r["summary"].get("rss_over_plain_mb", {})]
        if xs:
            rss[n] = statistics.median(xs)
    verdict = {n: {"target": t, "median": med[n]["median_over_runs"], "worst_run": max(med[n]["runs"]),
                   "met_by_median": med[n]["median_over_runs"] <= t, "met_by_every_run": max(med[n]["runs"]) <= t}
               for n, t in TARGETS.items() if n in med}
    if share is not None:
        verdict["kjoule_default_extra_over_torch_profiler_extra"] = {"target": SHARE_TARGET, "median": share,
                                                                     "met_by_median": share <= SHARE_TARGET}
    if rss:
        worst = max(v for n, v in rss.items() if n.startswith("kjoule"))
        verdict["rss_over_plain_mb"] = {"target": RSS_TARGET_MB, "worst_kjoule_setting": worst,
                                        "met": worst <= RSS_TARGET_MB}
    first = basis[0][1]
    result = {
        "benchmark": "trace_overhead: wall time per BLOOM-560M forward (seq 5, fp16, launch-bound), plain "
                     "and traced processes taking turns (bench/trace_overhead/turns.py)",
        "device": first["device"], "date": max(r["date"] for _, r in basis),
        "command": "scripts/gpu/checks.sh overhead (TURNS_PIN=<cpu>), then bench/trace_overhead/summarize.py "
                   + " ".join(os.path.basename(p) for p, _ in runs),
        "method": first["estimator"] + "; runs with every launching thread pinned to one CPU form the "
                  "estimate (median over runs); unpinned runs are listed beside them",
        "targets": ALL_TARGETS,
        "ratio_to_plain": med, "ratio_to_cupti_activity_only": over_floor,
        "kjoule_default_extra_over_torch_profiler_extra": share,
        "rss_over_plain_mb": rss, "verdict": verdict, "runs": per_run}
    with open(a.output + ".tmp", "w") as f:
        json.dump(result, f, indent=1)
    os.replace(a.output + ".tmp", a.output)
    print(f"{'contestant':22s} {'median':>7s}  runs")
    for n in names:
        print(f"{n:22s} {med[n]['median_over_runs']:7.3f}  " + " ".join(f"{x:.3f}" for x in med[n]["runs"]))
    for n, v in over_floor.items():
        print(f"{n} over CUPTI's activity alone: {v['median_over_runs']:.3f} (" + " ".join(f"{x:.3f}" for x in v["runs"]) + ")")
    if share is not None:
        print(f"kjoule defaults' extra time over torch.profiler's: {share:.3f}")
    for n, v in verdict.items():
        print(f"{n}: {v}")


if __name__ == "__main__":
    main()
