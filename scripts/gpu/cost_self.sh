#!/usr/bin/env bash
# Where kjoule's launch handler spends its time (KJOULE_COST_SELF=1, inject_cost_self.h), beside
# the forward time of the same process, plain, --no-params and defaults, on the turn worker's
# models. Prints one line per run; logs under $OUT/cost_self/. Needs an injection library built
# with the probes: cmake -S . -B build-cost -DKJ_COST_SELF=ON && cmake --build build-cost
# --target kjoule_inject, then KJ_INJECT_LIB=build-cost/src/trace/inject/libkjoule_inject.so.
# usage (device): source scripts/device-env.sh; KJ_INJECT_LIB=... [MODES="no-params defaults"]
#   bash scripts/gpu/cost_self.sh [MODEL...]
set -u
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT/cost_self"
[ -n "${KJ_INJECT_LIB:-}" ] || { echo "cost_self.sh: set KJ_INJECT_LIB to a -DKJ_COST_SELF=ON build's library" >&2; exit 2; }
kj=$KJ_BUILD/kjoule
w="python3 bench/trace_overhead/turn_worker.py --pin-cpu=${PIN:-6}"
med='import json,statistics,sys
ls=[json.loads(l) for l in sys.stdin if l.startswith("{")]
ms=[l["ms"] for l in ls if "ms" in l][-1]  # the second turn: the first warms up
print(f"forward_ms_median {statistics.median(ms):.3f} n {len(ms)}")'
for model in ${*:-bloom560m gpt2m}; do
	for mode in ${MODES:-plain no-params defaults}; do
		log=$OUT/cost_self/${model}_$mode
		case $mode in
		plain) cmd="$w --model=$model" ;;
		no-params) cmd="$kj run --force --no-params -o /tmp/cs.kjdb -- $w --model=$model" ;;
		defaults) cmd="$kj run --force -o /tmp/cs.kjdb -- $w --model=$model" ;;
		esac
		printf 'go 200\ngo 400\nquit\n' | KJOULE_COST_SELF=1 timeout 240 $cmd >"$log.out" 2>"$log.err"
		echo "$model $mode: $(python3 -c "$med" <"$log.out") | $(grep -h 'cost study' "$log.err" | sed 's/.*(KJOULE_COST_SELF)://')"
	done
done
