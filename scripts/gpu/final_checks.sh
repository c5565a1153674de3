#!/usr/bin/env bash
# On a machine with two GPUs, at once: the GPU test suite on GPU 1 (the groups the store move
# touched first), and on GPU 0 the tracing cost of this build's injection library against an
# earlier build's (TURNS_BASE_INJECT, a libkjoule_inject.so), processes taking turns
# (bench/trace_overhead/turns.py: plain, kjoule_default, kjoule_default_base). Logs under $OUT;
# a short table last. usage: FC_SECONDS=S bash scripts/gpu/final_checks.sh
# FC_ENERGY="PROGRAM ...": GPU 1 runs the energy bench for those programs instead (its result
# $OUT/energy_fidelity_fc_gpu1.json), then the GPU tests FC_TESTS (a ctest -R pattern, default
# gpu_signal); FC_COPIES=N: N processes per contestant in the tracing-cost turns
set -u
cd "$(dirname "$0")/../.."
source scripts/device-env.sh
source scripts/gpu/lib.sh
multicast_off
secs=${FC_SECONDS:-200}
(
	export CUDA_VISIBLE_DEVICES=1
	if [ -n "${FC_ENERGY:-}" ]; then # the energy bench for these programs first, then the tests named
		EF_TAG=fc_gpu1 EF_TIMEOUT=$((secs - 60)) bash bench/energy_fidelity/device_run.sh $FC_ENERGY > "$OUT/ef_fc.txt" 2>&1
		cd "$KJ_BUILD" || exit 1
		left=$((secs - 10 - SECONDS))
		[ $left -gt 20 ] && timeout $left ctest -L gpu -R "${FC_TESTS:-gpu_signal}" --timeout 300 \
			--output-on-failure > "$OUT/gpu_tests_a.log" 2>&1
		exit 0
	fi
	cd "$KJ_BUILD" || exit 1
	timeout $((secs - 10)) ctest -L gpu -R "replay|graph|harness|trace|signal" --timeout 300 --output-on-failure > "$OUT/gpu_tests_a.log" 2>&1
	left=$((secs - 10 - SECONDS))
	[ $left -gt 20 ] && timeout $left ctest -L gpu -E "replay|graph|harness|trace|signal|multi_tp" --timeout 300 \
		--output-on-failure > "$OUT/gpu_tests_b.log" 2>&1
) &
tests=$!
if [ -n "${TURNS_BASE_INJECT:-}" ]; then
	CUDA_VISIBLE_DEVICES=0 timeout $((secs - 5)) python3 bench/trace_overhead/turns.py --kjoule "$KJ_BUILD/kjoule" \
		--configs kjoule_default kjoule_default_base --base-inject "$TURNS_BASE_INJECT" --rounds 400 --block 10 \
		--copies "${FC_COPIES:-1}" \
		--seconds $((secs - 60)) --pin-cpu 6 --logs /tmp/turnlogs -o "$OUT/trace_cost_ab.json" > "$OUT/turns.log" 2>&1
	echo "turns exit $?" >> "$OUT/turns.log"
fi
wait $tests
[ -f "$OUT/ef_fc.txt" ] && { echo "== energy bench (GPU 1)"; tail -n 6 "$OUT/ef_fc.txt"; }
echo "== GPU tests (GPU 1)"
grep -hE "Test +#|tests passed|tests failed" "$OUT"/gpu_tests_*.log | sed 's/  */ /g' | tail -30
echo "== tracing cost, this build against the base (GPU 0)"
tail -n 8 "$OUT/turns.log"
[ -f "$OUT/trace_cost_ab.json" ] && python3 bench/trace_overhead/pair.py "$OUT/trace_cost_ab.json" kjoule_default kjoule_default_base
