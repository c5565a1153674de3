#!/usr/bin/env python3
"""Turn one scripts/gpu/pipeline.sh output folder (bloom560m.kjdb, compare.json, replay.json,
pipeline.log, timings.txt; replay_timing.txt is for reading) into the committed result files:

  bench/results/compare_bloom560m.json        kjoule compare --json, per forward
  bench/results/replay_bloom560m.json         per-kernel replay, coverage, replay speed
  bench/results/replay_bloom560m_sequence.json  the kept forward replayed eager and as a graph

usage: bench/replay_fidelity/collect.py OUTDIR [--results bench/results] [--ship examples/runs/bloom560m.kjdb]
Every number comes from the files; nothing is typed in.
"""
import argparse
import json
import os
import re
import shutil
import sqlite3
import sys


def meta(db):
    return dict(db.execute("SELECT key, value FROM meta").fetchall())


def device_line(log):
    """The first line of pipeline.log is nvidia-smi's 'name, driver, power, clock'."""
    first = open(log).readline().strip().split(", ")
    return f"{first[0]} (driver {first[1]})" if len(first) >= 2 else first[0]


def timings(path):
    """[N ms, exit R] COMMAND lines of timings.txt (or pipeline.log): (ms, rc, command)."""
    out = []
    for line in open(path):
        m = re.match(r"\s*\[(\d+) ms, exit (\d+)\] (.*)", line)
        if m:
            out.append((int(m.group(1)), int(m.group(2)), m.group(3)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--results", default="bench/results")
    ap.add_argument("--ship", help="copy the run database here (the example shipped in the repo)")
    a = ap.parse_args()
    d = a.outdir
    dbpath = os.path.join(d, "bloom560m.kjdb")
    db = sqlite3.connect(f"file:{dbpath}?mode=ro", uri=True)
    m = meta(db)
    device = device_line(os.path.join(d, "pipeline.log"))
    date = m.get("start_realtime", "")[:10]
    command = "kjoule run -- " + " ".join(json.loads(m["command"]))
    tpath = os.path.join(d, "timings.txt")
    t = timings(tpath if os.path.exists(tpath) else os.path.join(d, "pipeline.log"))
    timing_s = next((ms / 1e3 for ms, rc, c in t if " replay " in c and "--energy" not in c
                     and "--sequence" not in c and rc == 0), None)
    compare = json.load(open(os.path.join(d, "compare.json")))
    replay = json.load(open(os.path.join(d, "replay.json")))
    common = {"device": device, "date": date, "script": "scripts/gpu/pipeline.sh, then "
              "bench/replay_fidelity/collect.py", "run": command, "captured": m.get("capture"),
              "kept_iteration": m.get("params_iteration")}

    busy, kern, insitu = compare["busy_us"], compare["kernel_sum_us"], compare["insitu_sum_replayed_us"]
    off = lambda v, ref: None if v is None or not ref else 100.0 * (v - ref) / ref
    cmp = dict(common, benchmark="kjoule compare on BLOOM-560M (seq 5, fp16), per forward",
               command="kjoule run (defaults); kjoule power --idle --db; kjoule replay --cache both "
                       "--energy (per kernel, then the kept forward --sequence --graph); kjoule compare --json",
               fidelity_pct_vs_insitu={
                   "warm": off(compare["replay_sum_warm_us"], insitu),
                   "cold": off(compare["replay_sum_cold_us"], insitu),
                   "in_sequence": off(compare["replay_sum_sequence_us"], compare["insitu_sum_sequence_covered_us"]),
                   "graph_vs_busy": off(compare["sequence_graph_us"], busy),
                   "insitu_kernel_sum_us": kern},
               result=compare)
    cov = replay["coverage"]
    bench = replay.get("bench", {})
    rep = dict(common, benchmark="kjoule replay on BLOOM-560M: coverage and speed",
               command="kjoule replay RUN --cache both (timing, with the kept forward); "
                       "kjoule replay RUN --cache both --energy --json",
               timing_replay_wall_s=timing_s, timing_replay_target_s=30,
               energy_replay_wall_s=bench.get("energy_replay_wall_s"),
               energy_replay_kernels=bench.get("kernels_with_energy"),
               energy_replay_s_per_kernel=bench.get("s_per_kernel"),
               energy_replay_target_s_per_kernel=3.0, coverage=cov,
               note="replay_warm_sum_ns/replay_cold_sum_ns in 'replay' cover the whole run, model "
                    "construction's one-off kernels included; per-forward fidelity is in "
                    "compare_bloom560m.json",
               replay=replay)
    seq_rows = db.execute("SELECT iteration, mode, runs, launches, median_ns, min_ns, max_ns, energy_mj,"
                          " energy_unc_mj FROM replay_sequence ORDER BY id").fetchall()
    modes = {r[1]: {"iteration": r[0], "runs": r[2], "launches": r[3], "median_ms": r[4] / 1e6,
                    "min_ms": r[5] / 1e6, "max_ms": r[6] / 1e6, "energy_mj": r[7], "energy_unc_mj": r[8]}
             for r in seq_rows}
    seq = dict(common, benchmark="kjoule replay --sequence --graph --energy on BLOOM-560M's kept forward",
               command="the sequence pass of kjoule replay RUN --cache both --energy (--graph, 100 runs,"
                       " 2 s of energy)",
               traced_gpu_busy_us=busy, eager=modes.get("eager"), graph=modes.get("graph"),
               graph_vs_traced_busy_pct=off(compare["sequence_graph_us"], busy),
               in_sequence_sum_vs_insitu_pct=cmp["fidelity_pct_vs_insitu"]["in_sequence"],
               launch_cost_us=compare["launch_cost_us"], framework_host_us=compare["framework_host_us"])
    os.makedirs(a.results, exist_ok=True)
    for name, obj in (("compare_bloom560m", cmp), ("replay_bloom560m", rep), ("replay_bloom560m_sequence", seq)):
        with open(os.path.join(a.results, name + ".json"), "w") as f:
            json.dump(obj, f, indent=1)
    if a.ship:
        shutil.copyfile(dbpath, a.ship)
    f = cmp["fidelity_pct_vs_insitu"]
    print(f"{device} {date}: warm {f['warm']:+.1f}%  cold {f['cold']:+.1f}%  in-sequence {f['in_sequence']:+.1f}%"
          f"  graph {f['graph_vs_busy']:+.1f}%  timing replay {timing_s} s  energy "
          f"{rep['energy_replay_s_per_kernel']} s/kernel  coverage {cov['launches'] - cov['launches_not_replayed']}"
          f"/{cov['launches']}", file=sys.stderr)


if __name__ == "__main__":
    main()
