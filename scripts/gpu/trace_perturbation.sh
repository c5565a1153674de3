#!/usr/bin/env bash
# On the GPU machine: what tracing does to the GPU side of graph-launched programs. Each program
# runs untraced and under `kjoule run` (and with $PERTURB_ARGS, e.g. --kernels-every 0), taking
# turns, ROUNDS (2) times; the programs time their forwards and read NVML's energy counter
# themselves, so the figures are comparable with and without the tracer.
#   gpt   examples/gpt_graph.py --mode graph, 1500 forwards (host-synchronised each)
#   r50   examples/torchvision_nvtx.py ResNet-50 batch 32 channels-last in a CUDA graph, >= 3 s
#   gptn  the same, 3000 forwards back to back (no host synchronisation between them)
#   gpte  examples/gpt_graph.py --mode eager, 300 forwards
# usage (device): source scripts/device-env.sh; bash scripts/gpu/trace_perturbation.sh [PART...]
# Results: $OUT/trace_perturbation.json (device, date, command, every run's own JSON line)
set -u
OUT=${OUT:-/tmp/kjout}
W=/tmp/kjtp; rm -rf "$W"; mkdir -p "$W" "$OUT"
kj=$KJ_BUILD/kjoule
parts=${*:-gpt r50}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$W/gpu.txt"
cmd_of() {
	case $1 in
	gpt) echo "python3 examples/gpt_graph.py --mode graph --iters 1500" ;;
	gptn) echo "python3 examples/gpt_graph.py --mode graph --iters 3000 --no-sync" ;;
	gpte) echo "python3 examples/gpt_graph.py --mode eager --iters 300" ;;
	r50) echo "python3 examples/torchvision_nvtx.py --batch 32 --module-depth 1 --graph --channels-last --iters 20 --warmup 10 --min-seconds 3" ;;
	esac
}
for r in $(seq 1 "${ROUNDS:-2}"); do
	for p in $parts; do
		c=$(cmd_of "$p")
		timeout 120 $c > "$W/$p.plain.$r.log" 2>&1
		timeout 200 "$kj" run --force -o "$W/$p.$r.kjdb" -- $c > "$W/$p.traced.$r.log" 2>&1
		if [ -n "${PERTURB_ARGS:-}" ]; then
			timeout 200 "$kj" run --force -o "$W/$p.alt.$r.kjdb" $PERTURB_ARGS -- $c > "$W/$p.alt.$r.log" 2>&1
		fi
		rm -f "$W"/*.kjdb
		echo "round $r $p done"
	done
done
tar czf "$OUT/trace_perturbation_logs.tar.gz" -C "$W" $(cd "$W" && ls *.log 2>/dev/null) 2>/dev/null
python3 - "$W" "$OUT/trace_perturbation.json" "$parts" <<'P'
import glob, json, os, sys, datetime
W, out, parts = sys.argv[1:4]
def line(p):
    try:
        return json.loads([l for l in open(p) if l.startswith("{")][-1])
    except Exception:
        return None
R = {"benchmark": "trace_perturbation", "device": open(os.path.join(W, "gpu.txt")).read().strip(),
     "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
     "command": "bash scripts/gpu/trace_perturbation.sh " + parts,
     "perturb_args": os.environ.get("PERTURB_ARGS"), "runs": {}}
print("%-6s %-7s %5s %10s %10s %10s" % ("prog", "mode", "round", "ms", "J/fwd", "W"))
for p in parts.split():
    R["runs"][p] = {}
    for mode in ("plain", "traced", "alt"):
        got = []
        for f in sorted(glob.glob(os.path.join(W, "%s.%s.*.log" % (p, mode)))):
            d = line(f)
            got.append(d)
            if not d:
                continue
            ms = d.get("forward_ms_events") or d.get("mean_ms")
            e = d.get("energy_j_per_forward_nvml")
            print("%-6s %-7s %5s %10s %10s %10s" % (p, mode, f.split(".")[-2], "%.4f" % ms if ms else "-",
                  "%.4f" % e if e else "-", "%.1f" % (e / ms * 1e3) if e and ms else "-"))
        R["runs"][p][mode] = got
json.dump(R, open(out, "w"), indent=1)
P
