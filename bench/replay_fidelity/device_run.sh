#!/usr/bin/env bash
# One GPU-machine call for replay: GPU tests, the synthetic fidelity bench, and (when the tracer
# works) BLOOM-560M traced, replayed per kernel and as a sequence. Logs and JSON under $OUT.
# usage (device): source scripts/device-env.sh; bench/replay_fidelity/device_run.sh [BUILD]
set -u
build=${1:-$KJ_BUILD}
export KJ_BUILD=$build KJ_REPLAY_WORKER=$build/kjoule-replay-worker
out=${OUT:-/tmp/kjout}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader
echo "== tests"
(cd "$build" && timeout 240 ctest -R "test_replay|gpu_replay" --output-on-failure) >"$out/ctest.log" 2>&1
echo "ctest exit $?"; grep -E "^(ok|FAIL)|tests passed|Passed|Failed|kernel  " "$out/ctest.log" | head -40
echo "== synthetic fidelity"
KJ_BENCH_ENERGY=${KJ_SYNTH_ENERGY:-1} KJ_BENCH_ENERGY_S=2 timeout 200 bench/replay_fidelity/run.sh "" "$out" 2>"$out/bench_synth.err" | tee "$out/bench_synth.log"
rm -f "$out"/*.kjdb "$out"/*.raw.json "$out"/bench_synth.err
[ "${KJ_SKIP_BLOOM:-0}" = 1 ] && exit 0
echo "== BLOOM-560M"
b=/tmp/bloom.kjdb; rm -f $b
timeout 150 "$build/kjoule" run -o $b --params-iteration 3 -- python3 examples/bloom560m.py --iters 5 --warmup 2 \
	>/tmp/bloom_run.log 2>&1; echo "kjoule run exit $? $(tail -c 400 /tmp/bloom_run.log)"
[ -s $b ] || exit 0
python3 - $b <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for t in ("kernel", "unique_kernel", "launch_params", "module", "module_function", "allocation", "sequence_op", "device"):
    try: print(t, c.execute(f"select count(*) from {t}").fetchone()[0], end="; ")
    except Exception as e: print(t, e, end="; ")
print()
PY
for al in ${KJ_ALIGNS:-32}; do
	cp $b /tmp/bloom_a$al.kjdb
	t0=$(date +%s)
	KJ_BENCH_ENERGY=0 KJ_REPLAY_VA_ALIGN_MB=$al KJ_REPLAY_DEBUG=1 timeout 200 bench/replay_fidelity/run.sh /tmp/bloom_a$al.kjdb "$out" \
		2>/tmp/bench_bloom_a$al.err >/tmp/bench_bloom_a$al.log
	echo "== BLOOM replay, regions aligned to $al MiB: wall $(( $(date +%s) - t0 )) s; hinted addresses obtained:" \
		"$(grep -c 'got 0x' /tmp/bench_bloom_a$al.err) regions, $(awk '/region 0x/ {if ($3 == $6) n++} END {print n+0}' /tmp/bench_bloom_a$al.err) exact"
	head -5 /tmp/bench_bloom_a$al.log
	grep -E "setup|early" /tmp/bench_bloom_a$al.err | head -12
	grep -A4 "region 0x" /tmp/bench_bloom_a$al.err | grep -v "^--" | head -12
	rm -f "$out"/*.raw.json
done
if [ "${KJ_SKIP_ENERGY:-0}" != 1 ]; then
echo "== BLOOM energy, GEMM kernels (nvjet), graph of 100 launches, >= 2 s each"
t0=$(date +%s)
KJ_REPLAY_VA_ALIGN_MB=${KJ_ALIGNS%% *} timeout 150 "$build/kjoule" replay $b --kernel 'nvjet*' --runs 20 --energy \
	--energy-seconds 2 --json 2>/dev/null >"$out/bloom_energy.json"
echo "energy replay wall $(( $(date +%s) - t0 )) s"
python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))
for k in d['kernels']:
    e=k['energy'] or {}
    print('%-40s %6d %8.2f us %10s mJ/launch %8s W %s' % (k['name'][:40], k['launches'], (k['warm'] or {}).get('median_ns',0)/1e3,
          '%.4g' % e['energy_mj_per_launch'] if e else '-', '%.0f' % (e['power_mw']/1e3) if e else '-', (e or {}).get('method','')))
" "$out/bloom_energy.json"
fi
KJ_REPLAY_VA_ALIGN_MB=${KJ_ALIGNS%% *} timeout 120 "$build/kjoule" replay $b --sequence --graph ${KJ_SEQ_ENERGY---energy --energy-seconds 3} --runs 50 2>&1 | grep -v Assertion | tee "$out/bloom_sequence.log"
