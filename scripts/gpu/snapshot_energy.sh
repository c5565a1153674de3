#!/usr/bin/env bash
# On the GPU machine: does the data a replay runs on explain its energy gap? Whole iterations of
# two graph-launched programs replayed on the program's own buffers (`kjoule run --snapshot-graphs`:
# graphs only: saved before the first graph launch) and on the replay's random fill alone (the
# same run with its snapshot rows dropped), against the measured energy per iteration.
#   r50  ResNet-50 fp16 batch 32 channels-last in a CUDA graph: pipeline --from --layers 0
#   gpt  examples/gpt_graph.py in torch.cuda.graph: replay --sequence --graph --energy
# SE_SEQUENCE=1: r50 also replayed --sequence --graph (in-sequence kernel times for compare)
# usage (device): source scripts/device-env.sh; bash scripts/gpu/snapshot_energy.sh [PART...]
# Results: $OUT/snapshot_energy.json (device, date, command, raw figures); logs in $OUT.
set -u
OUT=${OUT:-/tmp/kjout}
W=/tmp/kjse; rm -rf "$W"; mkdir -p "$W" "$OUT"
kj=$KJ_BUILD/kjoule
export KJ_REPLAY_WORKER=$KJ_BUILD/kjoule-replay-worker
parts=${*:-r50 gpt}
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s]"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$W/gpu.txt"
"$kj" power --idle --duration 3 --db "$W/idle.kjdb" > /dev/null 2>&1
drop() { cp "$W/$1.kjdb" "$W/$1_nosnap.kjdb"
	python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print("  snapshot rows dropped:", c.execute("DELETE FROM snapshot").rowcount); c.commit()' "$W/$1_nosnap.kjdb"; }
edges() { python3 -c 'import sqlite3,sys; print("  graph edges by type:", sqlite3.connect(sys.argv[1]).execute("SELECT group_concat(t || \" \" || n, \", \") FROM (SELECT type || \"/port\" || from_port AS t, count(*) AS n FROM graph_edge GROUP BY 1)").fetchone()[0])' "$W/$1.kjdb"; }
for part in $parts; do
case $part in
r50)
	echo "$(el) r50: trace with --snapshot (graphs only)"
	timeout 150 "$kj" run --force --snapshot-graphs="${SE_SNAPSHOT_MB:-4096}" -o "$W/r50.kjdb" -- \
		python3 examples/torchvision_nvtx.py --batch 32 --module-depth 1 --graph --channels-last --iters 20 \
		--warmup 10 --min-seconds 3 > "$W/r50.log" 2>&1 || tail -3 "$W/r50.log"
	grep '^{' "$W/r50.log" | tail -1 > "$W/r50.e2e.json"
	timeout 60 "$kj" power --idle --duration 3 --db "$W/r50.kjdb" > /dev/null 2>&1
	"$kj" compare "$W/r50.kjdb" --json > "$W/r50.compare.json" 2>/dev/null
	edges r50
	drop r50
	for v in r50 r50_nosnap; do
		echo "$(el) $v: pipeline --from --layers 0"
		timeout 120 "$kj" pipeline --from "$W/$v.kjdb" --layers 0 --energy-seconds 1 --idle-db "$W/idle.kjdb" \
			--timeout 60 --out "$W/$v.from0" > "$W/$v.from0.log" 2>&1
		grep -E "sequential|FAILED|data" "$W/$v.from0.log" | cut -c1-200 | head -4
	done
	if [ -n "${SE_SEQUENCE:-}" ]; then
		echo "$(el) r50: replay --sequence --graph (each kernel timed where it runs)"
		timeout 150 "$kj" replay "$W/r50.kjdb" --sequence --graph > "$W/r50.seq.log" 2>&1 || tail -3 "$W/r50.seq.log"
		"$kj" compare "$W/r50.kjdb" > "$W/r50.compare.log" 2>&1
	fi
	;;
