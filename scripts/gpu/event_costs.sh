#!/usr/bin/env bash
# On a GPU machine: kjoule's tracing cost per event kind (kernel launch, NVTX range, graph launch of
# one kernel and of 64, host read of a device scalar) from bench/event_cost's loops, untraced and
# under each setting (untraced; a capture window never opened; a window open throughout; defaults;
# --no-params; CUPTI's records alone). By default the loops take turns in live processes
# (bench/trace_overhead/turns.py with `event_cost --serve KIND EVENTS`: hundreds of rounds a kind);
# EC_WHOLE=1 runs whole runs alternating instead (bench/trace_overhead/capture_pairs.py: a few rounds
# a kind). Each kind's result in $OUT/event_KIND.json as its rounds end, then
# bench/event_cost/costs.py into $OUT/trace_event_costs.json. With the JAX step's own pairs
# (scripts/gpu/capture_hostbound.sh's capture_pairs_jax.json) in EC_PAIRS_DIR, its step's breakdown
# by kind against its measured cost as well.
#   env: EC_S (seconds of rounds a kind, 60), EC_EVENTS (events a block, 500 taking turns, 2000 in
#   whole runs; a quarter of it for host, a twentieth for graph64), EC_KINDS (default
#   "kernel nvtx graph graph64 host"), EC_WHOLE, EC_PAIRS_DIR
# usage (device): source scripts/device-env.sh; bash scripts/gpu/event_costs.sh
set -u
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT"
kj=$KJ_BUILD/kjoule
prog=$KJ_BUILD/bench/event_cost/event_cost
s=${EC_S:-60}
tmp=$(mktemp -d)
files=()
for k in ${EC_KINDS:-kernel nvtx graph graph64 host}; do
	n=${EC_EVENTS:-2000}
	[ -z "${EC_WHOLE:-}" ] && n=${EC_EVENTS:-500} # a turn is 5 blocks: 2,500 events, a few ms
	[ $k = host ] && n=$((n / 4)) # each waits for its copy: a block of the same length
	[ $k = graph64 ] && n=$((n / 20)) # each runs 64 kernels on the GPU
	if [ -n "${EC_WHOLE:-}" ]; then
		timeout $((s + 120)) python3 bench/trace_overhead/capture_pairs.py --kjoule "$kj" --name "event_$k" \
			--capture step@1000000:20 --inside 3 --metric us_per_event --seconds "$s" --timeout 60 --tmp "$tmp" \
			-o "$OUT/event_$k.json" -- "$prog" "$k" "$n" 40 >"$tmp/event_$k.log" 2>&1
	else
		timeout $((s + 60)) python3 bench/trace_overhead/turns.py --kjoule "$kj" --worker-cmd "$prog --serve $k $n" \
			--workload "event_$k: bench/event_cost/event_cost --serve $k $n" --block 5 --rounds 400 --seconds "$s" \
			--configs kjoule_default kjoule_no_params cupti_activity_only kjoule_capture_inside kjoule_capture_late \
			--logs "$tmp/logs_$k" -o "$OUT/event_$k.json" >"$tmp/event_$k.log" 2>&1
	fi
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
