#!/usr/bin/env bash
# On the GPU machine: the GPU tests of the GPU harness (src/gpu: gpu_harness) and of the three
# workers that share it:
# sweep (selftest: every operator against a CPU reference, flash_atten through kj_gpu_fa2/sdpa;
# the line protocol), pipeline (phases, attention, the fill, graph vs single timing) and replay
# (per kernel, verify, same-name modules: the driver-API harness). Also which CUDA libraries each
# worker loads (the replay worker: no CUDA runtime). ctest under a 7-minute limit; each step's log
# into $OUT; a short table last.
# usage (device): source scripts/device-env.sh; bash scripts/gpu/gpuharness.sh
set -u
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT"
[ -n "${KJ_BUILD:-}" ] || { [ -f scripts/device-env.sh ] && source scripts/device-env.sh; }
B=${KJ_BUILD:-build}
echo "== device"
timeout 20 nvidia-smi --query-gpu=name,driver_version,power.draw,clocks.sm --format=csv,noheader 2>&1 |
	tee "$OUT/device.txt"

echo "== worker libraries"
{
	for w in kjoule-sweep-worker kjoule-pipeline-worker kjoule-replay-worker; do
		if [ -x "$B/$w" ]; then
			echo "$w: $(timeout 20 ldd "$B/$w" 2>&1 | grep -oE 'lib(cudart|cuda|cudnn|cublasLt)\.so[^ ]*' |
				sort -u | tr '\n' ' ')"
		else
			echo "$w: missing from $B"
		fi
	done
} 2>&1 | tee "$OUT/workers.txt"

echo "== GPU tests of the harness, sweep, pipeline and replay (ctest -L gpu, 7 minutes at most)"
(cd "$B" && timeout 420 ctest -L gpu -R 'harness|sweep|pipeline|replay' --output-on-failure) > "$OUT/gpu_tests.log" 2>&1
rc=$?
echo "ctest exit $rc$([ $rc = 124 ] && echo ' (timed out)')"
if [ -f "$B/Testing/Temporary/LastTest.log" ]; then
	timeout 60 xz -c "$B/Testing/Temporary/LastTest.log" > "$OUT/LastTest.log.xz" 2>/dev/null ||
		echo "LastTest.log not compressed"
fi

echo "== table"
{
	printf '%-28s %s\n' test result
	grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: ' "$OUT/gpu_tests.log" |
		sed -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) [ .*]*(Passed|\*\*\*[A-Za-z]+|Not Run.*|[A-Za-z ]+)[^0-9]*([0-9.]+ sec)?.*$/\1 \2 \3/' |
		awk '{ printf "%-28s %s %s %s\n", $1, $2, $3, $4 }'
	grep -E 'tests passed|tests failed' "$OUT/gpu_tests.log"
	echo "ctest exit $rc"
	sed 's/^/libs  /' "$OUT/workers.txt"
} | tee "$OUT/table.txt"
