#!/usr/bin/env python3
"""Tracing overhead on BLOOM-560M: plain, kjoule (--no-params, defaults, --api, --api=all) and torch.profiler,
interleaved round by round in one run; wall time per forward as ratios to plain, and peak host
memory of the traced process. Writes a JSON result file (device, date, command, raw numbers)."""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def run(cmd, env=None):
    t = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    _, status, rusage = os.wait4(t.pid, 0)
    out = t.stdout.read()
    err = t.stderr.read()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{err[-3000:]}")
    line = [l for l in out.splitlines() if l.startswith("{")][-1]
    r = json.loads(line)
    r["maxrss_mb"] = rusage.ru_maxrss / 1024.0
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kjoule", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--keep", help="keep the traced run databases in this folder, and report the\n"
                    " energy per forward of each default-mode run (kjoule compare) and its CV")
    a = ap.parse_args()
    model = [sys.executable, os.path.join(ROOT, "examples", "bloom560m.py"), "--iters", str(a.iters),
             "--warmup", str(a.warmup)]
    tmp = a.keep or tempfile.mkdtemp()
    os.makedirs(tmp, exist_ok=True)
    configs = {
        "plain": lambda i: model,
        "kjoule_no_params": lambda i: [a.kjoule, "run", "--force", "-o", f"{tmp}/np{i}.kjdb", "--no-params", "--"] + model,
        "kjoule_default": lambda i: [a.kjoule, "run", "--force", "-o", f"{tmp}/d{i}.kjdb", "--"] + model,
        "kjoule_api": lambda i: [a.kjoule, "run", "--force", "-o", f"{tmp}/a{i}.kjdb", "--api", "--"] + model,
        "kjoule_api_all": lambda i: [a.kjoule, "run", "--force", "-o", f"{tmp}/aa{i}.kjdb", "--api=all", "--"] + model,
        "torch_profiler": lambda i: model + ["--torch-profiler"],
    }
    raw = {k: [] for k in configs}
    for i in range(a.rounds):
        for name, cmd in configs.items():
            r = run(cmd(i))
            raw[name].append(r)
            print(f"round {i} {name:18s} {r['forward_ms_median']:8.3f} ms/forward  rss {r['maxrss_mb']:.0f} MB", flush=True)
    med = lambda xs: sorted(xs)[len(xs) // 2]
    plain = med([r["forward_ms_median"] for r in raw["plain"]])
    plain_rss = med([r["maxrss_mb"] for r in raw["plain"]])
    summary = {}
    for name in configs:
        ms = med([r["forward_ms_median"] for r in raw[name]])
        summary[name] = {"forward_ms": ms, "ratio_to_plain": ms / plain,
                         "maxrss_mb": med([r["maxrss_mb"] for r in raw[name]]),
                         "rss_over_plain_mb": med([r["maxrss_mb"] for r in raw[name]]) - plain_rss}
    extra_prof = summary["torch_profiler"]["ratio_to_plain"] - 1
    extra_kj = summary["kjoule_default"]["ratio_to_plain"] - 1
    summary["kjoule_default_extra_over_torch_profiler_extra"] = extra_kj / extra_prof if extra_prof > 0 else None
    energy = None
    if a.keep:
        per_run = []
        for i in range(a.rounds):
            c = subprocess.run([a.kjoule, "compare", f"{tmp}/d{i}.kjdb", "--json"], capture_output=True, text=True)
            try:
                per_run.append(json.loads(c.stdout)["energy_measured_j"])
            except (ValueError, KeyError):
                per_run.append(None)
        vals = [v for v in per_run if isinstance(v, (int, float))]
        mean = sum(vals) / len(vals) if vals else None
        cv = (sum((v - mean) ** 2 for v in vals) / (len(vals) - 1)) ** 0.5 / mean if len(vals) > 1 and mean else None
        energy = {"what": "energy per forward (kjoule compare energy_measured_j) of each kjoule_default run",
                  "per_run_j": per_run, "mean_j": mean, "cv": cv, "target_cv": 0.01}
        print(f"energy per forward over {len(vals)} runs: mean {mean} J, CV {cv}")
    dev = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    result = {"benchmark": "trace_overhead", "device": dev,
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
              "command": " ".join(sys.argv), "workload": "examples/bloom560m.py seq 5 batch 1 fp16",
              "rounds": a.rounds, "iters": a.iters, "warmup": a.warmup,
              "targets": {"kjoule_no_params": 1.15, "kjoule_default": 1.20, "kjoule_api": 1.35,
                          "default_extra_vs_profiler_extra": 1 / 3, "rss_over_plain_mb": 200},
              "summary": summary, "energy_per_forward": energy, "raw": raw}
    with open(a.output, "w") as f:
        json.dump(result, f, indent=1)
    print(f"{'config':20s} {'ms/fwd':>8s} {'ratio':>6s} {'+RSS MB':>8s}")
    for name in configs:
        s = summary[name]
        print(f"{name:20s} {s['forward_ms']:8.3f} {s['ratio_to_plain']:6.3f} {s['rss_over_plain_mb']:8.0f}")


if __name__ == "__main__":
    main()
