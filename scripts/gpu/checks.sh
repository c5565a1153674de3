#!/usr/bin/env bash
# On the GPU machine: GPU tests, API-call cost by domain, child processes, a second CUPTI client,
# repeated-region energy, the shipped run's sequence replay, address re-creation experiments and
# the tracing overhead benchmark, one part per argument. Logs under $OUT.
# usage (device): source scripts/device-env.sh; bash scripts/gpu/checks.sh PART...
# parts: tests apicost (alias apidiag) procs verify apihist erepeat seqship vadebug vaalign overhead
#        apitoggle torchrun
set -u
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT"
kj=$KJ_BUILD/kjoule
parts=${*:-tests apicost procs}
sql() { python3 -c 'import sqlite3,sys
for r in sqlite3.connect(sys.argv[1]).execute(sys.argv[2]): print(*r, sep="\t")' "$@"; }
for part in $parts; do
case $part in
tests)
	echo "== gpu tests"
	(cd "$KJ_BUILD" && timeout 300 ctest -L gpu --output-on-failure 2>&1 | tail -40) | tee "$OUT/gpu_tests.log"
	;;
apicost|apidiag)
	echo "== API-call cost (ns per call) by traced domain (19: no runtime launch callbacks; all: queries too)"
	ac=$KJ_BUILD/bench/api_cost/api_cost
	{
		echo "plain $($ac 200000)"
		echo "default $("$kj" run --force -o /tmp/ac.kjdb -- "$ac" 200000 2>/dev/null | grep '^{')"
		for d in 3 1 2 7 19; do
			echo "api_domains_$d $(KJOULE_API_DOMAINS=$d "$kj" run --force --api -o /tmp/ac.kjdb -- "$ac" 200000 2>/dev/null | grep '^{')"
		done
		echo "api_all $("$kj" run --force --api=all -o /tmp/ac.kjdb -- "$ac" 200000 2>/dev/null | grep '^{')"
	} | tee "$OUT/api_cost.txt"
	;;
procs)
	echo "== child processes"
	"$kj" run --force -o "$OUT/mp.kjdb" -- python3 examples/multiproc.py --iters 20 > "$OUT/mp.log" 2>&1
	echo "exit $?"; tail -3 "$OUT/mp.log"
	sql "$OUT/mp.kjdb" "SELECT p.pid, p.ppid, (SELECT count(*) FROM kernel k WHERE k.pid=p.pid) FROM process p" 2>&1 | head
	"$kj" info "$OUT/mp.kjdb" 2>&1 | head -20
	echo "== torch.profiler inside the traced program"
	"$kj" run --force -o "$OUT/prof.kjdb" -- python3 examples/bloom560m.py --iters 5 --warmup 2 --torch-profiler > "$OUT/prof.log" 2>&1
	echo "exit $?"; grep -iv "^{" "$OUT/prof.log" | tail -8
	"$kj" info "$OUT/prof.kjdb" 2>&1 | tail -12
	;;
verify)
	echo "== snapshot + verify, trace tests"
	(cd "$KJ_BUILD" && timeout 200 ctest -R "gpu_replay_verify|gpu_trace" --output-on-failure 2>&1 | tail -40) | tee "$OUT/verify_tests.log"
	;;
apihist)
	echo "== API calls of 3 BLOOM forwards, by name"
	"$kj" run --force --api -o "$OUT/apih.kjdb" -- python3 examples/bloom560m.py --iters 3 --warmup 1 > "$OUT/apih.log" 2>&1
	echo "exit $?"
	sql "$OUT/apih.kjdb" "SELECT count(*) FROM nvtx_range WHERE name='forward'"
	sql "$OUT/apih.kjdb" "WITH f AS (SELECT min(start_ns) s, max(end_ns) e FROM nvtx_range WHERE name='forward')
		SELECT a.domain, a.name, count(*) FROM api_call a, f WHERE a.start_ns BETWEEN f.s AND f.e
		GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 40"
	;;
erepeat)
	echo "== repeated-region energy"
	timeout 400 python3 bench/energy_repeat/run.py --kjoule "$kj" --runs 5 --seq 1536 5 --iters 150 \
		-o "$OUT/energy_repeat.json" 2>&1 | tail -16
	;;
