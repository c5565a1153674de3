#!/usr/bin/env bash
# On the GPU machine: the whole kjoule pipeline on BLOOM-560M (eager, then as CUDA graphs):
# trace with power, idle power, per-kernel replay (warm/cold, energy), sequence replay, compare.
# The eager run database is the example shipped in examples/runs/.
# usage (device): source scripts/device-env.sh; bash scripts/gpu/pipeline.sh
set -u
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT"
kj=$KJ_BUILD/kjoule
export KJ_REPLAY_WORKER=$KJ_BUILD/kjoule-replay-worker
db=$OUT/bloom560m.kjdb
nvidia-smi --query-gpu=name,driver_version,power.draw,clocks.sm --format=csv,noheader
t() { local t0=$(date +%s.%N); "$@"; local rc=$?; echo "   [$(printf '%.1f' "$(echo "$(date +%s.%N) - $t0" | bc)") s, exit $rc] $*" >&2; return $rc; }
echo "== trace (eager)"
t timeout 120 "$kj" run --force --params-iteration 10 -o "$db" -- \
	python3 examples/bloom560m.py --iters 50 --warmup 5 > "$OUT/run.log" 2>&1; tail -2 "$OUT/run.log"
echo "== idle power"
t timeout 30 "$kj" power --idle --db "$db" 2>&1 | tail -3
echo "== replay per kernel, warm and cold, with energy"
t timeout 300 "$kj" replay "$db" --cache both --energy --energy-seconds 2 > "$OUT/replay.txt" 2>"$OUT/replay.err"
head -25 "$OUT/replay.txt"; tail -5 "$OUT/replay.txt"; tail -3 "$OUT/replay.err"
echo "== replay the 10th forward as a sequence, eager and as one graph"
t timeout 90 "$kj" replay "$db" --sequence --graph --energy --energy-seconds 3 --runs 50 > "$OUT/sequence.txt" 2>&1
tail -12 "$OUT/sequence.txt"
echo "== compare"
"$kj" compare "$db" > "$OUT/compare.txt" 2>&1; cat "$OUT/compare.txt" | head -80
"$kj" compare "$db" --json > "$OUT/compare.json" 2>/dev/null
echo "== CUDA-graph variant (torch.compile reduce-overhead)"
g=/tmp/bloom560m_graph.kjdb
t timeout 150 "$kj" run --force -o "$g" -- python3 examples/bloom560m.py --iters 50 --warmup 10 --cuda-graph \
	> "$OUT/run_graph.log" 2>&1; tail -2 "$OUT/run_graph.log"
t timeout 60 "$kj" power --idle --db "$g" >/dev/null 2>&1
t timeout 120 "$kj" replay "$g" --cache both > "$OUT/replay_graph.txt" 2>&1; tail -4 "$OUT/replay_graph.txt"
"$kj" compare "$g" > "$OUT/compare_graph.txt" 2>&1; head -50 "$OUT/compare_graph.txt"
"$kj" compare "$g" --json > "$OUT/compare_graph.json" 2>/dev/null
ls -la "$OUT"
