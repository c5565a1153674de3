#!/usr/bin/env bash
# On the GPU machine: the worker files split along their seams (replay worker's sequence replay,
# the pipeline worker's attention) still build and behave: their GPU tests, the shipped run's
# sequence replay (eager, graph, topology, per kernel) and pipelines whose attention takes each of
# the plain, split-key and fused paths. Logs under $OUT; a short table last.
# usage (device): source scripts/device-env.sh; bash scripts/gpu/arch.sh
set -u
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT"
kj=$KJ_BUILD/kjoule
declare -a rows
step() { # step NAME SECONDS CMD...: run CMD with a timeout, its output in $OUT/NAME.log
	local name=$1 t=$2; shift 2
	local t0=$SECONDS rc=0
	timeout "$t" "$@" >"$OUT/$name.log" 2>&1 || rc=$?
	rows+=("$(printf '%-14s %4s %5ss  %s' "$name" "$rc" "$((SECONDS - t0))" "$(tail -1 "$OUT/$name.log" | cut -c1-70)")")
}
step gpu_tests 240 bash -c "cd '$KJ_BUILD' && ctest -L gpu -R 'replay|pipeline|graph|seq' --output-on-failure"
cp examples/runs/bloom560m.kjdb "$OUT/seq.kjdb"
step seq_replay 150 env KJ_REPLAY_WORKER="$KJ_BUILD/kjoule-replay-worker" "$kj" replay "$OUT/seq.kjdb" --sequence \
	--graph --energy --energy-seconds 3 --runs 50
step seq_rows 30 python3 -c 'import sqlite3,sys
for r in sqlite3.connect(sys.argv[1]).execute("SELECT mode, runs, launches, median_ns, energy_mj FROM replay_sequence ORDER BY id"): print(*r)' "$OUT/seq.kjdb"
step seq_compare 30 "$kj" compare "$OUT/seq.kjdb"
rm -f "$OUT/seq.kjdb"
# attention: ViT-B/16 (fused, self-attention), OPT-66B decode (split keys), prefill (fused, causal)
for p in vit_b_16 opt66b_decode opt66b_prefill; do
	step "pl_$p" 100 env KJ_PIPELINE_WORKER="$KJ_BUILD/kjoule-pipeline-worker" "$kj" pipeline \
		"configs/pipelines/$p.yml" --out "$OUT/pl" --no-energy --iters 200 --unroll 20 --idle-w 100 \
		--peak-tflops 1 --peak-gbs 1
done
rm -rf "$OUT/pl"
printf '%-14s %4s %6s  %s\n' step rc time "last line"
printf '%s\n' "${rows[@]}"
