# bench/event_cost/program_events.py on a stand-in run database whose steps are known: 6 instances of
# the range "step" (the first 2 left out as warm-up, where the counts differ), each with 2 NVTX ranges
# inside it, 3 eager kernels, one graph launch running 4 kernels, one device-to-host read, one host
# copy and one memset; a graph's own memset node and the work of a nested "step" are not the host's.
# The medians come out as planted; a range with too few instances, or a file that is no run, is
# refused naming it, nothing written.
set -u
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
P="$SRC/bench/event_cost/program_events.py"
python3 - "$T/run.kjdb" <<'PY' || fail "cannot write the stand-in"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.executescript("""
CREATE TABLE nvtx_range(id INTEGER PRIMARY KEY, pid INTEGER, tid INTEGER, domain TEXT, name TEXT, start_ns INTEGER,
  end_ns INTEGER, depth INTEGER, parent_id INTEGER, kind TEXT);
CREATE TABLE kernel(id INTEGER PRIMARY KEY, pid INTEGER, correlation_id INTEGER, graph_id INTEGER, launch_ns INTEGER);
CREATE TABLE host_call(id INTEGER PRIMARY KEY, pid INTEGER, op TEXT, correlation_id INTEGER, start_ns INTEGER);
CREATE TABLE memcpy(id INTEGER PRIMARY KEY, pid INTEGER, kind TEXT, graph_node_id INTEGER, launch_ns INTEGER);
CREATE TABLE memset(id INTEGER PRIMARY KEY, pid INTEGER, graph_node_id INTEGER, launch_ns INTEGER);
""")
corr = 0
for i in range(6):
    t0 = 1000 * i
    warm = i < 2  # warm-up: other counts
    c.execute("INSERT INTO nvtx_range(pid, name, start_ns, end_ns, depth) VALUES(7, 'step', ?, ?, 0)", (t0, t0 + 900))
    c.execute("INSERT INTO nvtx_range(pid, name, start_ns, end_ns, depth) VALUES(7, 'step', ?, ?, 1)", (t0 + 10, t0 + 20))
    c.execute("INSERT INTO nvtx_range(pid, name, start_ns, end_ns, depth) VALUES(7, 'attn', ?, ?, 1)", (t0 + 30, t0 + 40))
    for k in range(9 if warm else 3):
        corr += 1
        c.execute("INSERT INTO kernel(pid, correlation_id, graph_id, launch_ns) VALUES(7, ?, NULL, ?)", (corr, t0 + 50 + k))
    corr += 1
    c.execute("INSERT INTO host_call(pid, op, correlation_id, start_ns) VALUES(7, 'graph_launch', ?, ?)", (corr, t0 + 100))
    for k in range(4):
        c.execute("INSERT INTO kernel(pid, correlation_id, graph_id, launch_ns) VALUES(7, ?, 5, ?)", (corr, t0 + 100))
    c.execute("INSERT INTO memcpy(pid, kind, graph_node_id, launch_ns) VALUES(7, 'DtoH', NULL, ?)", (t0 + 200,))
    c.execute("INSERT INTO memcpy(pid, kind, graph_node_id, launch_ns) VALUES(7, 'HtoD', 0, ?)", (t0 + 210,))
    c.execute("INSERT INTO memset(pid, graph_node_id, launch_ns) VALUES(7, NULL, ?)", (t0 + 220,))
    c.execute("INSERT INTO memset(pid, graph_node_id, launch_ns) VALUES(7, 42, ?)", (t0 + 100,))
    # another process's work at the same times is not this step's
    c.execute("INSERT INTO kernel(pid, correlation_id, graph_id, launch_ns) VALUES(8, 1, NULL, ?)", (t0 + 60,))
c.commit()
PY
expect 0 python3 "$P" "$T/run.kjdb" --range step --name prog -o "$T/ev.json"
has "^prog: "
python3 - "$T/ev.json" <<'PY' || fail "counts not as planted: $(cat "$T/ev.json")"
import json, sys
r = json.load(open(sys.argv[1]))
e = r["events_per_step"]
assert (e["kernel"], e["graph"], e["graph_kernels"], e["nvtx"], e["host"], e["other_copies"]) == (3, 1, 4, 3, 1, 2), e
assert r["instances"] == 4 and r["skipped"] == 2 and r["spread"]["kernel"] == [3, 3], r
PY
expect 1 python3 "$P" "$T/run.kjdb" --range attn --name prog -o "$T/bad.json"
grep -q "run.kjdb: the range 'attn' has 0 instances" "$T/err" || fail "too few instances not refused: $(cat "$T/err")"
echo "not a database" >"$T/junk.kjdb"
expect 1 python3 "$P" "$T/junk.kjdb" --range step --name prog -o "$T/bad.json"
grep -q "junk.kjdb: not a kjoule run database" "$T/err" || fail "junk not refused: $(cat "$T/err")"
[ ! -e "$T/bad.json" ] || fail "a refused run wrote its output"
finish
