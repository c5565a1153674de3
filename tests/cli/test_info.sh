#!/bin/bash
# kjoule info on databases built by tests/tools/kjgen.py: text and --json, how the run ended,
# counts, what was not captured, problems, bad files (exit 1), bad options (exit 2).
# usage: test_info.sh KJOULE_BIN SRC_DIR BUILD_DIR
set -u
KJ=$1 SRC=$2
. "$(dirname "$0")/lib.sh"
GEN="python3 $SRC/tests/tools/kjgen.py"

$GEN -o "$T/a.kjdb" --kernels 500 --unique 8 --memcpy 6 --memset 2 --nvtx 3 --devices 2 \
	--problem "warning:CUPTI: MULTIPLE_SUBSCRIBERS, kernels of pid 4242 not traced" || exit 1
expect 0 "$KJ" info "$T/a.kjdb"
has "python3 infer.py --seq-len 5"
has "2026-01-01T00:00:00Z"
has "exited, exit code 0"
lacks "ABNORMAL"
has "NVIDIA H200"
has "132 SMs"
has "power limit 700 W"
has "kernels  *500"
has "unique_kernels  *8"
has "memcpys  *6"
has "traced without --api"
has "no power samples"
has "no modules"
has "MULTIPLE_SUBSCRIBERS"
has "no L1/shared-memory split per kernel"
grep -qi "nan" "$T/out" && fail "NaN in info"

# a run whose kernels carry the L1/shared split they ran with: nothing to say of it
cat >"$T/split.json" <<'JSON'
{"kernels": [{"name": "k", "start": 1000, "end": 2000, "unique": "k", "shmem_executed": 233472},
             {"name": "k", "start": 3000, "end": 4000, "unique": "k", "shmem_executed": 233472}]}
JSON
$GEN -o "$T/split.kjdb" --spec "$T/split.json" || exit 1
expect 0 "$KJ" info "$T/split.kjdb"
lacks "L1/shared"

expect 0 "$KJ" info "$T/a.kjdb" --json
python3 - "$T/out" <<'PY' || fail "info --json content"
import json, sys
o = json.load(open(sys.argv[1]))
c = o["counts"]
assert c["kernels"] == 500 and c["unique_kernels"] == 8 and c["memcpys"] == 6 and c["memsets"] == 2, c
assert c["nvtx_ranges"] == 3 and c["api_calls"] == 0 and c["problems"] == 1, c
assert o["abnormal"] is False and o["end_status"] == "exited" and o["exit_code"] == 0
assert o["command"] == "python3 infer.py --seq-len 5", o["command"]
assert len(o["devices"]) == 2 and o["devices"][0]["sm_count"] == 132
assert len(o["processes"]) == 1 and o["processes"][0]["pid"] == 4242
assert any("--api" in s for s in o["not_captured"])
assert o["problems"][0]["severity"] == "warning"
assert o["duration_s"] > 0
PY

# Everything captured: no "traced without --api" and friends
$GEN -o "$T/full.kjdb" --kernels 50 --api 20 --power 5 --modules 2 --params || exit 1
expect 0 "$KJ" info "$T/full.kjdb"
lacks "traced without --api"
lacks "no power samples"
lacks "no modules"
has "modules  *2 (512 bytes)"

# Abnormal ends
for st in killed signaled none; do
	$GEN -o "$T/$st.kjdb" --kernels 10 --end-status "$st" --exit-code 137 || exit 1
	expect 0 "$KJ" info "$T/$st.kjdb"
	has "ABNORMAL END"
	expect 0 "$KJ" info "$T/$st.kjdb" --json
	python3 -c "import json; o=json.load(open('$T/out')); assert o['abnormal'] is True" ||
		fail "$st: abnormal not true"
done
$GEN -o "$T/odd.kjdb" --kernels 1 --end-status interrupted || exit 1
expect 0 "$KJ" info "$T/odd.kjdb"
has "ended:      interrupted"

# No kernels
$GEN -o "$T/empty.kjdb" --kernels 0 --memcpy 0 --memset 0 --nvtx 0 || exit 1
expect 0 "$KJ" info "$T/empty.kjdb"
has "no kernels"
expect 0 "$KJ" info "$T/empty.kjdb" --json
python3 -c "import json; o=json.load(open('$T/out')); assert o['counts']['kernels'] == 0" || fail "empty json"

# Bad files and options
: >"$T/zero.kjdb"
head -c 2000 "$T/a.kjdb" >"$T/trunc.kjdb"
python3 -c "import sqlite3; sqlite3.connect('$T/foreign.kjdb').execute('CREATE TABLE t(x)')"
$GEN -o "$T/newer.kjdb" --schema-version 99 --kernels 5 || exit 1
for f in missing.kjdb zero.kjdb trunc.kjdb foreign.kjdb newer.kjdb; do
	expect 1 "$KJ" info "$T/$f"
	grep -q "$f" "$T/err" || fail "$f: error does not name the file: $(cat "$T/err")"
