#!/usr/bin/env bash
# On a GPU machine: kjoule's tracing cost per event kind (kernel launch, NVTX range, graph launch,
# host read of a device scalar), from bench/event_cost's loops run untraced and traced, whole runs
# alternating in a new order each round (bench/trace_overhead/capture_pairs.py: untraced; capture
# window never opened; window open from the fourth block; defaults; --no-params; CUPTI's records
# alone; each kind's result in $OUT/event_KIND.json as its rounds end), then bench/event_cost/costs.py
# into $OUT/trace_event_costs.json. With the JAX step's own
# pairs (scripts/gpu/capture_hostbound.sh's capture_pairs_jax.json) in EC_PAIRS_DIR, its step's
# breakdown by kind against its measured cost as well.
#   env: EC_S (seconds of rounds a kind, 60), EC_EVENTS (events a block, 2000), EC_PAIRS_DIR
# usage (device): source scripts/device-env.sh; bash scripts/gpu/event_costs.sh
set -u
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT"
kj=$KJ_BUILD/kjoule
prog=$KJ_BUILD/bench/event_cost/event_cost
s=${EC_S:-60}
tmp=$(mktemp -d)
files=()
for k in kernel nvtx graph host; do
	n=${EC_EVENTS:-2000}
	[ $k = host ] && n=$((n / 4)) # each waits for its copy: a block of the same length
	timeout $((s + 120)) python3 bench/trace_overhead/capture_pairs.py --kjoule "$kj" --name "event_$k" \
		--capture step@1000000:20 --inside 3 --metric us_per_event --seconds "$s" --timeout 60 --tmp "$tmp" \
		-o "$OUT/event_$k.json" -- "$prog" "$k" "$n" 40 >"$tmp/event_$k.log" 2>&1
	tail -n 1 "$tmp/event_$k.log"
	[ -f "$OUT/event_$k.json" ] && files+=("$OUT/event_$k.json")
done
progs=()
# events per step of the JAX step (examples/jax_step.py, as traced: one graph launch running 13
# kernels as graph nodes, so no kernel launch call of their own, and 18 NVTX ranges); the decode
# loop's counts per request are read off its run before they are added here
pd=${EC_PAIRS_DIR:-}
[ -n "$pd" ] && [ -f "$pd/capture_pairs_jax.json" ] && progs+=(--program "jax_step:kernel=0,nvtx=18,graph=1,host=0:$pd/capture_pairs_jax.json")
[ ${#files[@]} -gt 0 ] && python3 bench/event_cost/costs.py "${files[@]}" "${progs[@]}" -o "$OUT/trace_event_costs.json"
