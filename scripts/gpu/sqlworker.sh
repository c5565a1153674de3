#!/usr/bin/env bash
# On the GPU machine: the replay worker after its queries moved into src/store (kj_store_w_launch,
# kj_store_w_seq): the GPU tests of replay (single kernels, --verify on snapshots, same-name
# modules, --sequence and graph replays) and of the pipeline and graph folders, each with a
# timeout, each log under $OUT; a table of pass/fail per group last.
# usage (device): source scripts/device-env.sh; bash scripts/gpu/sqlworker.sh
set -u
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT"
table=""
for group in replay graph pipeline capture; do
	log="$OUT/gpu_$group.log"
	(cd "$KJ_BUILD" && timeout 150 ctest -L gpu -R "$group" --output-on-failure > "$log" 2>&1)
	rc=$?
	summary=$(grep -E "tests passed|No tests were found" "$log" | tail -1)
	table+=$(printf '%-10s rc=%-3s %s' "$group" "$rc" "${summary:-(no summary: see $log)}")$'\n'
done
echo "== replay worker after the store move (logs in \$OUT/gpu_*.log)"
printf '%s' "$table"