seqship)
	echo "== sequence replay of the shipped run again, then compare"
	cp examples/runs/bloom560m.kjdb "$OUT/bloom560m.kjdb"
	KJ_REPLAY_WORKER=$KJ_BUILD/kjoule-replay-worker timeout 120 "$kj" replay "$OUT/bloom560m.kjdb" --sequence --graph \
		--energy --energy-seconds 3 --runs 50 2>&1 | grep -v "^kjoule: warning" | tail -14
	"$kj" compare "$OUT/bloom560m.kjdb" --json > "$OUT/compare.json" 2>/dev/null
	"$kj" compare "$OUT/bloom560m.kjdb" 2>&1 | sed -n '/^Replay/,/^Energy/p'
	;;
vaalign)
	echo "== original addresses: reservation alignment"
	v=$KJ_BUILD/tests/gpu/replay/verify.kjdb
	for a in 32 64 128 512 2048; do
		echo "align $a MiB: $(KJ_REPLAY_VA_ALIGN_MB=$a KJ_REPLAY_DEBUG=1 KJ_REPLAY_WORKER=$KJ_BUILD/kjoule-replay-worker \
			"$kj" replay "$v" --kernel kj_axpy_struct --runs 2 --warmup 1 --cache warm 2>&1 | grep -m3 "got\|setup" | tr '\n' ' ')"
	done
	;;
overhead)
	# bench/trace_overhead/turns.py: plain, kjoule and torch.profiler processes alive at once, taking
	# turns; every launching thread on one CPU (TURNS_PIN, default 6; TURNS_PIN= leaves them free)
	n=${TURNS_NAME:-trace_overhead} pin=${TURNS_PIN-6}
	echo "== tracing overhead: processes taking turns -> $n"
	rm -rf /tmp/turnlogs
	timeout ${TURNS_TIMEOUT:-300} python3 bench/trace_overhead/turns.py --kjoule "$kj" --rounds ${TURNS_ROUNDS:-400} \
		--block ${TURNS_BLOCK:-10} --seconds ${TURNS_SECONDS:-170} ${TURNS_CONFIGS:+--configs $TURNS_CONFIGS} ${TURNS_MODEL:+--model $TURNS_MODEL} \
		${TURNS_BASE_INJECT:+--base-inject $TURNS_BASE_INJECT} \
		${pin:+--pin-cpu $pin} --copies ${TURNS_COPIES:-1} --logs /tmp/turnlogs -o "$OUT/$n.json" 2>&1 | grep -v "^kjoule: wrote" | tail -14
	tail -n 3 /tmp/turnlogs/*.log > "$OUT/${n}_logs.txt"
	;;
apitoggle)
	echo "== --api cost by domain, switched inside one traced process (bench/api_cost/api_toggle.py)"
	timeout 300 "$kj" run --force -o /tmp/tog.kjdb -- python3 bench/api_cost/api_toggle.py \
		--rounds ${TOGGLE_ROUNDS:-8} --block ${TOGGLE_BLOCK:-15} > "$OUT/api_toggle.json" 2>/tmp/tog.err
	echo "exit $?"; tail -8 /tmp/tog.err
	echo "== torch.profiler on and off, inside one untraced process"
	timeout 200 python3 bench/api_cost/api_toggle.py --torch-profiler --rounds ${TOGGLE_ROUNDS:-8} --block ${TOGGLE_BLOCK:-15} \
		> "$OUT/profiler_toggle.json" 2>/tmp/ptog.err
	echo "exit $?"; grep -iv warn /tmp/ptog.err | tail -4
	;;
torchrun)
	echo "== torchrun: 2 workers, each its own traced process"
	(cd examples && timeout 240 "$kj" run --force -o "$OUT/torchrun.kjdb" -- \
		torchrun --standalone --nproc_per_node 2 torchrun_infer.py --iters 5) > /tmp/torchrun.log 2>&1
	echo "exit $?"; grep -i "rank\|error\|kjoule" /tmp/torchrun.log | tail -8
	sql "$OUT/torchrun.kjdb" "SELECT p.pid, p.ppid, substr(p.args,1,60), (SELECT count(*) FROM kernel k WHERE k.pid=p.pid) FROM process p"
	"$kj" info "$OUT/torchrun.kjdb" 2>&1 | head -12
	;;
vadebug)
	echo "== original-address re-creation, debug"
	v=$KJ_BUILD/tests/gpu/replay/verify.kjdb
	[ -s "$v" ] && KJ_REPLAY_DEBUG=1 KJ_REPLAY_WORKER=$KJ_BUILD/kjoule-replay-worker "$kj" replay "$v" \
		--kernel kj_axpy_struct --runs 2 --warmup 1 --cache warm 2>&1 | grep -i "region\|setup\|reserv\|got" | head -12
	cat /proc/self/maps | head -3; ulimit -v
	;;
esac
done
