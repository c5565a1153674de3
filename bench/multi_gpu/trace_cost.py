#!/usr/bin/env python3
"""kjoule's tracing cost per rank of a job of several processes (torchrun): whole runs untraced and
under `kjoule run` (defaults, --no-params, CUPTI's activity records alone), one after another in a
new order each round, as many rounds as fit in --seconds. Every rank of a run prints one JSON line
{"rank": R, METRIC: x, ...} (examples/llama7b_tp.py and examples/ddp_train.py with --timing); per
rank, the ratio of a traced run's figure to the untraced run's of the same round is a paired
measurement, and the estimate is the median over rounds with its quartiles; kjoule's own share is
the defaults' figure over CUPTI-alone's, per round. Writes a JSON result (bench/results style:
device, date, commands, every run's figures) aside and renames it into place after every round, so
a call cut short keeps its rounds; prints a table last.

    trace_cost.py --kjoule build/kjoule --metric decode_ms_per_step -o tp_cost.json -- \\
        torchrun --standalone --nproc-per-node 2 examples/llama7b_tp.py --layers 8 --timing
"""
import argparse
import datetime
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "trace_overhead"))
from capture_pairs import alternate, gpu_name, ratios, write_json  # noqa: E402  (one copy)


def run_once(cmd, timeout, metric):
    """({rank: figure} from the JSON lines the ranks printed, exit status)."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=timeout, text=True)
    except subprocess.TimeoutExpired:
        return {}, -1
    got = {}
    for line in (p.stdout or "").splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if not isinstance(d, dict):
            continue
        r, v = d.get("rank"), d.get(metric)
        if isinstance(r, int) and not isinstance(r, bool) and isinstance(v, (int, float)) and v > 0:
            got[str(r)] = float(v)
    return got, p.returncode


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kjoule", required=True)
    ap.add_argument("--metric", required=True, help="the figure each rank prints, e.g. decode_ms_per_step or step_ms")
    ap.add_argument("--name", default="job", help="the workload's name in the result")
    ap.add_argument("--seconds", type=float, default=300)
    ap.add_argument("--max-rounds", type=int, default=50)
    ap.add_argument("--timeout", type=float, default=180, help="one run's limit")
    ap.add_argument("--tmp", default="/tmp")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("cmd", nargs=argparse.REMAINDER, help="-- PROGRAM ARGS...")
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        ap.error("no program given after --")
    db = lambda tag: [a.kjoule, "run", "--force", "-o", os.path.join(a.tmp, f"trace_cost_{tag}.kjdb")]
    contestants = {
        "plain": cmd,
        "kjoule_default": db("default") + ["--"] + cmd,
        "kjoule_no_params": db("np") + ["--no-params", "--"] + cmd,
        "cupti_only": ["env", "KJOULE_COST_STUDY=1024"] + db("act") + ["--no-params", "--"] + cmd,
    }
    values = {k: [] for k in contestants}  # per contestant, per round: {rank: figure} or None
    failed = {k: 0 for k in contestants}

    def write(rounds):
        ranks = sorted({r for row in values["plain"] if row for r in row}, key=int)
        col = lambda k, r: [row.get(r) if row else None for row in values[k]]
        per_rank = {}
        for r in ranks:
            e = {k: ratios(col(k, r), col("plain", r)) for k in contestants if k != "plain"}
            e["kjoule_default_over_cupti_only"] = ratios(col("kjoule_default", r), col("cupti_only", r))
            per_rank[r] = e
        write_json(a.output, {
            "benchmark": "multi_gpu_trace_cost", "workload": a.name, "metric": a.metric, "device": gpu_name() or "unknown",
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "method": "whole runs alternating in a new order each round; per rank, the ratio of a traced run's "
                      f"{a.metric} to the untraced run's of the same round; median and quartiles over rounds",
            "commands": contestants, "rounds": rounds, "failed_runs": failed, "values": values,
            "ratios_per_rank": per_rank})
        return per_rank

    def run(k, rnd):
        got, rc = run_once(contestants[k], a.timeout, a.metric)
        ok = rc == 0 and bool(got)
        failed[k] += not ok
        print(f"  round {rnd} {k}: {got} (rc {rc})", flush=True)
        return got if ok else None

    def on_round(rounds, row):
        for k in contestants:
            values[k].append(row[k])
        write(rounds)

    rounds = alternate(contestants, run, a.seconds, a.max_rounds, on_round)
    per_rank = write(rounds)
    fmt = lambda d: f"{d['median']:.3f} [{d['quartiles'][0]:.3f}, {d['quartiles'][1]:.3f}]" if d["median"] else "-"
    print(f"{'rank':5s} {'defaults':>24s} {'--no-params':>24s} {'CUPTI alone':>24s} {'defaults/CUPTI':>24s}")
    for r, e in per_rank.items():
        print(f"{r:5s} {fmt(e['kjoule_default']):>24s} {fmt(e['kjoule_no_params']):>24s} "
              f"{fmt(e['cupti_only']):>24s} {fmt(e['kjoule_default_over_cupti_only']):>24s}")
    return 0 if per_rank and all(v < rounds for v in failed.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
