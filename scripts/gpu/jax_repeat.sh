#!/usr/bin/env bash
# On the GPU machine: the JAX step traced afresh RUNS times (JAX_REPEAT_RUNS, 3), each run's kept
# iteration replayed whole with --energy (REPS times, JAX_REPEAT_REPS, 1), compared: how often the
# whole-iteration replay is refused, and how its paced energy and the measured loop agree from
# run to run on one machine (issue 11).
# usage (device): source scripts/device-env.sh; bash scripts/gpu/jax_repeat.sh
# Results: $OUT/jax_repeat.json (device, date, command, every run's raw figures), $OUT/seq*.log
set -u
OUT=${OUT:-/tmp/kjout}
W=/tmp/kjjr; rm -rf "$W"; mkdir -p "$W" "$OUT"
kj=$KJ_BUILD/kjoule
export KJ_REPLAY_WORKER=$KJ_BUILD/kjoule-replay-worker
runs=${JAX_REPEAT_RUNS:-3} reps=${JAX_REPEAT_REPS:-1} steps=${JAX_STEPS:-3000}
for run in $(seq 1 "$runs"); do
	timeout 120 "$kj" run --force -o "$W/j$run.kjdb" --iteration-range step --snapshot-graphs -- \
		python3 examples/jax_step.py --steps "$steps" > "$W/prog$run.log" 2>&1 || tail -3 "$W/prog$run.log"
	timeout 30 "$kj" power --idle --duration 3 --db "$W/j$run.kjdb" > /dev/null 2>&1
	for rep in $(seq 1 "$reps"); do
		timeout 150 "$kj" replay "$W/j$run.kjdb" --sequence --graph --energy > "$OUT/seq$run.$rep.log" 2>&1
		"$kj" compare "$W/j$run.kjdb" --json > "$W/c$run.$rep.json" 2>/dev/null
	done
done
python3 - "$W" "$OUT/jax_repeat.json" "$runs" "$reps" "$OUT" <<'P'
import datetime, glob, json, os, subprocess, sys
sys.path.insert(0, "scripts/gpu")
from json_find import find
w, out, runs, reps, logs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
keys = ["energy_measured_j", "energy_measured_basis", "energy_predicted_sequence_j", "energy_error_sequence_pct",
        "energy_sequence_mode", "energy_sequence_pace_us", "replay_sum_sequence_us", "busy_us", "kernel_sum_us"]
rows = []
for r in range(1, runs + 1):
    prog = [l for l in open(f"{w}/prog{r}.log") if l.startswith('{"steps"')]
    for k in range(1, reps + 1):
        try:
            c = json.load(open(f"{w}/c{r}.{k}.json"))
        except (OSError, ValueError):
            c = {}
        log = open(f"{logs}/seq{r}.{k}.log").read()
        refused = [l.strip() for l in log.splitlines() if "refused" in l or "first iteration" in l][:2]
        rows.append({"run": r, "rep": k, **{x: find(c, x) for x in keys}, "refused": refused,
                     "program": json.loads(prog[-1]) if prog else None})
try:
    dev = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
except OSError:
    dev = "unknown (no nvidia-smi)"
doc = {"benchmark": "jax_repeat", "device": dev, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
       "command": "bash scripts/gpu/jax_repeat.sh", "runs": rows,
       "refused": sum(1 for x in rows if x["refused"]), "replayed": sum(1 for x in rows if x["energy_error_sequence_pct"] is not None)}
json.dump(doc, open(out, "w"), indent=1)
print("run rep  measured  basis  seq_pred   err%   mode      refused")
for x in rows:
    f = lambda v, s: "-" if v is None else s % v
    print("%3d %3d  %8s  %5s  %8s  %6s  %-8s  %s" % (x["run"], x["rep"], f(x["energy_measured_j"], "%.4f"),
          x["energy_measured_basis"] or "-", f(x["energy_predicted_sequence_j"], "%.4f"),
          f(x["energy_error_sequence_pct"], "%+.1f"), x["energy_sequence_mode"] or "-", "yes" if x["refused"] else "no"))
P
