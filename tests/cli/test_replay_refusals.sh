#!/usr/bin/env bash
# kjoule replay refuses clearly, before any GPU work, what a run cannot give: --verify without
# buffer snapshots, --sequence without a captured iteration, an unknown kernel pattern, a malformed
# KJOULE_REPLAY_PACE_RATIOS.
# Uses a copy of the shipped example run. usage: test_replay_refusals.sh KJOULE SRC_DIR BUILD_DIR
set -u
kj=$1 src=$2
run=$src/examples/runs/bloom560m.kjdb
[ -s "$run" ] || { echo "no shipped run: skipped"; exit 77; }
. "$(dirname "$0")/lib.sh"
cp "$run" "$dir/r.kjdb"

"$kj" replay "$dir/r.kjdb" --verify >"$dir/out" 2>"$dir/err"; rc=$?
check "--verify without snapshots refused (exit 1), naming --snapshot" \
	'[ $rc -eq 1 ] && grep -q "no after-launch buffer snapshots" "$dir/err" && grep -q "kjoule run --snapshot" "$dir/err"'

python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("DELETE FROM sequence_op"); c.commit()' "$dir/r.kjdb"
"$kj" replay "$dir/r.kjdb" --sequence >"$dir/out" 2>"$dir/err"; rc=$?
check "--sequence without a captured iteration refused, naming --params-iteration" \
	'[ $rc -ne 0 ] && grep -q "params-iteration" "$dir/err"'

cp "$run" "$dir/r2.kjdb"
"$kj" replay "$dir/r2.kjdb" --kernel 'no_such_kernel_anywhere' >"$dir/out" 2>"$dir/err"; rc=$?
check "a pattern matching nothing refused" '[ $rc -ne 0 ] && [ -s "$dir/err" ]'
cp "$run" "$dir/r3.kjdb"
KJOULE_REPLAY_PACE_RATIOS=1,x "$kj" replay "$dir/r3.kjdb" --energy >"$dir/out" 2>"$dir/err"; rc=$?
check "a malformed KJOULE_REPLAY_PACE_RATIOS refused (exit 2), naming the variable and the item" \
	'[ $rc -eq 2 ] && grep -q "KJOULE_REPLAY_PACE_RATIOS=1,x: .x. is not a number" "$dir/err"'
check "and the file untouched" 'cmp -s "$run" "$dir/r3.kjdb"'
# replay opens the run for writing, which brings it to the current schema first (docs/schema.md):
# the refusal leaves every row of every table it had as it was
rows() {
	python3 - "$1" "$run" <<-"EOF"
	import hashlib, sqlite3, sys
	now, was = sqlite3.connect(sys.argv[1]), sqlite3.connect(sys.argv[2])
	for (t,) in was.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"):
	    cols = ", ".join('"%s"' % r[1] for r in was.execute('PRAGMA table_info("%s")' % t))
	    keep = " WHERE key != 'schema_version'" if t == "meta" else ""  # the migration's own row
	    h = hashlib.sha1(repr(now.execute('SELECT %s FROM "%s"%s ORDER BY %s' % (cols, t, keep, cols)).fetchall()).encode())
	    print(t, h.hexdigest())
	EOF
}
check "refusals leave the run's rows as they were" '[ "$(rows "$dir/r2.kjdb")" = "$(rows "$run")" ]'
exit $fail
