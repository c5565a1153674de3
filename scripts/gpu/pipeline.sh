#!/usr/bin/env bash
# On the GPU machine: the whole kjoule pipeline on BLOOM-560M, all with defaults: trace with
# power (the middle forward kept whole), idle power, replay (per kernel warm/cold, then the kept
# forward as a sequence, eager + graph, with in-sequence kernel times; timed), the same with
# energy (timed: seconds per unique kernel), compare. The run database (shrunk under 16 MiB if needed) is the example shipped in
# examples/runs/. KJ_PIPE_GRAPH=1 adds the CUDA-graph (torch.compile) variant.
# usage (device): source scripts/device-env.sh; bash scripts/gpu/pipeline.sh
set -u
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT"
rm -f "$OUT/timings.txt"
L=/tmp/kjlogs; mkdir -p "$L" # logs stay there; $OUT gets the results (8 files come back at most)
kj=$KJ_BUILD/kjoule
export KJ_REPLAY_WORKER=$KJ_BUILD/kjoule-replay-worker
db=$OUT/bloom560m.kjdb
nvidia-smi --query-gpu=name,driver_version,power.draw,clocks.sm --format=csv,noheader
now() { date +%s%N; }
t() { local t0; t0=$(now); "$@"; local rc=$?; local t1; t1=$(now)
	echo "   [$(( (t1 - t0) / 1000000 )) ms, exit $rc] $*" | tee -a "$OUT/timings.txt" >&2; return $rc; }
echo "== trace (eager)"
t timeout 120 "$kj" run --force -o "$db" -- \
	python3 examples/bloom560m.py --iters 50 --warmup 5 > "$L/run.log" 2>&1; tail -2 "$L/run.log"
echo "== idle power"
t timeout 30 "$kj" power --idle --db "$db" 2>&1 | tail -3
echo "== replay per kernel, warm and cold, then the kept forward (timing only)"
t timeout 120 "$kj" replay "$db" --cache both > "$OUT/replay_timing.txt" 2>&1
grep -v Assertion "$OUT/replay_timing.txt" | grep -E "traced GPU busy|medians|graph vs|not replayed|failed" | head -12
echo "== replay per kernel with energy, then the kept forward with energy (stored; compare shows it)"
s0=$(now)
t timeout 400 "$kj" replay "$db" --cache both --energy --json > "$OUT/replay.json" 2>"$L/replay.err"
s1=$(now)
tail -3 "$L/replay.err"
python3 scripts/gpu/replay_summary.py "$OUT/replay.json" --energy-wall-s "$(( (s1 - s0) / 1000000 ))e-3"
echo "== compare"
"$kj" compare "$db" 2>&1 | head -70
"$kj" compare "$db" --json > "$OUT/compare.json" 2>/dev/null
if [ "$(stat -c %s "$db")" -gt 16000000 ]; then
	python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("UPDATE module SET data=NULL"); c.commit(); c.execute("VACUUM")' "$db"
	echo "shipped copy: module images left out ($(stat -c %s "$db") bytes)"
fi
if [ "${KJ_PIPE_GRAPH:-0}" = 1 ]; then
	echo "== CUDA-graph variant (torch.compile reduce-overhead)"
	g=/tmp/bloom560m_graph.kjdb
	t timeout 150 "$kj" run --force -o "$g" -- python3 examples/bloom560m.py --iters 50 --warmup 10 --cuda-graph \
		> "$L/run_graph.log" 2>&1; tail -2 "$L/run_graph.log"
	t timeout 120 "$kj" replay "$g" --cache both 2>&1 | tail -4
	"$kj" compare "$g" --json > "$L/compare_graph.json" 2>/dev/null
fi
