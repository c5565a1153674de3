#!/usr/bin/env python3
"""Repeated-region energy (issue 3): energy per iteration of BLOOM-560M forwards (one NVTX range
"forward" each), from N separate traced runs of many iterations; the coefficient of variation of
the per-run figure over the runs. Two shapes: the default seq-len 5 forward, CPU-bound (its wall
time follows the host's speed), and a GPU-bound one (--seq-len, 1536 by default).
Per run it records what kjoule compare says (energy per forward, its uncertainty, wall, GPU busy)
and the program's own synchronised wall time per forward, so a spread in energy can be told apart
from a spread in the work itself. Writes one JSON file (device, date, command, raw numbers)."""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def cv(xs):
    xs = [x for x in xs if isinstance(x, (int, float))]
    return statistics.stdev(xs) / statistics.mean(xs) if len(xs) > 1 and statistics.mean(xs) else None


def one_run(kj, seq, iters, warmup, path):
    cmd = [kj, "run", "--force", "-o", path, "--", sys.executable, os.path.join(ROOT, "examples", "bloom560m.py"),
           "--seq-len", str(seq), "--iters", str(iters), "--warmup", str(warmup)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-2000:]}")
    prog = json.loads([l for l in p.stdout.splitlines() if l.startswith("{")][-1])
    c = subprocess.run([kj, "compare", path, "--json"], capture_output=True, text=True)
    d = json.loads(c.stdout)
    d = d.get("result", d)
    return {"energy_per_forward_j": d.get("energy_measured_j"), "energy_unc_j": d.get("energy_measured_unc_j"),
            "wall_us": d.get("wall_us"), "busy_us": d.get("busy_us"), "power_avg_w": d.get("power_avg_w"),
            "iterations": d.get("iterations", {}).get("measured"),
            "program_forward_ms_median": prog["forward_ms_median"], "program_forward_ms_mean": prog["forward_ms_mean"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kjoule", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seq", type=int, nargs="+", default=[1536, 5])
    ap.add_argument("--iters", type=int, default=150)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--dir", default="/tmp/kj_energy_repeat")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    shapes = {}
    for seq in a.seq:
        runs = []
        for i in range(a.runs):
            r = one_run(a.kjoule, seq, a.iters, a.warmup, f"{a.dir}/s{seq}_{i}.kjdb")
            runs.append(r)
            print(f"seq {seq:5d} run {i}: {r['energy_per_forward_j']} J/forward ±{r['energy_unc_j']}, "
                  f"wall {r['wall_us']} us, busy {r['busy_us']} us, program {r['program_forward_ms_median']:.3f} ms",
                  flush=True)
            os.unlink(f"{a.dir}/s{seq}_{i}.kjdb")
        shapes[str(seq)] = {
            "runs": runs,
            "cv_energy_per_forward": cv([r["energy_per_forward_j"] for r in runs]),
            "cv_wall": cv([r["wall_us"] for r in runs]),
            "cv_program_forward_ms": cv([r["program_forward_ms_median"] for r in runs]),
            "cv_busy": cv([r["busy_us"] for r in runs]),
            "target_cv": 0.01}
    dev = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    out = {"benchmark": "energy_repeat", "device": dev,
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
           "command": " ".join(sys.argv), "iters": a.iters, "warmup": a.warmup, "shapes": shapes}
    with open(a.output, "w") as f:
        json.dump(out, f, indent=1)
    print(f"{'seq':>5s} {'CV energy':>10s} {'CV wall':>8s} {'CV prog':>8s} {'CV busy':>8s}")
    for seq, s in shapes.items():
        f = lambda v: f"{100 * v:7.2f}%" if v is not None else "     n/a"
        print(f"{seq:>5s} {f(s['cv_energy_per_forward']):>10s} {f(s['cv_wall']):>8s} "
              f"{f(s['cv_program_forward_ms']):>8s} {f(s['cv_busy']):>8s}")


if __name__ == "__main__":
    main()
