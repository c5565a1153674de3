#!/usr/bin/env bash
# On the GPU machine: graph-launched and compiler-generated programs traced, replayed and compared
# (issue 11). One part per argument; logs and small run databases under $OUT.
# usage (device): source scripts/device-env.sh; bash scripts/gpu/graphs.sh PART...
# parts: tests trace replay compare bench slim
#   trace:   kjoule run of each example kind into $RUNS (gpt2 eager/graph/compile, jax, resnet, graph_target)
#   replay:  kjoule replay --energy (defaults) of each, timed
#   compare: kjoule compare --json of each into $OUT
#   slim:    copies without module images (for analysis work elsewhere), under $OUT
# env: KINDS, GPT_ITERS (40), JAX_STEPS (30): more iterations make the measured energy per
#   iteration exact enough to judge a prediction (40 GPT forwards are ~60 ms of GPU work, under one
#   update of the energy counter: ±25 % on the mean)
set -u
OUT=${OUT:-/tmp/kjout}
RUNS=${RUNS:-/tmp/kjruns}
mkdir -p "$OUT" "$RUNS"
kj=$KJ_BUILD/kjoule
export KJ_REPLAY_WORKER=$KJ_BUILD/kjoule-replay-worker
KINDS=${KINDS:-gpt_eager gpt_graph gpt_compile jax resnet handcuda}
cmd_of() {
	case $1 in
	gpt_eager) echo "python3 examples/gpt_graph.py --mode eager --iters 40" ;;
	gpt_graph) echo "python3 examples/gpt_graph.py --mode graph --iters ${GPT_ITERS:-40}" ;;
	gpt_compile) echo "python3 examples/gpt_graph.py --mode compile --iters 40" ;;
	jax) echo "python3 examples/jax_step.py --steps ${JAX_STEPS:-30}" ;;
	resnet) echo "python3 examples/resnet_cudnn.py --iters 20" ;;
	handcuda) echo "$KJ_BUILD/tests/gpu/graph/graph_target" ;;
	esac
}
range_of() { case $1 in jax) echo "--iteration-range step" ;; handcuda) echo "" ;; *) echo "" ;; esac; }
for part in "$@"; do
case $part in
tests)
	echo "== gpu tests"
	(cd "$KJ_BUILD" && timeout 400 ctest -L gpu --output-on-failure 2>&1 | tail -60) | tee "$OUT/gpu_tests.log"
	;;
trace)
	for k in $KINDS; do
		t0=$(date +%s%N)
		# shellcheck disable=SC2046
		timeout 300 "$kj" run --force -o "$RUNS/$k.kjdb" $(range_of "$k") -- $(cmd_of "$k") \
			> "$RUNS/$k.log" 2>&1
		rc=$?
		echo "$k trace_s $(( ($(date +%s%N) - t0) / 1000000 ))e-3" >> "$RUNS/times.txt"
		echo "trace $k rc=$rc $(( ($(date +%s%N) - t0) / 1000000 )) ms $(tail -1 "$RUNS/$k.log" | cut -c1-150)"
	done
	;;
replay)
	for k in $KINDS; do
		[ -f "$RUNS/$k.kjdb" ] || continue
		t0=$(date +%s%N)
		timeout 300 "$kj" replay "$RUNS/$k.kjdb" --energy ${REPLAY_ARGS:-} > "$RUNS/$k.replay.log" 2>&1
		rc=$?
		echo "$k replay_s $(( ($(date +%s%N) - t0) / 1000000 ))e-3 $rc" >> "$RUNS/times.txt"
		echo "replay $k rc=$rc $(( ($(date +%s%N) - t0) / 1000000 )) ms: $(grep -c . "$RUNS/$k.replay.log") lines; $(grep "kjoule replay:" "$RUNS/$k.replay.log" | head -1 | cut -c1-200)"
	done
	;;
compare)
	for k in $KINDS; do
		[ -f "$RUNS/$k.kjdb" ] || continue
		"$kj" compare "$RUNS/$k.kjdb" --json > "$RUNS/$k.compare.json" 2> "$RUNS/$k.compare.err"
		"$kj" compare "$RUNS/$k.kjdb" > "$RUNS/$k.compare.txt" 2>&1
		python3 - "$k" "$RUNS/$k.compare.json" <<'PY'
import json, sys
k, p = sys.argv[1], sys.argv[2]
try:
    d = json.load(open(p))
except Exception as e:
    print(f"compare {k}: unreadable JSON: {e}"); sys.exit(0)
def g(*path):
    x = d
    for s in path:
        if not isinstance(x, dict) or s not in x: return None
        x = x[s]
    return x
print(f"compare {k}: iter={g('iterations')} kernels/iter={g('kernels_per_iteration')}",
      f"busy={g('busy_us')} sumwarm={g('replay_sum_warm_us')} seqgraph={g('sequence_graph_us')}",
      f"explained={g('explained_fraction')} energy_err={g('energy_error_pct')}")
PY
	done
	;;
bench)
	# one JSON of every kind's figures, from the run databases and compare's JSON (the numbers of
	# bench/results/graph_programs.json); nothing typed by hand
	python3 scripts/gpu/graphs_bench.py --runs "$RUNS" --kinds "$KINDS" -o "$OUT/graph_programs.json" \
		--command "bash scripts/gpu/graphs.sh $*"
	;;
slim)
	# copies without module images and snapshots, for analysis work on a machine without a GPU
	for k in $KINDS; do
		[ -f "$RUNS/$k.kjdb" ] || continue
		cp "$RUNS/$k.kjdb" "$OUT/$k.kjdb"
		python3 -c "import sqlite3,sys; db=sqlite3.connect(sys.argv[1]); db.execute('UPDATE module SET data=NULL'); db.execute('DELETE FROM snapshot'); db.commit(); db.execute('VACUUM')" "$OUT/$k.kjdb"
		cat "$RUNS/$k.log" "$RUNS/$k.replay.log" "$RUNS/$k.compare.txt" 2>/dev/null >> "$OUT/logs.txt"
	done
	ls -la "$OUT"
	;;
esac
done