done
expect 2 "$KJ" info "$T/a.kjdb" --bogus
grep -q "usage: kjoule info" "$T/err" || fail "no usage"
expect 2 "$KJ" info
expect 2 "$KJ" info "$T/a.kjdb" "$T/a.kjdb"
expect 0 "$KJ" info --help

# recorded parameter blocks against the captured cubins' functions of the traced registers: the
# shipped eager run is consistent; a copy with one consistent kernel's block cut short names it
expect 0 "$KJ" info "$SRC/examples/runs/bloom560m.kjdb"
grep -Eq "parameters +[1-9][0-9]* consistent with the captured cubins, 0 recorded with another function's" "$T/out" ||
	fail "shipped run's parameters: $(grep parameters "$T/out")"
lacks "recorded with another function's parameters ("
cut=""
for uid in $(sqlite3 "$SRC/examples/runs/bloom560m.kjdb" "SELECT DISTINCT unique_id FROM launch_params WHERE length(params) > 8 ORDER BY unique_id LIMIT 12"); do
	cp "$SRC/examples/runs/bloom560m.kjdb" "$T/cut.kjdb"
	sqlite3 "$T/cut.kjdb" "UPDATE launch_params SET params = substr(params, 1, length(params) - 8) WHERE unique_id = $uid"
	"$KJ" info "$T/cut.kjdb" --json >"$T/cut.json" 2>/dev/null
	python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["parameters_checked"]["mismatched"] != 1)' "$T/cut.json" &&
		{ cut=$uid; break; }
done
[ -n "$cut" ] || fail "no kernel of the shipped run turned mismatched when its block was cut"
python3 - "$T/cut.json" <<'P' || fail "cut run's json"
import json, sys
j = json.load(open(sys.argv[1]))
pc = j["parameters_checked"]
assert pc["mismatched"] == 1 and pc["consistent"] >= 1, pc
assert any("recorded with another function's parameters" in m for m in j["not_captured"]), j["not_captured"]
P

# graph node kinds: the shipped graph run's, as its own table counts them; a graph with a host node
# says its launches replay as a chain
cp "$SRC/tests/data/gpt_graph_short.kjdb" "$T/g.kjdb"
"$KJ" info "$T/g.kjdb" --json > "$T/g.json" 2>/dev/null || fail "info --json on the shipped graph run"
python3 - "$T/g.kjdb" "$T/g.json" <<'P' || fail "graph_node_kinds differs from the run's own graph_node counts"
import json, sqlite3, sys
want = dict(sqlite3.connect(sys.argv[1]).execute("SELECT type, count(*) FROM graph_node GROUP BY type").fetchall())
got = json.load(open(sys.argv[2]))["graph_node_kinds"]
sys.exit(not (want and got == want))
P
python3 "$SRC/tests/tools/mkspool.py" "$T/hn" --graph --functions 4 --iters 3 --full-graph --host-node >/dev/null
"$KJ" ingest "$T/hn" -o "$T/hn.kjdb" >/dev/null 2>&1 || fail "ingest of the host-node graph"
expect 0 "$KJ" info "$T/hn.kjdb"
has "graph_node_kinds"
has "host 1"
has "the launches are replayed as a chain"
# which module each captured launch's function came from: counted where the tracer knew, named as
# not captured in runs traced before it did
python3 "$SRC/tests/tools/mkspool.py" "$T/mod" --launches 300 --functions 10 --per-iter 100 --modules >/dev/null
"$KJ" ingest "$T/mod" -o "$T/mod.kjdb" >/dev/null 2>&1 || fail "ingest of the modules spool"
n=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM launch_params").fetchone()[0])' "$T/mod.kjdb")
expect 0 "$KJ" info "$T/mod.kjdb"
has "launch_modules   $n of $n captured CUfunction launches name the module they came from (0 through CUkernel handles"
expect 0 "$KJ" info "$SRC/examples/runs/bloom560m.kjdb"
has "which module each launch's function came from (launch_params has no module_id column)"

# two ranks, rank 1 dead (tests/tools/mkreportsec.py's odd job): which one, and how it ended
$GEN -o "$T/job.kjdb" --kernels 0 >/dev/null || exit 1
python3 "$SRC/tests/tools/mkreportsec.py" job "$T/job.kjdb" odd || exit 1
expect 0 "$KJ" info "$T/job.kjdb"
has "ranks:      2 processes with GPU work"
has "rank 1 (GPU 1, pid 102) died: ended by SIGTERM from pid 100 (torchrun)"
lacks "rank 0 (GPU 0"
expect 0 "$KJ" info "$T/job.kjdb" --json
python3 - "$T/out" <<'PY' || fail "info --json: the dead rank"
import json, sys
r = json.load(open(sys.argv[1]))["ranks"]
assert r["ranks_died"] == 1 and r["died"] == [{"rank": 1, "pid": 102, "device_id": 1,
    "why": "ended by SIGTERM from pid 100 (torchrun)"}], r
PY
finish
