#!/usr/bin/env bash
# `kjoule replay` stores each batch of kernel results as it comes: a replay killed midway (a
# timeout, a lost session) keeps what it measured. A stand-in worker
# (tests/tools/replay_kernel_standin.py) hangs after 70 kernels; kjoule is killed with SIGKILL.
# usage: test_replay_store.sh KJOULE SRC_DIR BUILD_DIR
set -u
kj=$1 src=$2
. "$(dirname "$0")/lib.sh"

cp "$src/examples/runs/bloom560m.kjdb" "$dir/a.kjdb"
KJ_REPLAY_WORKER="$src/tests/tools/replay_kernel_standin.py" STANDIN_COUNT="$dir/n" STANDIN_HANG_AFTER=70 \
	timeout -s KILL 20 "$kj" replay "$dir/a.kjdb" --cache warm --no-sequence > "$dir/o.txt" 2> "$dir/e.txt"; rc=$?
check "the replay was killed while a worker hung" '[ $rc -eq 137 ]'
check "the first batch of 64 kernels is stored with the stand-in's figures, none of the rest" \
	'[ "$(q "$dir/a.kjdb" "SELECT count(*) FROM replay_kernel WHERE cache = \"warm\" AND median_ns = 1000 + unique_id")" = 64 ]'
check "the database is whole" '[ "$(q "$dir/a.kjdb" "PRAGMA integrity_check")" = ok ]'
cp "$src/examples/runs/bloom560m.kjdb" "$dir/b.kjdb"
KJ_REPLAY_WORKER="$src/tests/tools/replay_kernel_standin.py" STANDIN_LOG="$dir/w.log" \
	"$kj" replay "$dir/b.kjdb" --cache warm --no-sequence > "$dir/o2.txt" 2> "$dir/e2.txt"; rc=$?
n=$(q "$dir/b.kjdb" "SELECT count(*) FROM replay_kernel WHERE cache = \"warm\" AND median_ns = 1000 + unique_id")
check "a whole replay stores every replayed kernel ($n), in workers of at most 64 kernels" \
	'[ $rc -eq 0 ] && [ "$n" -gt 64 ] && python3 -c "
import sys
counts = [l.split().count(\"--unique\") for l in open(sys.argv[1]) if \"--unique\" in l]
sys.exit(not (len(counts) >= 2 and max(counts) <= 64))" "$dir/w.log"'
# data fills: a kernel that faults on random data is retried on small integers (stored with a
# "data:" note saying so); one that faults on every fill is stored failed, saying it was tried on each
cp "$src/examples/runs/bloom560m.kjdb" "$dir/f.kjdb"
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("DELETE FROM replay_kernel"); c.commit()' "$dir/f.kjdb"
KJ_REPLAY_WORKER="$src/tests/tools/replay_kernel_standin.py" STANDIN_FAULT="3:random;5:random,smallint,zero" \
	"$kj" replay "$dir/f.kjdb" --cache warm --no-sequence > "$dir/o3.txt" 2> "$dir/e3.txt"; rc=$?
check "a replay with faulting kernels finishes" '[ $rc -eq 0 ]'
check "the one faulting on random data stands on small integers, and says so" \
	'[ "$(q "$dir/f.kjdb" "SELECT status || \",\" || median_ns || \",\" || (error LIKE \"data: smallint (random data failed: first launch%ILLEGAL_ADDRESS%\") FROM replay_kernel WHERE unique_id = 3")" = "ok,1003,1" ]'
check "the one faulting on every fill is failed, named as tried on each" \
	'[ "$(q "$dir/f.kjdb" "SELECT status || \",\" || (error LIKE \"on every data fill (random: first launch%[random]; zero: first launch%[zero])\") FROM replay_kernel WHERE unique_id = 5")" = "failed,1" ]'
exit $fail
