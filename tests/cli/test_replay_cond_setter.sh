#!/usr/bin/env bash
# A kernel that sets a CUDA graph conditional node's condition runs only inside its graph: replay
# does not launch it alone, says why, and compare keeps it at its in-situ time. A copy of the
# shipped BLOOM run (whose modules are kept) is made to say that one unique kernel ran in a graph's
# exec (one of its kernel rows) and that the program made a conditional handle for that graph whose
# value the kernel holds in an 8-byte parameter; a stand-in worker
# (tests/tools/replay_kernel_standin.py) replays the rest. The rule itself:
# tests/unit/test_cond_setter.c.
# usage: test_replay_cond_setter.sh KJOULE SRC_DIR BUILD_DIR
set -u
kj=$1 src=$2
. "$(dirname "$0")/lib.sh"

cp "$src/examples/runs/bloom560m.kjdb" "$dir/g.kjdb"
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("DELETE FROM replay_kernel"); c.commit()' "$dir/g.kjdb"  # its earlier replays
pick=$(python3 - "$dir/g.kjdb" <<'P'
import sqlite3, struct, sys
db = sqlite3.connect(sys.argv[1])
db.execute("CREATE TABLE IF NOT EXISTS graph_conditional_handle(pid INTEGER, handle INTEGER, graph_id INTEGER, default_value INTEGER)")
# the shipped run predates host calls: their table as kjoule makes it
db.execute("CREATE TABLE IF NOT EXISTS host_call(id INTEGER PRIMARY KEY, pid INTEGER, tid INTEGER, op TEXT,"
           " correlation_id INTEGER, start_ns INTEGER, end_ns INTEGER, status INTEGER, graph_id INTEGER, graph_exec_id INTEGER)")
# the unique kernel with the most launches that has a nonzero 8-byte parameter in the launch
# replay reads for it: one of its kernels is made to have run in exec 777 of graph 555
for uid, layout, params in db.execute(
        "SELECT u.id, p.layout, p.params FROM unique_kernel u JOIN launch_params p ON p.unique_id = u.id"
        " WHERE p.id = (SELECT min(id) FROM launch_params WHERE unique_id = u.id) ORDER BY u.launches DESC, u.id"):
    for i, part in enumerate((layout or "").split(",")):
        if not part:
            continue
        off, size = (int(x) for x in part.split(":"))
        if size == 8 and off + 8 <= len(params):
            v = struct.unpack_from("<q", params, off)[0]
            if v:
                pid = db.execute("SELECT pid FROM kernel WHERE unique_id = ? LIMIT 1", (uid,)).fetchone()[0]
                db.execute("UPDATE kernel SET graph_id = 777 WHERE id = (SELECT min(id) FROM kernel WHERE unique_id = ?)", (uid,))
                db.execute("INSERT INTO host_call(pid, tid, op, correlation_id, start_ns, end_ns, status, graph_id,"
                           " graph_exec_id) VALUES(?, 1, 'graph_instantiate', 0, 0, 0, 0, 555, 777)", (pid,))
                db.execute("INSERT INTO graph_conditional_handle VALUES(?, ?, 555, 1)", (pid, v))
                db.commit()
                print(uid, i)
                sys.exit(0)
sys.exit(1)
P
) || { echo "FAIL no kernel with an 8-byte parameter in the shipped run"; exit 1; }
set -- $pick
uid=$1 param=$2
KJ_REPLAY_WORKER="$src/tests/tools/replay_kernel_standin.py" "$kj" replay "$dir/g.kjdb" --cache warm --no-sequence \
	> "$dir/r.txt" 2> "$dir/r.err"; rc=$?
check "replay finishes" '[ $rc -eq 0 ]'
check "the kernel holding the handle is not launched alone, and replay names the parameter" \
	'[ "$(q "$dir/g.kjdb" "SELECT status || \":\" || (error LIKE \"%sets the condition of a CUDA graph conditional node (parameter $param is the node%\") FROM replay_kernel WHERE unique_id = $uid")" = "skipped:1" ]'
check "its row carries the reason code compare reads (replay_kernel.reason)" \
	'[ "$(q "$dir/g.kjdb" "SELECT group_concat(DISTINCT reason) FROM replay_kernel WHERE unique_id = $uid")" = cond_setter ] &&
	 [ "$(q "$dir/g.kjdb" "SELECT count(*) FROM replay_kernel WHERE unique_id != $uid AND reason IS NOT NULL")" = 0 ]'
check "every other kernel is replayed as before (the stand-in's figures)" \
	'[ "$(q "$dir/g.kjdb" "SELECT count(*) FROM replay_kernel WHERE unique_id != $uid AND status != \"ok\"")" = 0 ] &&
	 [ "$(q "$dir/g.kjdb" "SELECT count(*) FROM replay_kernel WHERE unique_id != $uid AND median_ns = 1000 + unique_id")" -gt 0 ]'
"$kj" compare "$dir/g.kjdb" --json > "$dir/c.json" 2>/dev/null
name=$(q "$dir/g.kjdb" "SELECT n.demangled FROM unique_kernel u JOIN kernel_name n ON n.id = u.name_id WHERE u.id = $uid")
check "compare keeps it at its in-situ time, named as not replayable alone" \
	'python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(not any(w[\"name\"][:40] == sys.argv[2][:40] and \"conditional\" in w.get(\"why\", w.get(\"reason\", \"\")) for w in d[\"not_replayable_alone\"]))
" "$dir/c.json" "$name"'
[ $fail -eq 0 ] || { sqlite3 "$dir/g.kjdb" "SELECT unique_id, cache, status, substr(error,1,90), median_ns FROM replay_kernel WHERE unique_id = $uid OR status != 'ok' LIMIT 8"; tail -5 "$dir/r.txt"; python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['not_replayable_alone'])" "$dir/c.json"; }
exit $fail
