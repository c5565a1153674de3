#!/usr/bin/env bash
# usage: run_trace_test.sh KJOULE TRACE_TARGET CHECKER — exit 77 where no GPU is present.
set -eu
kj=$1 target=$2 checker=$3
if ! nvidia-smi -L >/dev/null 2>&1; then echo "no GPU: skipped"; exit 77; fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
KJ_EXPECT=$dir/expected.json "$kj" run -o "$dir/run.kjdb" -- "$target"
python3 "$checker" "$dir/run.kjdb" "$dir/expected.json"
# by default the middle instance of the most repeated top-level range (iteration 2 of 3) is kept
python3 - "$dir/run.kjdb" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
kept = db.execute("SELECT value FROM meta WHERE key = 'params_iteration'").fetchone()
n = db.execute("SELECT count(*) FROM sequence_op WHERE iteration = 2 AND op = 'kernel'").fetchone()[0]
ok = kept is not None and kept[0] == "iteration#2" and n == 5
print(("ok   " if ok else "FAIL ") + f"defaults keep the middle iteration whole ({kept}, {n} kernels)")
sys.exit(0 if ok else 1)
PY
# --api: every runtime and driver call, with the main argument of copies and allocations;
# --params-iteration: the 2nd 'iteration' range's launches kept in order
KJ_EXPECT=$dir/expected2.json "$kj" run -o "$dir/api.kjdb" --api --params-iteration 2 \
	--iteration-range iteration -- "$target"
python3 - "$dir/api.kjdb" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
q = lambda s: db.execute(s).fetchone()[0]
bad = []
def check(what, cond):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond: bad.append(what)
check("runtime launches recorded", q("SELECT count(*) FROM api_call WHERE name LIKE 'cudaLaunchKernel%'") >= 12)
check("driver launches recorded", q("SELECT count(*) FROM api_call WHERE domain='driver' AND name LIKE 'cuLaunchKernel%'") >= 13)
check("cudaMemcpy carries its bytes", q("SELECT count(*) FROM api_call WHERE name LIKE 'cudaMemcpy_v%' AND bytes = 4194304") == 2)
check("cudaMallocAsync carries bytes and stream", q("SELECT count(*) FROM api_call WHERE name LIKE 'cudaMallocAsync%' AND bytes = 4194304 AND stream_id IS NOT NULL") == 1)
check("calls nest inside their process's span", q("SELECT count(*) FROM api_call WHERE end_ns < start_ns") == 0)
check("launch API joins its kernel", q("SELECT count(*) FROM api_call a JOIN kernel k ON k.correlation_id = a.correlation_id AND k.pid = a.pid WHERE a.domain='driver'") >= 13)
check("iteration 2 kept: 5 kernels in order", q("SELECT count(*) FROM sequence_op WHERE iteration = 2 AND op = 'kernel'") == 5)
check("iteration 2 parameters", q("SELECT count(*) FROM launch_params WHERE iteration = 2") == 5)
check("captured launches carry their kernel's stream",
      q("SELECT count(*) FROM launch_params p JOIN kernel k ON k.correlation_id = p.correlation_id"
        " AND k.pid = p.pid WHERE p.stream_id <> k.stream_id") == 0
      and q("SELECT count(DISTINCT stream_id) FROM sequence_op WHERE iteration = 2 AND op = 'kernel'") == 2)
check("iteration 2 orders its streams: event record on one, wait on the other",
      q("SELECT count(*) FROM sequence_op r JOIN sequence_op w ON w.event_id = r.event_id AND w.iteration = r.iteration"
        " WHERE r.iteration = 2 AND r.op = 'event_record' AND w.op = 'event_wait' AND r.stream_id <> w.stream_id"
        " AND r.ordinal < w.ordinal") == 1)
check("--api leaves the query functions out", q("SELECT count(*) FROM api_call WHERE name LIKE 'cudaGetDevice_v%' OR name LIKE 'cuCtxGetDevice%'") == 0)
sys.exit(1 if bad else 0)
PY
# --api=all: the query functions too
KJ_EXPECT=$dir/expected3.json "$kj" run -o "$dir/apiall.kjdb" --api=all -- "$target"
python3 - "$dir/apiall.kjdb" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
n = db.execute("SELECT count(*) FROM api_call WHERE name LIKE 'cudaGetDevice_v%' OR name LIKE 'cuCtxGetDevice%' OR name LIKE 'cudaGetLastError%'").fetchone()[0]
print(("ok   " if n > 0 else "FAIL ") + f"--api=all records query functions ({n})")
sys.exit(0 if n > 0 else 1)
PY
# exit code and crash handling: a program killed by a signal still leaves a valid database
rc=0; "$kj" run -o "$dir/killed.kjdb" -- bash -c 'kill -9 $$' || rc=$?
[ "$rc" -eq 137 ] || { echo "expected exit 137 for SIGKILL, got $rc"; exit 1; }
"$kj" info "$dir/killed.kjdb" | grep -qi 'signal' || { echo "info does not say the run was killed"; exit 1; }
rc=0; "$kj" run -o "$dir/nf.kjdb" -- /nonexistent/command 2>/dev/null || rc=$?
[ "$rc" -eq 127 ] || { echo "expected 127 for a missing command, got $rc"; exit 1; }
[ ! -e "$dir/nf.kjdb" ] || { echo "a database was left for a command that never ran"; exit 1; }
rc=0; "$kj" run -o "$dir/run.kjdb" -- true 2>/dev/null || rc=$?
[ "$rc" -ne 0 ] || { echo "existing output was overwritten without --force"; exit 1; }
ls -a "$dir" | grep -q '\.tmp$\|spool' && { echo "temporary files left behind"; ls -a "$dir"; exit 1; }
echo "gpu_trace: ok"
