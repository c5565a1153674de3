#!/usr/bin/env python3
"""bench/results/trace_overhead.json from the three measurements of tracing cost on BLOOM-560M:

  KJOULE_TOGGLE    bench/api_cost/api_toggle.py under kjoule run: off / --no-params / defaults /
                   --api / --api=all switched between blocks of one process
  PROFILER_TOGGLE  bench/api_cost/api_toggle.py --torch-profiler: torch.profiler on / off between
                   blocks of one untraced process
  PROCESSES        bench/trace_overhead/run.py: whole runs, plain / traced / torch.profiler
                   (host memory; its time ratios are as noisy as the host)

usage: combine.py KJOULE_TOGGLE PROFILER_TOGGLE PROCESSES --device NAME --date DATE -o OUT
"""
import argparse
import json


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kjoule_toggle")
    ap.add_argument("profiler_toggle")
    ap.add_argument("processes")
    ap.add_argument("--device", required=True)
    ap.add_argument("--date", required=True)
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    k = json.load(open(a.kjoule_toggle))
    p = json.load(open(a.profiler_toggle))
    proc = json.load(open(a.processes))
    est = {}
    for name, key in (("fastest_block", "fastest_block_ratio_to_off"), ("median_of_rounds", "median_ratio_to_off")):
        r = dict(k[key])
        r["torch_profiler"] = p[key]["torch_profiler"]
        r["kjoule_default_extra_over_torch_profiler_extra"] = (r["defaults"] - 1) / (r["torch_profiler"] - 1)
        est[name] = r
    rss = {n: v["rss_over_plain_mb"] for n, v in proc["summary"].items() if isinstance(v, dict)}
    plain_ms = proc["summary"]["plain"]["forward_ms_per_round"]
    out = {
        "benchmark": "trace_overhead: wall time per BLOOM-560M forward (seq 5, fp16, launch-bound) under "
                     "kjoule's settings and torch.profiler, as ratios to untraced",
        "device": a.device, "date": a.date,
        "command": "scripts/gpu/checks.sh apitoggle (kjoule run -- python3 bench/api_cost/api_toggle.py; "
                   "python3 bench/api_cost/api_toggle.py --torch-profiler) and scripts/gpu/checks.sh overhead "
                   "(bench/trace_overhead/run.py), combined by bench/trace_overhead/combine.py",
        "method": "Ratios come from blocks of 15 forwards (after 3 untimed) inside ONE process, settings "
                  "shuffled each round: for kjoule, 'off' (no callbacks, no activity; CUPTI loaded) against "
                  "--no-params, defaults, --api, --api=all; for torch.profiler, an untraced process with the "
                  "profiler entered around some blocks. Whole-process comparisons on this shared host are "
                  f"unusable for ratios (plain's median forward was {min(plain_ms):.1f} to {max(plain_ms):.1f} "
                  "ms from one run to the next) and serve for host memory only.",
        "targets": {"no_params": 1.15, "defaults": 1.20, "api": 1.35,
                    "kjoule_default_extra_over_torch_profiler_extra": 1 / 3, "rss_over_plain_mb": 200},
        "ratio_to_untraced": est,
        "host_memory_over_plain_mb": rss,
        "raw": {"kjoule_toggle": k, "profiler_toggle": p, "processes": proc},
    }
    with open(a.output, "w") as f:
        json.dump(out, f, indent=1)
    for name, r in est.items():
        print(name, " ".join(f"{s} {v:.3f}" for s, v in r.items()))
    print("rss over plain MB", rss)


if __name__ == "__main__":
    main()
