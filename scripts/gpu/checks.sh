#!/usr/bin/env bash
# On the GPU machine: GPU tests, API-call cost by domain, child processes, a second CUPTI client,
# and the energy-per-forward CV of 5 traced BLOOM-560M runs. Logs under $OUT.
# usage (device): source scripts/device-env.sh; bash scripts/gpu/checks.sh [tests|apicost|procs|cv]...
set -u
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT"
kj=$KJ_BUILD/kjoule
parts=${*:-tests apicost procs cv}
for part in $parts; do
case $part in
tests)
	echo "== gpu tests"
	(cd "$KJ_BUILD" && timeout 300 ctest -L gpu --output-on-failure 2>&1 | tail -40) | tee "$OUT/gpu_tests.log"
	;;
apicost)
	echo "== API-call cost (ns per call) by traced domain"
	ac=$KJ_BUILD/bench/api_cost/api_cost
	{
		echo "plain $($ac 200000)"
		echo "default $("$kj" run --force -o "$OUT/ac.kjdb" -- "$ac" 200000 2>/dev/null | grep '^{')"
		for d in 3 1 2 7; do
			echo "api_domains_$d $(KJOULE_API_DOMAINS=$d "$kj" run --force --api -o "$OUT/ac.kjdb" -- "$ac" 200000 2>/dev/null | grep '^{')"
		done
	} | tee "$OUT/api_cost.txt"
	;;
procs)
	echo "== child processes"
	"$kj" run --force -o "$OUT/mp.kjdb" -- python3 examples/multiproc.py --iters 20 > "$OUT/mp.log" 2>&1
	echo "exit $?"; tail -3 "$OUT/mp.log"
	sqlite3 "$OUT/mp.kjdb" "SELECT p.pid, p.parent_pid, (SELECT count(*) FROM kernel k WHERE k.pid=p.pid) FROM process p" 2>&1 | head
	"$kj" info "$OUT/mp.kjdb" 2>&1 | head -20
	echo "== torch.profiler inside the traced program"
	"$kj" run --force -o "$OUT/prof.kjdb" -- python3 examples/bloom560m.py --iters 5 --warmup 2 --torch-profiler > "$OUT/prof.log" 2>&1
	echo "exit $?"; grep -i "kjoule" "$OUT/prof.log" | head -5
	"$kj" info "$OUT/prof.kjdb" 2>&1 | tail -12
	;;
cv)
	# seq 5: the CPU-bound forward (energy follows the host's wall time); seq $CV_SEQ: a GPU-bound one
	for seq in 5 ${CV_SEQ:-1536}; do
		echo "== energy per forward, 5 traced runs, seq-len $seq"
		for i in 1 2 3 4 5; do
			"$kj" run --force -o "$OUT/cv${seq}_$i.kjdb" -- python3 examples/bloom560m.py --seq-len "$seq" \
				--iters "$([ "$seq" = 5 ] && echo 300 || echo 150)" --warmup 20 > "$OUT/cv${seq}_$i.log" 2>&1
			"$kj" compare "$OUT/cv${seq}_$i.kjdb" --json > "$OUT/cv${seq}_$i.json" 2> "$OUT/cv${seq}_$i.err"
			python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["result"] if "result" in json.load(open(sys.argv[1])) else json.load(open(sys.argv[1])); print(sys.argv[2], d.get("energy_measured_j"), d.get("energy_measured_unc_j"), d.get("wall_us"), d.get("busy_us"))' "$OUT/cv${seq}_$i.json" "$i" || tail -3 "$OUT/cv${seq}_$i.err" "$OUT/cv${seq}_$i.log"
		done
	done
	;;
esac
done
