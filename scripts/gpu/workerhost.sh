#!/usr/bin/env bash
# On the GPU machine: the real workers under the one worker host (kj_proc): the GPU tests of
# replay, sweep and pipeline (ctest -L gpu -R 'replay|sweep|pipeline', 7 minutes at most), then
# whether any kjoule worker process outlived them. Logs under $OUT; a short table last.
# usage (device): source scripts/device-env.sh; bash scripts/gpu/workerhost.sh
set -u
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT"
: "${KJ_BUILD:?source scripts/device-env.sh first}"

echo "== gpu tests of replay, sweep and pipeline"
start=$(date +%s)
(cd "$KJ_BUILD" && timeout -k 10 420 ctest -L gpu -R 'replay|sweep|pipeline' --output-on-failure \
	--timeout 300) > "$OUT/workerhost_ctest.log" 2>&1
ctest_rc=$?
echo "ctest exit $ctest_rc after $(($(date +%s) - start)) s" | tee -a "$OUT/workerhost_ctest.log"

echo "== worker processes left behind (none expected)"
timeout 10 ps -eo pid,ppid,pgid,etime,args 2>&1 | grep -F "$KJ_BUILD" |
	grep -E 'kjoule-(replay|sweep|nccl|pipeline)-worker|kjoule (replay|sweep|pipeline)' |
	grep -v grep > "$OUT/workerhost_leftover.txt"
left=$(grep -c . "$OUT/workerhost_leftover.txt")
cat "$OUT/workerhost_leftover.txt"

echo "== messages the host passed on (timeouts, deaths, restarts)"
timeout 10 grep -E "timed out|killed|worker exited|cannot run|starting another|restarting" \
	"$OUT/workerhost_ctest.log" | head -40 > "$OUT/workerhost_messages.txt"
cat "$OUT/workerhost_messages.txt"

echo
echo "== summary"
{
	printf '%-34s %s\n' test result
	grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+:' "$OUT/workerhost_ctest.log" |
		sed -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) [ .*]*([A-Za-z*]+.*) +[0-9.]+ sec$/\1 \2/' |
		awk '{ name = $1; $1 = ""; sub(/^ /, ""); printf "%-34s %s\n", name, $0 }'
	printf '%-34s %s\n' "tests run" "$(grep -cE '^ *[0-9]+/[0-9]+ Test +#' "$OUT/workerhost_ctest.log")"
	printf '%-34s %s\n' "ctest exit" "$ctest_rc"
	printf '%-34s %s\n' "worker processes left" "$left"
} | tee "$OUT/workerhost_summary.txt"
