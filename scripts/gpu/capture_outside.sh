#!/usr/bin/env bash
# On the GPU machine: where a --capture window that never opens costs a program, taking turns in
# live processes (bench/trace_overhead/turns.py): the compiled decode loop (turn_worker.py --model
# decode) and the GPT-2-medium-shaped eager forward, each untraced, under a window that never opens,
# the same without the power sampler, without the watch for other processes (decode), with CUPTI's
# allocation records off too (decode, KJOULE_CUPTI_STUDY=kernels_only), with nothing of CUPTI's ever
# enabled (decode, KJOULE_COST_STUDY=512 from cuInit), without libkjoule_nccl.so preloaded, with
# CUPTI's buffers asked for every 5 s, and under an injection library that does nothing (decode:
# the parent and its environment without CUPTI). Writes
# $OUT/capture_outside.json (both programs' turns, device, date, command) and prints a table last.
#   env: CO_DECODE_S (250), CO_GPT2M_S (150): each program's limit, its build included; 0 leaves it
#   out. CO_DECODE_CONFIGS / CO_GPT2M_CONFIGS: the contestants besides plain.
# usage (device, repo root): source scripts/device-env.sh; bash scripts/gpu/capture_outside.sh
set -u
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT"
kj=$KJ_BUILD/kjoule
dcfg=${CO_DECODE_CONFIGS:-kjoule_capture_late kjoule_capture_late_no_alloc kjoule_capture_late_cupti_idle kjoule_capture_late_no_nccl kjoule_capture_late_flush5000 kjoule_noop_inject}
gcfg=${CO_GPT2M_CONFIGS:-kjoule_capture_late kjoule_capture_late_no_power kjoule_off}
run() { # NAME MODEL LIMIT BLOCK CONFIGS...
	local name=$1 model=$2 limit=$3 block=$4
	shift 4
	[ "$limit" -gt 0 ] || return 0
	timeout "$limit" python3 bench/trace_overhead/turns.py --kjoule "$kj" --model "$model" --pin-cpu "${TURNS_PIN:-6}" \
		--configs "$@" --block "$block" --seconds $((limit * 2 / 3)) --rounds 400 -o "$OUT/outside_$name.json" \
		>"$OUT/outside_$name.log" 2>&1 || echo "  $name: cut short or failed (rc $?): the rounds done so far are kept"
}
run decode decode "${CO_DECODE_S:-250}" 5 $dcfg
run gpt2m gpt2m "${CO_GPT2M_S:-150}" 20 $gcfg
python3 bench/trace_overhead/outside_summary.py "$OUT" "CO_DECODE_S=${CO_DECODE_S:-250} CO_GPT2M_S=${CO_GPT2M_S:-150} bash scripts/gpu/capture_outside.sh"
