#!/usr/bin/env bash
# On a GPU machine: this build's injection library against another build's (AB_BASE, its
# libkjoule_inject.so) where they may cost a traced program differently: event_cost's kernel_block
# (an empty kernel taking 512 bytes by value, after 256 KiB of other reads) and the eager
# GPT-2-medium-shaped forward, each taking turns with AB_COPIES processes a contestant beside
# CUPTI's activity records alone and paired round by round; first the GPU tests that trace, which
# the build must pass before its cost means anything. Results under $OUT (gpu_tests.log,
# event_kernel_block.json, capture_turns_gpt2m.json), the pairs last.
#   env: AB_BASE (required), AB_COPIES (processes a contestant, 3), AB_EVENT_S (seconds of
#   event rounds, 65; 0 leaves them out), AB_TURNS_S (seconds of GPT-2 turns, 330; 0 leaves them
#   out), AB_TESTS (ctest -R of the GPU tests, "gpu_trace|gpu_capture"; empty: none)
# usage: here, KJ_PREP_BASE=REV ./scripts/device-prep.sh builds REV's library beside this build's;
# then (device): source scripts/device-env.sh; AB_BASE=.carry/base/libkjoule_inject.so bash scripts/gpu/inject_ab.sh
set -u
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT"
base=${AB_BASE:-}
[ -n "$base" ] || { echo "inject_ab.sh: set AB_BASE to the other build's libkjoule_inject.so" >&2; exit 2; }
[ -f "$base" ] || { echo "inject_ab.sh: no library at $base" >&2; exit 2; }
copies=${AB_COPIES:-3}
pairs=(kjoule_default kjoule_default_base kjoule_default cupti_activity_only kjoule_default_base cupti_activity_only)
tests=${AB_TESTS-gpu_trace|gpu_capture}
if [ -n "$tests" ]; then
	(cd "$KJ_BUILD" && timeout 360 ctest -L gpu -R "$tests" --timeout 340 --output-on-failure >"$OUT/gpu_tests.log" 2>&1)
	echo "== GPU tests: $(grep -hE 'tests passed|tests failed' "$OUT/gpu_tests.log")"
fi
if [ "${AB_EVENT_S:-65}" -gt 0 ]; then
	EC_S=${AB_EVENT_S:-65} EC_COPIES=$copies EC_KINDS=kernel_block EC_PROGRAMS="" \
		EC_CONFIGS="kjoule_default kjoule_no_params cupti_activity_only" EC_BASE_INJECT="$base" \
		timeout $((${AB_EVENT_S:-65} + 90)) bash scripts/gpu/event_costs.sh >"$OUT/event_costs.log" 2>&1
	echo "== a launch taking 512 bytes by value ($copies processes a contestant)"
	python3 bench/trace_overhead/pair.py "$OUT/event_kernel_block.json" "${pairs[@]}" kjoule_no_params cupti_activity_only
fi
if [ "${AB_TURNS_S:-330}" -gt 0 ]; then
	CAP_TEST_S=0 CAP_TURNS_S=${AB_TURNS_S:-330} CAP_JAX_TURNS_S=0 CAP_DECODE_TURNS_S=0 CAP_JAX_S=0 CAP_DECODE_S=0 \
		CAP_STEPS_S=0 CAP_TURNS_COPIES=$copies CAP_BASE_INJECT="$base" \
		CAP_TURNS_CONFIGS="kjoule_default kjoule_default_base kjoule_capture_inside cupti_activity_only" \
		timeout $((${AB_TURNS_S:-330} + 30)) bash scripts/gpu/capture.sh >"$OUT/capture.log" 2>&1
	rm -f "$OUT/capture_overhead.json"
	echo "== the eager GPT-2 forward ($copies processes a contestant)"
	python3 bench/trace_overhead/pair.py "$OUT/capture_turns_gpt2m.json" "${pairs[@]}" kjoule_capture_inside cupti_activity_only
fi
