#!/usr/bin/env bash
# On the GPU machine: kjoule run --capture (docs/tracing.md, capture ranges). 1. the GPU test
# (tests/gpu/capture/run_capture_test.sh: a CUDA program of NVTX steps under step@5:3 and
# cuda-profiler-api, then examples/gpt_train.py small under step@5:3); 2. what tracing costs outside
# the window: the turns method (bench/trace_overhead/turns.py, GPT-2-medium shape eager: plain,
# defaults, a capture window that never opens), and whole runs alternating
# (bench/trace_overhead/capture_pairs.py) for examples/jax_step.py and the compiled decode loop
# (examples/hf_decode.py --cache static); 3. a 10,000-step run with --capture step@5000:20 against
# the full trace: database sizes and bytes per launch, and compare, replay --energy and report run on
# the captured one (exit code and seconds each). The captured iterations' energy against the whole
# run's is scripts/gpu/capture_energy.sh's. Writes $OUT/capture_overhead.json and prints a table
# last. Ends within 8 minutes; each step has its own timeout and its log in $OUT.
# usage (device, repo root): source scripts/device-env.sh; bash scripts/gpu/capture.sh
#   env: each part's limit in seconds, CAP_TEST_S (300: the test runs the compiled decode loop too), CAP_TURNS_S (130), CAP_JAX_TURNS_S (150: the
#   JAX step taking turns, bench/trace_overhead/turn_worker.py --model jax_step), CAP_DECODE_TURNS_S (200: the
#   compiled decode loop taking turns, --model decode; its compilation takes most of a minute), CAP_JAX_S (100), CAP_DECODE_S
#   (110), CAP_STEPS_S (60 a run); 0 leaves the JAX or decode
#   pairs out; a part whose limit is 0 is not run. CAP_TURNS_CONFIGS: the turns' contestants besides
#   plain (default: kjoule_default kjoule_no_params kjoule_capture_late cupti_activity_only;
#   kjoule_capture_late_attached keeps CUPTI in), CAP_TURNS_COPIES (1): processes per contestant.
#   CAP_BASE_INJECT: another build's libkjoule_inject.so for the *_base contestants of the GPT-2
#   turns (kjoule_default_base in CAP_TURNS_CONFIGS), paired with the current build round by round.
#   CAP_KEEP=bench/results/capture_overhead.json keeps
#   the parts not measured in this call from that earlier result (named under kept_from_previous), so
#   the parts can be measured in calls of their own
set -u
OUT=${OUT:-/tmp/kjout}
configs=${CAP_TURNS_CONFIGS:-kjoule_default kjoule_no_params kjoule_capture_late cupti_activity_only}
copies=${CAP_TURNS_COPIES:-1}
base_inject=()
[ -n "${CAP_BASE_INJECT:-}" ] && base_inject=(--base-inject "$CAP_BASE_INJECT")
mkdir -p "$OUT"
kj=$KJ_BUILD/kjoule
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
target=$KJ_BUILD/tests/gpu/capture/capture_target
if [ ! -x "$target" ]; then # a build without the GPU tests: compile the program here
	target=$tmp/capture_target
	timeout 120 nvcc -O2 -arch=sm_90 -o "$target" tests/gpu/capture/capture_target.cu -lcudart -ldl \
		>"$tmp/nvcc.log" 2>&1 || { echo "capture.sh: nvcc failed"; cat "$tmp/nvcc.log"; }
fi

echo "== 1. GPU test"
test_rc=-1 # not run
if [ "${CAP_TEST_S:-300}" -gt 0 ]; then
	timeout ${CAP_TEST_S:-300} bash tests/gpu/capture/run_capture_test.sh "$kj" "$target" \
		python3 examples/gpt_train.py --layers 4 --hidden 512 --heads 8 --seq 256 --batch 4 --steps 10 --warmup 0 \
		>"$OUT/capture_test.log" 2>&1
	test_rc=$?
	grep -E "^(ok|FAIL)" "$OUT/capture_test.log" | sed 's/^/  /'
fi

echo "== 2a. turns: GPT-2-medium shape eager (plain, $configs)"
if [ "${CAP_TURNS_S:-130}" -gt 0 ]; then
	timeout ${CAP_TURNS_S:-130} python3 bench/trace_overhead/turns.py --kjoule "$kj" --model gpt2m --pin-cpu "${TURNS_PIN:-6}" \
		--configs $configs --copies "$copies" "${base_inject[@]}" --seconds $(( ${CAP_TURNS_S:-130} - 30 )) --rounds 400 -o "$OUT/capture_turns_gpt2m.json" \
		>"$tmp/turns.log" 2>&1 || echo "  turns: failed or cut short (rc $?)"
	tail -4 "$tmp/turns.log" | sed 's/^/  /'
