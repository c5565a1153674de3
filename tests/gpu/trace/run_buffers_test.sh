#!/usr/bin/env bash
# usage: run_buffers_test.sh KJOULE API_COST — exit 77 where no GPU is present.
# A program launching ~100,000 kernels fills several of CUPTI's 8 MiB activity buffers and many
# of the spool's buffers, with CUPTI's records and the launch records written from two threads at
# once: every launch must come back as one well-formed kernel row, and no record may be lost.
set -eu
kj=$1 prog=$2
if ! nvidia-smi -L >/dev/null 2>&1; then echo "no GPU: skipped"; exit 77; fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
calls=200000 # api_cost launches 1000 + 2 * calls/4 + 256 kernels
for mode in defaults no-params; do
	opt=; [ "$mode" = no-params ] && opt=--no-params
	KJOULE_FLUSH_MS=50 "$kj" run $opt -o "$dir/$mode.kjdb" -- "$prog" $calls >"$dir/$mode.out"
	python3 - "$dir/$mode.kjdb" "$mode" $((1000 + 2 * (calls / 4) + 256)) <<'PY'
import sqlite3, sys
db, mode, want = sqlite3.connect(sys.argv[1]), sys.argv[2], int(sys.argv[3])
q = lambda s: db.execute(s).fetchone()[0]
bad = []
def check(what, cond):
    print(("ok   " if cond else "FAIL ") + f"{mode}: {what}")
    if not cond: bad.append(what)
n = q("SELECT count(*) FROM kernel")
check(f"every launch one kernel row ({n} of {want})", n == want)
check("no record dropped", q("SELECT count(*) FROM problem WHERE what LIKE '%dropped%'") == 0)
check("every row named, timed and sized",
      q("SELECT count(*) FROM kernel k LEFT JOIN kernel_name n ON n.id = k.name_id"
        " WHERE n.mangled IS NULL OR k.end_ns < k.start_ns OR k.start_ns <= 0 OR k.block_x <> 32"
        " OR k.grid_x <> 1 OR k.correlation_id <= 0") == 0)
check("correlation ids distinct", q("SELECT count(DISTINCT correlation_id) FROM kernel") == n)
check("every kernel joined to its launch (thread and launch time)",
      q("SELECT count(*) FROM kernel WHERE launch_tid IS NULL OR launch_ns IS NULL OR launch_ns <= 0") == 0)
check("the 256 distinct kernels all seen", q("SELECT count(DISTINCT name_id) FROM kernel") == 257)
sys.exit(1 if bad else 0)
PY
done
echo "gpu_buffers: ok"
