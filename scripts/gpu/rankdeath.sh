#!/usr/bin/env bash
# On a machine with 2 GPUs: what the run says when a traced process or a rank dies
# (docs/multi-gpu.md). Steps, each with its own time limit, each's log in $OUT:
#  signal   tests/gpu/trace/run_signal_test.sh: cuda_heat traced, sent SIGTERM, SIGKILL, SIGSEGV
#  tp_die   tests/gpu/multi/run_tp_die_test.sh: torchrun, 2 ranks, rank 1 SIGKILLs itself
#  tp       tests/gpu/multi/run_tp_test.sh: the same job without a death (tp_mlp.py changed)
# Files in $OUT: signal.log, tp_die.log, tp.log, compare_die.txt, compare_die.json, run_die.log.
# usage (device): source scripts/device-env.sh; bash scripts/gpu/rankdeath.sh
set -u
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT"
kj=$KJ_BUILD/kjoule
heat=""
for h in "$KJ_BUILD/examples/cuda_heat/cuda_heat" "$KJ_BUILD/cuda_heat"; do
	[ -x "$h" ] && heat=$h && break
done
keep=/tmp/rankdeath_keep
rm -rf "$keep" && mkdir -p "$keep"
declare -A result
# step NAME LIMIT_S CMD...: run with a limit, log into $OUT/NAME.log, result = exit code
step() {
	local name=$1 limit=$2
	shift 2
	echo "== $name (limit ${limit}s)"
	timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
	result[$name]=$?
	tail -30 "$OUT/$name.log"
}
if [ -n "$heat" ]; then
	step signal 200 bash tests/gpu/trace/run_signal_test.sh "$kj" "$heat"
else
	echo "cuda_heat not built: signal step skipped" >"$OUT/signal.log"; result[signal]=skipped
fi
step tp_die 330 env KJ_TP_KEEP="$keep" bash tests/gpu/multi/run_tp_die_test.sh "$kj" .
for f in compare_die.txt compare_die.json run_die.log; do
	[ -f "$keep/$f" ] && tail -c 4000000 "$keep/$f" >"$OUT/$f"
done
step tp 300 bash tests/gpu/multi/run_tp_test.sh "$kj" .
echo
echo "step     exit  (0 ok, 77 skipped, 124 timed out)"
for s in signal tp_die tp; do
	printf '%-8s %s  %s\n' "$s" "${result[$s]}" "$(grep -c '^FAIL' "$OUT/$s.log" 2>/dev/null) FAIL lines"
done