fi

echo "== 2c. turns: the JAX step (plain, $configs)"
if [ "${CAP_JAX_TURNS_S:-150}" -gt 0 ]; then
	timeout ${CAP_JAX_TURNS_S:-150} python3 bench/trace_overhead/turns.py --kjoule "$kj" --model jax_step --pin-cpu "${TURNS_PIN:-6}" \
		--configs $configs --copies "$copies" \
		--seconds $(( ${CAP_JAX_TURNS_S:-150} - 40 )) --rounds 400 -o "$OUT/capture_turns_jax.json" \
		>"$tmp/turns_jax.log" 2>&1 || echo "  turns (JAX): failed or cut short (rc $?)"
	tail -6 "$tmp/turns_jax.log" | sed 's/^/  /'
fi

echo "== 2d. turns: the compiled decode loop (plain, $configs)"
if [ "${CAP_DECODE_TURNS_S:-200}" -gt 0 ]; then
	timeout ${CAP_DECODE_TURNS_S:-200} python3 bench/trace_overhead/turns.py --kjoule "$kj" --model decode --pin-cpu "${TURNS_PIN:-6}" \
		--configs $configs --copies "$copies" --block 5 \
		--seconds $(( ${CAP_DECODE_TURNS_S:-200} - 90 )) --rounds 400 -o "$OUT/capture_turns_decode.json" \
		>"$tmp/turns_decode.log" 2>&1 || echo "  turns (decode): failed or cut short (rc $?)"
	tail -6 "$tmp/turns_decode.log" | sed 's/^/  /'
fi

echo "== 2b. whole runs alternating: JAX step, compiled decode loop"
if [ "${CAP_JAX_S:-100}" -gt 0 ]; then
	timeout ${CAP_JAX_S:-100} python3 bench/trace_overhead/capture_pairs.py --kjoule "$kj" --name jax_step --capture step@1000000:20 \
	--seconds $(( ${CAP_JAX_S:-100} - 20 )) --timeout 60 --tmp "$tmp" -o "$OUT/capture_pairs_jax.json" -- python3 examples/jax_step.py --steps 30 \
	>"$tmp/pairs_jax.log" 2>&1 || echo "  jax pairs: failed or cut short (rc $?)"
	tail -1 "$tmp/pairs_jax.log" | sed 's/^/  /'
fi
if [ "${CAP_DECODE_S:-110}" -gt 0 ]; then
	timeout ${CAP_DECODE_S:-110} python3 bench/trace_overhead/capture_pairs.py --kjoule "$kj" --name decode_compiled --capture request@1000000:20 \
	--seconds $(( ${CAP_DECODE_S:-110} - 20 )) --timeout 80 --tmp "$tmp" -o "$OUT/capture_pairs_decode.json" -- \
	python3 examples/hf_decode.py --requests 4 --warmup 1 \
	>"$tmp/pairs_decode.log" 2>&1 || echo "  decode pairs: failed or cut short (rc $?)"
	tail -1 "$tmp/pairs_decode.log" | sed 's/^/  /'
fi

echo "== 3. 10,000 steps: --capture step@5000:20 against the full trace"
[ "${CAP_STEPS_S:-60}" -gt 0 ] && for mode in capture full; do
	opt=; [ "$mode" = capture ] && opt="--capture step@5000:20"
	t0=$(date +%s.%N)
	timeout ${CAP_STEPS_S:-60} "$kj" run --force $opt -o "$tmp/steps_$mode.kjdb" -- "$target" --steps 10000 --launches 4 \
		>"$tmp/steps_$mode.out" 2>"$tmp/steps_$mode.err"
	echo "$mode rc $? wall $(awk "BEGIN{print $(date +%s.%N) - $t0}")" >>"$OUT/capture_steps10k.log"
	"$kj" info "$tmp/steps_$mode.kjdb" >>"$OUT/capture_steps10k.log" 2>&1
	cat "$tmp/steps_$mode.err" >>"$OUT/capture_steps10k.log"
done
# the captured database must carry the rest of the product: compare, replay (with energy) and report
[ "${CAP_STEPS_S:-60}" -gt 0 ] && for step in compare replay report; do
	case $step in
	compare) args=() ;;
	replay) args=(--energy --budget 60) ;;
	report) args=(-o "$tmp/steps_report.html") ;;
	esac
	t0=$(date +%s.%N)
	timeout 120 "$kj" $step "$tmp/steps_capture.kjdb" "${args[@]}" >>"$OUT/capture_steps10k.log" 2>&1
	echo "$step $? $(awk "BEGIN{print $(date +%s.%N) - $t0}")" >>"$tmp/steps_tools.txt"
done

python3 bench/trace_overhead/capture_summary.py "$OUT" "$tmp" "$test_rc"
