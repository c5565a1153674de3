#!/usr/bin/env bash
# usage: run_same_name_test.sh KJOULE SAME_NAME_TARGET SHORT.cubin LONG.cubin — exit 77 without a GPU.
# Two modules define kj_same_name with one signature and register count; the program launches
# both with one geometry. The trace must keep them apart (two unique kernels, each knowing its
# module), and replay must run each from its own module: the long one replays long, the short
# one short, each near its traced time.
set -u
kj=$1 target=$2 short=$3 long=$4
. "$(dirname "$0")/../lib.sh"
db=$dir/s.kjdb
"$kj" run -o "$db" -- "$target" "$short" "$long" > "$dir/run.log" 2>&1; rc=$?
check "the program runs traced" '[ $rc -eq 0 ] && grep -q "launches of each module" "$dir/run.log"'
check "two unique kernels of the one name, 40 launches each" \
	'[ "$(q $db "SELECT group_concat(u.launches) FROM unique_kernel u JOIN kernel_name n ON n.id = u.name_id WHERE n.mangled = \"kj_same_name\"")" = "40,40" ]'
check "each launch's parameters name its module, and the two modules differ" \
	'[ "$(q $db "SELECT count(DISTINCT l.hash) FROM launch_params p JOIN module_load l ON l.pid = p.pid AND l.cupti_module_id = p.module_id")" = 2 ]'
"$kj" replay "$db" --no-sequence --cache warm --runs 20 > "$dir/replay.txt" 2>&1; rc=$?
check "replay finishes" '[ $rc -eq 0 ]'
python3 - "$db" <<'PY' || fail=1
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute(
    "SELECT u.id, avg(k.end_ns - k.start_ns), r.median_ns, r.status FROM unique_kernel u"
    " JOIN kernel_name n ON n.id = u.name_id JOIN kernel k ON k.unique_id = u.id"
    " JOIN replay_kernel r ON r.unique_id = u.id AND r.cache = 'warm'"
    " WHERE n.mangled = 'kj_same_name' GROUP BY u.id ORDER BY 2").fetchall()
ok = len(rows) == 2 and all(r[3] in ("ok", "relocated") and r[2] for r in rows)
if ok:
    (_, ts, rs, _), (_, tl, rl, _) = rows
    # each near its traced time, and the long one long (8x the work): the right module each
    ok = abs(rs / ts - 1) < 0.25 and abs(rl / tl - 1) < 0.25 and rl > 4 * rs
print(("ok   " if ok else "FAIL ") + "each replayed from its own module near its traced time: %s" % rows)
sys.exit(not ok)
PY
[ $fail -eq 0 ] || { tail -20 "$dir/run.log"; tail -30 "$dir/replay.txt"; }
exit $fail
