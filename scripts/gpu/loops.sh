#!/usr/bin/env bash
# On the GPU machine: programs whose iteration is a loop on the device, traced as a user would —
# the hand-written conditional/host-node graph test (gpu_graph_cond, its run kept), and a jitted
# JAX model whose layers run in lax.scan, then in lax.while_loop (examples/jax_scan.py): run,
# info, replay with defaults (bounded by LOOPS_BUDGET seconds), compare.
# and torch.cond captured in torch.cuda.graph (examples/torch_cond_graph.py).
# XLA keeps loops on the host by default; with WHILE and CONDITIONAL in its command buffers
# (LOOPS_XLA_CMDBUF=1: --xla_gpu_enable_command_buffer=...,WHILE,CONDITIONAL) it makes them CUDA
# graph conditional nodes.
# usage (device): source scripts/device-env.sh; bash scripts/gpu/loops.sh [cond] [scan] [while] [torchcond]
# Results: $OUT/loops/ (logs, compare JSON), $OUT/loops.json (one row per program).
set -u
OUT=${OUT:-/tmp/kjout}
W=/tmp/kjloops; rm -rf "$W"; mkdir -p "$W" "$OUT/loops"
kj=$KJ_BUILD/kjoule
export KJ_REPLAY_WORKER=$KJ_BUILD/kjoule-replay-worker
budget=${LOOPS_BUDGET:-90}
if [ -n "${LOOPS_XLA_CMDBUF:-}" ]; then
	export XLA_FLAGS="${XLA_FLAGS:-} --xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,CUDNN,WHILE,CONDITIONAL"
fi
want=${*:-cond scan while}
for what in $want; do
	case $what in
	cond)
		mkdir -p "$W/cond"
		KJ_GPU_TEST_KEEP=$W/cond bash tests/gpu/graph/run_cond_test.sh "$kj" "$KJ_BUILD/tests/gpu/graph/cond_target" \
			> "$OUT/loops/cond_test.log" 2>&1
		echo "cond test rc=$?" >> "$OUT/loops/cond_test.log"
		[ -f "$W/cond/c.kjdb" ] && "$kj" info "$W/cond/c.kjdb" > "$OUT/loops/cond_info.txt" 2>&1
		[ -f "$W/cond/c.kjdb" ] && "$kj" compare "$W/cond/c.kjdb" --json > "$OUT/loops/cond_compare.json" 2>&1
		;;
	torchcond)
		timeout 200 "$kj" run --force -o "$W/torchcond.kjdb" --iteration-range step -- \
			python3 examples/torch_cond_graph.py > "$OUT/loops/torchcond_run.log" 2>&1
		echo "run rc=$?" >> "$OUT/loops/torchcond_run.log"
		"$kj" info "$W/torchcond.kjdb" > "$OUT/loops/torchcond_info.txt" 2>&1
		timeout $((budget + 60)) "$kj" replay "$W/torchcond.kjdb" --budget "$budget" > "$OUT/loops/torchcond_replay.log" 2>&1
		echo "replay rc=$?" >> "$OUT/loops/torchcond_replay.log"
		"$kj" compare "$W/torchcond.kjdb" > "$OUT/loops/torchcond_compare.txt" 2>&1
		"$kj" compare "$W/torchcond.kjdb" --json > "$OUT/loops/torchcond_compare.json" 2>&1
		python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); [print(*r) for r in c.execute("SELECT type, count(*) FROM graph_node GROUP BY type")]; print("handles", c.execute("SELECT count(*) FROM graph_conditional_handle").fetchone()[0]); print("uncorrelated", c.execute("SELECT count(*) FROM kernel WHERE correlation_id = 0").fetchone()[0]); [print(r[0]) for r in c.execute("SELECT what FROM problem")]' "$W/torchcond.kjdb" > "$OUT/loops/torchcond_nodes.txt" 2>&1
		;;
	scan|while)
		timeout 240 "$kj" run --force -o "$W/$what.kjdb" --iteration-range step -- \
			python3 examples/jax_scan.py --loop "$what" > "$OUT/loops/${what}_run.log" 2>&1
		echo "run rc=$?" >> "$OUT/loops/${what}_run.log"
		"$kj" info "$W/$what.kjdb" > "$OUT/loops/${what}_info.txt" 2>&1
		"$kj" compare "$W/$what.kjdb" > "$OUT/loops/${what}_compare0.txt" 2>&1
		timeout $((budget + 60)) "$kj" replay "$W/$what.kjdb" --energy --budget "$budget" > "$OUT/loops/${what}_replay.log" 2>&1
		echo "replay rc=$?" >> "$OUT/loops/${what}_replay.log"
		"$kj" compare "$W/$what.kjdb" > "$OUT/loops/${what}_compare.txt" 2>&1
		"$kj" compare "$W/$what.kjdb" --json > "$OUT/loops/${what}_compare.json" 2>&1
		python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); [print(*r) for r in c.execute("SELECT type, count(*) FROM graph_node GROUP BY type")]; print("handles", c.execute("SELECT count(*) FROM graph_conditional_handle").fetchone()[0]); print("uncorrelated", c.execute("SELECT count(*) FROM kernel WHERE correlation_id = 0").fetchone()[0]); [print(r[0]) for r in c.execute("SELECT what FROM problem")]' "$W/$what.kjdb" > "$OUT/loops/${what}_nodes.txt" 2>&1
		;;
	esac
done
(cd "$OUT" && tar czf loops_logs.tar.gz loops && rm -rf loops)
# the runs themselves, module images left out, to look at here
for f in "$W"/cond/c.kjdb "$W"/scan.kjdb "$W"/while.kjdb "$W"/torchcond.kjdb; do
	[ -f "$f" ] || continue
	n=$(basename "$(dirname "$f")")_$(basename "$f"); cp "$f" "$W/slim_$n"
	python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("UPDATE module SET data = NULL"); c.commit(); c.execute("VACUUM")' "$W/slim_$n" 2>/dev/null
done
(cd "$W" && tar czf "$OUT/loops_runs.tar.gz" slim_* 2>/dev/null)
ls -la "$OUT"
