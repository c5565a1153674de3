#!/usr/bin/env bash
# On a GPU machine: kjoule's tracing cost per event kind (kernel launch, NVTX range, graph launch of
# one kernel and of 64, host read of a device scalar) from bench/event_cost's loops, untraced and
# under each setting (untraced; a capture window never opened; a window open throughout; defaults;
# --no-params; CUPTI's records alone). By default the loops take turns in live processes
# (bench/trace_overhead/turns.py with `event_cost --serve KIND EVENTS`: hundreds of rounds a kind);
# EC_WHOLE=1 runs whole runs alternating instead (bench/trace_overhead/capture_pairs.py: a few rounds
# a kind). Each kind's result in $OUT/event_KIND.json as its rounds end, then
# bench/event_cost/costs.py into $OUT/trace_event_costs.json, with the breakdown of the host-bound
# programs' steps by kind against their measured cost (below).
#   env: EC_S (seconds of rounds a kind, 60), EC_EVENTS (events a block, 500 taking turns, 2000 in
#   whole runs; a quarter of it for host, a twentieth for graph64), EC_KINDS (default
#   "kernel nvtx graph graph64 host"; kernel_cold: a launch after 256 KiB of other reads;
#   kernel_block: the same with a 512-byte parameter block), EC_BASE_INJECT (another build's
#   libkjoule_inject.so, run as the contestant kjoule_default_base beside the defaults), EC_COPIES
#   (processes per contestant taking turns, 1), EC_CONFIGS (the contestants besides plain, turns.py's
#   names), EC_WHOLE,
#   EC_PROGRAMS (the turn worker's models to break down, "jax_step decode"; set empty: none),
#   EC_PROGRAM_STEPS (30 steps traced each), EC_TURNS (where their cost per step taking turns is,
#   bench/results/capture_overhead.json)
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
	[ $k = kernel_cold ] || [ $k = kernel_block ] && n=$((n / 5)) # each reads 256 KiB first
	if [ -n "${EC_WHOLE:-}" ]; then
		timeout $((s + 120)) python3 bench/trace_overhead/capture_pairs.py --kjoule "$kj" --name "event_$k" \
			--capture step@1000000:20 --inside 3 --metric us_per_event --seconds "$s" --timeout 60 --tmp "$tmp" \
			-o "$OUT/event_$k.json" -- "$prog" "$k" "$n" 40 >"$tmp/event_$k.log" 2>&1
	else
		timeout $((s + 60)) python3 bench/trace_overhead/turns.py --kjoule "$kj" --worker-cmd "$prog --serve $k $n" \
			--workload "event_$k: bench/event_cost/event_cost --serve $k $n" --block 5 --rounds 400 --seconds "$s" \
			--copies "${EC_COPIES:-1}" \
			--configs ${EC_CONFIGS:-kjoule_default kjoule_no_params cupti_activity_only kjoule_capture_inside kjoule_capture_late} \
			${EC_BASE_INJECT:+kjoule_default_base --base-inject "$EC_BASE_INJECT"} \
			--logs "$tmp/logs_$k" -o "$OUT/event_$k.json" >"$tmp/event_$k.log" 2>&1
	fi
	tail -n 1 "$tmp/event_$k.log"
	[ -f "$OUT/event_$k.json" ] && files+=("$OUT/event_$k.json")
done
# the events one step of each host-bound program makes, read off a traced run of the turn worker
# (bench/event_cost/program_events.py: per instance of its NVTX range "forward"), priced by kind
# against its cost per step measured taking turns (EC_TURNS: a capture_overhead.json with
# turns_jax_step and turns_decode, scripts/gpu/capture.sh's)
progs=()
turns=${EC_TURNS:-bench/results/capture_overhead.json}
for p in ${EC_PROGRAMS-jax_step decode}; do
	printf 'go %s\nquit\n' "${EC_PROGRAM_STEPS:-30}" | timeout 300 "$kj" run --force -o "$tmp/$p.kjdb" -- \
		python3 bench/trace_overhead/turn_worker.py --model "$p" >"$tmp/$p.log" 2>&1 ||
		{ echo "  $p: traced run failed (rc $?): $(tail -n 2 "$tmp/$p.log")"; continue; }
	python3 bench/event_cost/program_events.py "$tmp/$p.kjdb" --range forward --name "$p" -o "$OUT/events_$p.json" &&
		progs+=(--program "$p:@$OUT/events_$p.json:$turns#turns_$p")
done
[ ${#files[@]} -gt 0 ] && python3 bench/event_cost/costs.py "${files[@]}" "${progs[@]}" -o "$OUT/trace_event_costs.json"
