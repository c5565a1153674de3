#!/usr/bin/env bash
# On a GPU machine: which part of `kjoule run --capture` costs a program's thread. The event loops
# (bench/event_cost) and the JAX step, each run once per setting, alternating: untraced; fully
# traced; an NVTX window that never opens (NVTX callbacks on, activity off); a cuda-profiler-api
# window that never opens (no NVTX callbacks, activity off); an NVTX window open from instance 3;
# CUPTI's activity records alone. One line per run in $OUT/capture_diag.txt: setting, exit code,
# the program's last JSON line; stderr of each run in $OUT/capture_diag_err.txt.
#   env: CD_KINDS (event kinds, "nvtx kernel graph"), CD_JAX_ROUNDS (2)
set -u
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT"
kj=$KJ_BUILD/kjoule
ec=$KJ_BUILD/bench/event_cost/event_cost
tmp=$(mktemp -d)
log=$OUT/capture_diag.txt
err=$OUT/capture_diag_err.txt
: >"$log"
: >"$err"
one() { # label name -- cmd...
	local label=$1 name=$2
	shift 3
	local pre=()
	case $name in
	plain) pre=() ;;
	full) pre=("$kj" run --force -o "$tmp/d.kjdb" --) ;;
	late) pre=("$kj" run --force -o "$tmp/d.kjdb" --capture step@1000000:20 --) ;;
	prof) pre=("$kj" run --force -o "$tmp/d.kjdb" --capture cuda-profiler-api --) ;;
	inside) pre=("$kj" run --force -o "$tmp/d.kjdb" --capture step@3:100000000 --) ;;
	cupti) pre=(env KJOULE_COST_STUDY=1024 "$kj" run --force --no-params -o "$tmp/d.kjdb" --) ;;
	esac
	local t0 o rc
	t0=$(date +%s.%N)
	o=$(timeout 120 "${pre[@]}" "$@" 2>"$tmp/e" | tail -n 1)
	rc=$?
	echo "$label $name rc=$rc wall=$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}") $o" | tee -a "$log"
	{ echo "== $label $name"; tail -n 8 "$tmp/e"; } >>"$err"
}
for k in ${CD_KINDS:-nvtx kernel graph}; do
	for m in plain full late prof inside cupti plain; do one "event_$k" $m -- "$ec" "$k" 2000 20; done
done
for r in $(seq 1 "${CD_JAX_ROUNDS:-2}"); do
	for m in plain late prof full inside; do one jax_step $m -- python3 examples/jax_step.py --steps 400; done
done
