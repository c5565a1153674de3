#!/usr/bin/env python3
"""How well each isolated replay predicts the in-situ kernel time, over every program kjoule has a
compare result for: the warm replays (same buffers again: data that fits stays in L2), the cold
ones (L2 flushed before each launch), their mean per kernel (explained_fraction's estimate) and the in-sequence times, each as the % off the in-situ Σ of the launches it covers.
Reads the shipped runs (kjoule compare --json) and the committed untuned-program results; writes
one JSON with the rows and their mean absolute errors. CPU only; nothing is typed in.

usage: bench/replay_fidelity/isolated_estimate.py --kjoule build/kjoule [-o bench/results/isolated_estimate.json]
"""
import argparse
import datetime
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
RUNS = ["tests/data/gpt_graph_short.kjdb", "examples/runs/bloom560m.kjdb"]
RESULTS = ["bench/results/untuned_programs.json"]


def off(v, ref):
    return None if v is None or not ref else round(100 * (v - ref) / ref, 2)


def row(name, c):
    """% off in situ of warm, cold, their mean (from the two sums where compare predates the
    isolated sum: equal when both cover the same launches) and in sequence."""
    i, w, co = c.get("insitu_sum_replayed_us"), c.get("replay_sum_warm_us"), c.get("replay_sum_cold_us")
    iso = c.get("replay_sum_isolated_us")
    if iso is None and w is not None and co is not None:
        iso = (w + co) / 2  # results older than the isolated sum: exact where both cover the same launches
    seq = c.get("replay_sum_sequence_us")
    seq_ref = c.get("insitu_sum_sequence_covered_us") or i
    ov = c.get("kernel_overlap_fraction")
    if ov is None and i and c.get("busy_us"):  # older results: in-situ Σ beyond the busy time
        ov = max(0.0, round(1 - c["busy_us"] / i, 3))
    return {"program": name, "kernel_overlap_fraction": ov,
            "isolated_from_sums": c.get("replay_sum_isolated_us") is None,
            "warm_pct": off(w, i), "cold_pct": off(co, i), "isolated_pct": off(iso, i),
            "sequence_pct": off(seq, seq_ref)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kjoule", required=True)
    ap.add_argument("-o", "--output")
    a = ap.parse_args()
    rows, devices = [], set()
    for r in RUNS:
        out = subprocess.run([a.kjoule, "compare", os.path.join(ROOT, r), "--json"], capture_output=True, text=True)
        rows.append(row(r, json.loads(out.stdout)))
        info = subprocess.run([a.kjoule, "info", os.path.join(ROOT, r)], capture_output=True, text=True).stdout
        # the run's GPU as `kjoule info` lists it: "  1: NAME  GPU-uuid  ..."
        devices.update(l.split(":", 1)[1].split("  GPU-")[0].strip() for l in info.splitlines()
                       if l.startswith("  ") and "  GPU-" in l)
    for f in RESULTS:
        d = json.load(open(os.path.join(ROOT, f)))
        for n, p in d["programs"].items():
            rows.append(row(f"{os.path.basename(f)}:{n}", p.get("compare") or {}))
            if p.get("device"):
                devices.add(p["device"].split(",")[0])
    # kernels that ran beside other streams' hold that sharing in situ: no replay alone has it
    alone = [r for r in rows if (r["kernel_overlap_fraction"] or 0) <= 0.05 and r["warm_pct"] is not None]
    mae = {k: round(sum(abs(r[k]) for r in alone if r[k] is not None) / max(1, sum(r[k] is not None for r in alone)), 2)
           for k in ("warm_pct", "cold_pct", "isolated_pct", "sequence_pct")}
    res = {"benchmark": "isolated_estimate", "device": "measured on " + ", ".join(sorted(devices)) + " (computed on the CPU)",
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "command": " ".join(sys.argv), "sources": RUNS + RESULTS,
           "mean_abs_pct_without_overlap": mae, "programs_without_overlap": len(alone), "rows": rows}
    for r in rows:
        print(f"{r['program'][:48]:48s} overlap {r['kernel_overlap_fraction'] or 0:5.2f}  warm {r['warm_pct']}  "
              f"cold {r['cold_pct']}  mean {r['isolated_pct']}  seq {r['sequence_pct']}")
    print(f"mean |%| over the {len(alone)} programs without overlap: {mae}")
    if a.output:
        with open(a.output + ".tmp", "w") as f:
            json.dump(res, f, indent=1)
        os.replace(a.output + ".tmp", a.output)


if __name__ == "__main__":
    main()
