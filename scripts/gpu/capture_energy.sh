#!/usr/bin/env bash
# On the GPU machine: does a capture window's energy per iteration agree with the whole run's?
# Steady training loops (examples/gpt_train.py, random weights) run under `kjoule run --capture`,
# CUPTI taken out outside the window; `kjoule compare --json` of each gives the captured
# iterations' mean energy against the whole run's (capture.energy_agreement) and how much slower
# the captured iterations ran (capture.captured_slower_pct). The loops, named once here (name,
# arguments, window); the two the GPU paces run long enough that their start, while the GPU warms
# to its power limit, weighs little in the whole run's mean:
#   eager_hostbound  eager step of a small shape: the host's launches pace it, so tracing's host
#                    cost inside the window slows the captured steps
#   eager_gpubound   the same model with 4x the tokens a step: the GPU paces it, at its power limit
#   cuda_graph       the small shape's whole step replayed as one CUDA graph, at its power limit
# The result also gives each run's instances in tenths, in order: wall time, power, SM clock and
# temperature of each tenth, so a run that drifts as the GPU heats shows it.
# Writes $OUT/capture_energy.json (bench/trace_overhead/capture_energy_summary.py) and prints a table
# last; each loop's compare JSON and logs stay under $OUT/capture_energy/.
# usage (device, repo root): source scripts/device-env.sh; bash scripts/gpu/capture_energy.sh [NAME...]
#   env: CAPE_S (180): each loop's time limit; CAPE_DB_DIR=DIR keeps each loop's database as DIR/NAME.kjdb
set -u
OUT=${OUT:-/tmp/kjout}
kj=$KJ_BUILD/kjoule
small="--layers 8 --hidden 1024 --heads 16 --seq 512 --batch 8"
loops=(
	"eager_hostbound|$small --steps 500|step@100:200"
	"eager_gpubound|--layers 8 --hidden 1024 --heads 16 --seq 1024 --batch 16 --steps 900|step@500:250"
	"cuda_graph|$small --cuda-graph --steps 3000|step@1800:800"
)
mkdir -p "$OUT/capture_energy"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/loops.txt"
for spec in "${loops[@]}"; do
	IFS='|' read -r name args window <<<"$spec"
	if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then
		continue
	fi
	log=$OUT/capture_energy/$name
	db=$tmp/$name.kjdb
	echo "== $name: examples/gpt_train.py $args under --capture $window"
	timeout "${CAPE_S:-180}" "$kj" run --force --capture "$window" -o "$db" -- \
		python3 examples/gpt_train.py $args --warmup 0 >"$log.out" 2>"$log.err"
	rc=$?
	[ $rc -eq 0 ] && { timeout 120 "$kj" compare "$db" --json >"$log.compare.json" 2>>"$log.err" || rc=$?; }
	[ $rc -eq 0 ] || { echo "  failed (rc $rc)"; tail -3 "$log.err"; }
	[ -n "${CAPE_DB_DIR:-}" ] && [ -f "$db" ] && mkdir -p "$CAPE_DB_DIR" && cp "$db" "$CAPE_DB_DIR/$name.kjdb"
	printf '%s|%s|%s|%s|%s\n' "$name" "examples/gpt_train.py $args --warmup 0" "$window" "$rc" "$db" \
		>>"$tmp/loops.txt"
done
python3 bench/trace_overhead/capture_energy_summary.py "$OUT" "$tmp/loops.txt" "$*"