gpt)
	echo "$(el) gpt: trace with --snapshot (graphs only)"
	timeout 150 "$kj" run --force --snapshot-graphs="${SE_SNAPSHOT_MB:-4096}" -o "$W/gpt.kjdb" -- \
		python3 examples/gpt_graph.py --mode graph --iters "${GPT_ITERS:-1500}" > "$W/gpt.log" 2>&1 || tail -3 "$W/gpt.log"
	timeout 60 "$kj" power --idle --duration 3 --db "$W/gpt.kjdb" > /dev/null 2>&1
	edges gpt
	drop gpt
	for v in gpt gpt_nosnap; do
		echo "$(el) $v: replay --sequence --graph --energy"
		timeout 150 "$kj" replay "$W/$v.kjdb" --sequence --graph --energy > "$W/$v.seq.log" 2>&1 || tail -3 "$W/$v.seq.log"
		grep -E "faulted|data: " "$W/$v.seq.log" | cut -c1-200 | head -3
		"$kj" compare "$W/$v.kjdb" --json > "$W/$v.compare.json" 2>/dev/null
		"$kj" compare "$W/$v.kjdb" > "$W/$v.compare.log" 2>&1
	done
	;;
esac
done
echo "$(el) done"
tar czf "$OUT/snapshot_energy_logs.tar.gz" -C "$W" $(cd "$W" && ls *.log 2>/dev/null) 2>/dev/null
python3 - "$W" "$OUT/snapshot_energy.json" "$parts" <<'P'
import csv, glob, json, os, sys, datetime
W, out, parts = sys.argv[1:4]
sys.path.insert(0, "scripts/gpu")
from json_find import find  # noqa: E402
def jl(p):
    try:
        return json.load(open(p))
    except Exception:
        return None
R = {"benchmark": "snapshot_energy", "device": open(os.path.join(W, "gpu.txt")).read().strip(),
     "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
     "command": "bash scripts/gpu/snapshot_energy.sh " + parts, "runs": {}}
rows = []
for v in ("r50", "r50_nosnap"):
    s = glob.glob(os.path.join(W, v + ".from0", "summary.csv"))
    c = jl(os.path.join(W, "r50.compare.json"))
    if not s or not c:
        continue
    r = list(csv.DictReader(open(s[0])))[0]
    meas = find(c, "energy_measured_j")
    busy = find(c, "busy_us")
    e, t = float(r["seq_energy_j"] or 0) or None, float(r["seq_latency_ms"] or 0) or None
    R["runs"][v] = {"measured_j": meas, "busy_us": busy, "replayed_j": e, "replayed_ms": t, "summary": r}
    rows.append((v, meas, e, busy, t * 1e3 if t else None))
for v in ("gpt", "gpt_nosnap"):
    c = jl(os.path.join(W, v + ".compare.json"))
    if not c:
        continue
    keys = ("energy_measured_j", "busy_us", "energy_predicted_sequence_j", "sequence_graph_energy_j",
            "sequence_topology_energy_j", "explained_fraction_sequence", "energy_sequence_mode")
    r = {k: find(c, k) for k in keys}
    R["runs"][v] = r
    seq_us = r["busy_us"] * r["explained_fraction_sequence"] if r["busy_us"] and r["explained_fraction_sequence"] else None
    rows.append((v, r["energy_measured_j"], r["sequence_topology_energy_j"] or r["sequence_graph_energy_j"], r["busy_us"], seq_us))
json.dump(R, open(out, "w"), indent=1)
print("%-12s %10s %10s %8s %10s %10s %8s" % ("run", "meas_J", "replay_J", "err%", "busy_us", "replay_us", "err%"))
f = lambda a, b: "%+.1f" % (100 * (a / b - 1)) if a and b else "-"
for v, m, e, b, t in rows:
    print("%-12s %10s %10s %8s %10s %10s %8s" % (v, "%.4f" % m if m else "-", "%.4f" % e if e else "-", f(e, m),
          "%.1f" % b if b else "-", "%.1f" % t if t else "-", f(t, b)))
P
