#!/usr/bin/env python3
"""How repeatable is the sweep worker's time a call, and at which SM clock was it taken?

Measures the same shapes of one operator in several rounds, each round a fresh
kjoule-sweep-worker: 'quick' timing (the default: 100 ms of warm-up, then 30 timed replays),
'settled' timing (KJ_SWEEP_SETTLE=1: replays until the SM clock is steady, then the same
30), each with or without an energy window (whose own time a call, f_wus/b_wus, is kept too).
Reports, per timing kind, the spread between two rounds of the same shape (mean and max of
|a-b|/mean) and how far each kind sits from the energy window's time.

usage: run.py --worker KJOULE-SWEEP-WORKER [--op linear2] [--shapes S;S;...] [--energy-s 0.5]
              [-o RESULT.json]"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys


def rounds_of(worker, op, shapes, timing, energy, energy_s):
    env = dict(os.environ, KJ_SWEEP_ENERGY_S=str(energy_s))
    # every round timed by the median of 30 replays (the worker's default; a KJ_SWEEP_TIMING of
    # the caller's is dropped); 'settled' settles the clock first
    env.pop("KJ_SWEEP_TIMING", None)
    env.pop("KJ_SWEEP_SETTLE", None)
    if timing == "settled":
        env["KJ_SWEEP_SETTLE"] = "1"
    lines = "".join("%s fp16 %s %d 0\n" % (op, s, energy) for s in shapes)
    r = subprocess.run([worker], input=lines, capture_output=True, text=True, env=env)
    out = []
    for line in r.stdout.splitlines():
        if not line.startswith("KJ_SWEEP "):
            continue
        body = line[9:].split(" msg=", 1)[0]
        kv = dict(w.split("=", 1) for w in body.split(" ") if "=" in w)
        out.append({k: (float(v) if v not in ("-", "") and k != "status" else v) for k, v in kv.items()})
    if len(out) != len(shapes):
        sys.stderr.write(r.stderr[-2000:])
    return out


def spread(a, b):
    d = [abs(x - y) / ((x + y) / 2) for x, y in zip(a, b) if isinstance(x, float) and isinstance(y, float)]
    return {"mean_pct": 100 * statistics.mean(d), "max_pct": 100 * max(d), "n": len(d)} if d else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", required=True)
    ap.add_argument("--op", default="linear2")
    ap.add_argument("--shapes", default=None, help="';'-separated shapes (default: 36 shapes across linear2's grid)")
    ap.add_argument("--energy-s", type=float, default=0.5)
    ap.add_argument("-o", "--output", default="bench/results/sweep_timing.json")
    a = ap.parse_args()
    if a.shapes:
        shapes = a.shapes.split(";")
    else:
        shapes = ["%d,%d,%d,%d" % (mp, b, l, d) for mp in (1, 2) for b in (1, 4) for l in (640, 1408, 2048)
                  for d in (1280, 2816, 4096)]
    plan = [("quick", 1), ("quick", 1), ("settled", 0), ("settled", 0), ("settled", 1)]
    rounds = []
    for timing, energy in plan:
        t0 = datetime.datetime.now()
        res = rounds_of(a.worker, a.op, shapes, timing, energy, a.energy_s)
        rounds.append({"timing": timing, "energy": energy, "seconds": (datetime.datetime.now() - t0).total_seconds(),
                       "answers": res})
        print("round %d: %s timing, energy %d: %d answers in %.0f s" % (len(rounds), timing, energy, len(res),
                                                                     rounds[-1]["seconds"]), flush=True)
    R = {"benchmark": "sweep_timing", "date": datetime.datetime.utcnow().isoformat() + "Z",
         "command": " ".join(sys.argv), "op": a.op, "shapes": shapes, "rounds": rounds, "summary": {}}
    try:
        R["device"] = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                     capture_output=True, text=True).stdout.strip()
    except OSError:
        R["device"] = "unknown"
    S = R["summary"]
    for p in ("f", "b"):
        col = lambda k, key: [x.get(key) for x in rounds[k]["answers"]]
        S[p + "_quick_vs_quick"] = spread(col(0, p + "_us"), col(1, p + "_us"))
        S[p + "_window_vs_window"] = spread(col(0, p + "_wus"), col(1, p + "_wus"))
        S[p + "_settled_vs_settled"] = spread(col(2, p + "_us"), col(3, p + "_us"))
        S[p + "_quick_vs_window"] = spread(col(0, p + "_us"), col(0, p + "_wus"))
        S[p + "_settled_vs_window"] = spread(col(2, p + "_us"), col(1, p + "_wus"))
        S[p + "_settled_e_vs_its_window"] = spread(col(4, p + "_us"), col(4, p + "_wus"))
        S[p + "_settled_vs_settled_e"] = spread(col(2, p + "_us"), col(4, p + "_us"))
        # direction: quick faster than the settled clock's time?
        q, s_ = col(0, p + "_us"), col(2, p + "_us")
        d = [100 * (x / y - 1) for x, y in zip(q, s_) if isinstance(x, float) and isinstance(y, float)]
        S[p + "_quick_minus_settled_mean_pct"] = statistics.mean(d) if d else None
        clk = [x for x in col(2, p + "_tmhz") if isinstance(x, float)]
        S[p + "_settled_clock_mhz"] = [min(clk), statistics.mean(clk), max(clk)] if clk else None
    os.makedirs(os.path.dirname(os.path.abspath(a.output)), exist_ok=True)
    json.dump(R, open(a.output, "w"), indent=1)
    print("\n%-32s %10s %10s %5s" % ("comparison", "mean %", "max %", "n"))
    for k, v in S.items():
        if isinstance(v, dict):
            print("%-32s %10.2f %10.2f %5d" % (k, v["mean_pct"], v["max_pct"], v["n"]))
        else:
            print("%-32s %s" % (k, v))


if __name__ == "__main__":
    main()
