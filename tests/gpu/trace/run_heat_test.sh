#!/usr/bin/env bash
# usage: run_heat_test.sh KJOULE CUDA_HEAT — exit 77 where no GPU is present.
# A hand-written CUDA program (examples/cuda_heat: two streams joined by events, a kernel over
# 48 KiB of dynamic shared memory, a cooperative kernel with a grid-wide sync, an NVRTC kernel
# launched through the driver API, stream-ordered allocation, host functions), eager and captured
# in a CUDA graph, traced and replayed with defaults: every unique kernel replays, the cooperative
# one launched cooperatively (without it its grid sync fails), the kept iteration replays as a
# stream and as a graph, and compare prints no inf or NaN.
set -u
kj=$1 heat=$2
source "$(dirname "$0")/../lib.sh"
coop_name='residual_coop(float const*, float const*, unsigned long, float*, float*)'
for mode in eager graph; do
	opt=; [ "$mode" = graph ] && opt=--graph
	db=$dir/heat_$mode.kjdb
	"$kj" run -o "$db" -- "$heat" --n 1024 --steps 60 --warmup 2 --check-every 10 $opt >"$dir/$mode.out" 2>&1
	check "$mode: the program ran and checked itself" "grep -q '\"ok\": true' '$dir/$mode.out'"
	uniques=$(q "$db" "SELECT count(*) FROM unique_kernel")
	check "$mode: five unique kernels ($uniques)" "[ '$uniques' = 5 ]"
	coop=$(q "$db" "SELECT group_concat(n.demangled) FROM unique_kernel u JOIN kernel_name n ON n.id = u.name_id WHERE u.cooperative = 1")
	check "$mode: the residual kernel, and only it, recorded as cooperative ($coop)" "[ \"\$coop\" = \"\$coop_name\" ]"
	"$kj" replay "$db" >"$dir/$mode.replay" 2>&1
	rc=$?
	check "$mode: replay exits 0 ($rc)" "[ $rc = 0 ]"
	timed=$(q "$db" "SELECT count(*) FROM replay_kernel WHERE cache IN ('warm', 'cold') AND status IN ('ok', 'relocated') AND median_ns > 0")
	check "$mode: all five kernels replay, warm and cold ($timed of 10)" "[ '$timed' = 10 ]"
	seq=$(q "$db" "SELECT count(*) FROM replay_sequence WHERE mode IN ('eager', 'graph') AND median_ns > 0")
	check "$mode: the kept iteration replays as a stream and as a graph ($seq of 2)" "[ '$seq' = 2 ]"
	"$kj" compare "$db" --json >"$dir/$mode.json" 2>"$dir/$mode.cerr"
	rc=$?
	check "$mode: compare --json exits 0 ($rc)" "[ $rc = 0 ]"
	check "$mode: compare --json has no inf or NaN" \
		"python3 -c 'import json, sys; json.load(open(sys.argv[1]), parse_constant=lambda c: sys.exit(1))' '$dir/$mode.json'"
	if [ $fail != 0 ]; then
		tail -20 "$dir/$mode.replay"
		q "$db" "SELECT group_concat(unique_id || ':' || cache || ':' || status || ':' || coalesce(error, ''), ' | ') FROM replay_kernel"
	fi
done
exit $fail
