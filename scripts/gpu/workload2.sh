#!/usr/bin/env bash
# On the GPU machine: replay coverage and fidelity on a second workload (examples/convattn.py:
# cuDNN convolutions, batch norm, pooling, SDPA attention): trace, per-kernel replay warm/cold,
# sequence replay eager and as a graph, compare. Logs and the run under $OUT.
# usage (device): source scripts/device-env.sh; bash scripts/gpu/workload2.sh
set -u
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT"
kj=$KJ_BUILD/kjoule
export KJ_REPLAY_WORKER=$KJ_BUILD/kjoule-replay-worker
db=/tmp/convattn.kjdb
s=$(date +%s)
echo "== trace convattn"
timeout 150 "$kj" run --force --params-iteration 10 -o "$db" -- python3 examples/convattn.py --iters 30 --warmup 5 \
	> "/tmp/convattn_run.log" 2>&1; echo "exit $?"; tail -2 "/tmp/convattn_run.log"
"$kj" kernels "$db" --top 12 2>&1 | head -16
echo "== replay per kernel (warm, cold) [$(( $(date +%s) - s )) s]"
timeout 200 "$kj" replay "$db" --cache both --json > "$OUT/convattn_replay.json" 2>"/tmp/convattn_replay.err"; echo "exit $?"
tail -3 "/tmp/convattn_replay.err"
python3 scripts/gpu/replay_summary.py "$OUT/convattn_replay.json"
echo "== sequence replay [$(( $(date +%s) - s )) s]"
timeout 120 "$kj" replay "$db" --sequence --graph --runs 50 > "$OUT/convattn_sequence.txt" 2>&1; echo "exit $?"
tail -8 "$OUT/convattn_sequence.txt"
echo "== compare [$(( $(date +%s) - s )) s]"
"$kj" compare "$db" --json > "$OUT/convattn_compare.json" 2>"/tmp/convattn_compare.err"
"$kj" compare "$db" 2>&1 | head -40
echo "== done [$(( $(date +%s) - s )) s]"
