#!/usr/bin/env bash
# replay --sequence --graph on graph-launched iterations, without a GPU: the graph topology read
# back from the run (synthetic spools, tests/tools/mkspool.py --graph --full-graph [--host-node];
# the shipped tests/data/gpt_graph_short.kjdb), the kinds that cannot be rebuilt named, the results
# of a stand-in worker (tests/tools/replay_worker_standin.py: times taken from the run itself)
# stored and shown by replay and compare, and the refusals.
# usage: test_replay_topology.sh KJOULE SRC_DIR BUILD_DIR
set -u
kj=$1 src=$2
. "$(dirname "$0")/lib.sh"

python3 "$src/tests/tools/mkspool.py" "$dir/g" --graph --functions 5 --iters 6 --full-graph
python3 "$src/tests/tools/mkspool.py" "$dir/h" --graph --functions 5 --iters 6 --full-graph --host-node
"$kj" ingest "$dir/g" -o "$dir/g.kjdb" 2>/dev/null && "$kj" ingest "$dir/h" -o "$dir/h.kjdb" 2>/dev/null; rc=$?
check "ingest succeeds" '[ $rc -eq 0 ]'
check "the clones of the graph's nodes are kept" \
	'[ "$(q "$dir/g.kjdb" "SELECT count(*) FROM graph_node_clone")" = "$(q "$dir/g.kjdb" "SELECT count(*) FROM graph_node WHERE type = \"kernel\"")" ]'

# the plan, without a GPU
"$kj" replay "$dir/g.kjdb" --sequence --graph --dry-run --json > "$dir/plan.json" 2>"$dir/plan.err"; rc=$?
check "--dry-run says what would be rebuilt" '[ $rc -eq 0 ] && [ ! -s "$dir/plan.err" ]'
check "the plan is the recorded graph: its nodes and edges, each kernel node tied to one kernel of the iteration" \
	'python3 - "$dir/plan.json" "$dir/g.kjdb" <<-"EOF"
	import json, sqlite3, sys
	t = json.load(open(sys.argv[1]))["topology"]
	db = sqlite3.connect(sys.argv[2])
	one = lambda sql: db.execute(sql).fetchone()[0]
	nodes = t["nodes"]
	kern = [n for n in nodes if n["build"] == "kernel"]
	ok = (t["rebuildable"] and t["graph_launches"] == 1 and t["tie"] == "clones"
	      and t["graph_nodes"] == one("SELECT count(*) FROM graph_node")
	      and t["graph_edges"] == one("SELECT count(*) FROM graph_edge")
	      and len(kern) == t["kernel_nodes"] == t["kernels_matched"] == one("SELECT count(*) FROM sequence_op WHERE op = \"kernel\"")
	      and sorted(n["seq_kernel"] for n in kern) == list(range(len(kern)))
	      and all(d < n["index"] for n in nodes for d in n["deps"]))
	# every recorded edge is a dependency of the plan
	at = {n["node_id"]: n["index"] for n in nodes if n["node_id"] is not None}
	for a, z in db.execute("SELECT from_node_id, to_node_id FROM graph_edge"):
	    ok = ok and at[a] in nodes[at[z]]["deps"]
	# the middle kernels of the fork-join run side by side: none depends on another
	mid = [at[i] for i in range(1001, 1004)]
	ok = ok and not any(m in nodes[n]["deps"] for m in mid for n in mid)
	sys.exit(not ok)
	EOF'
"$kj" replay "$dir/h.kjdb" --sequence --graph --dry-run > "$dir/hplan.txt" 2>&1
check "a host node is named with its count, and the linear chain said to stand" \
	'grep -q "host 1" "$dir/hplan.txt" && grep -q "linear chain" "$dir/hplan.txt"'
"$kj" replay "$src/tests/data/gpt_graph_short.kjdb" --sequence --graph --dry-run --json > "$dir/gpt.json" 2>/dev/null; rc=$?
check "the shipped graph run: every kernel node tied to a kernel of the kept iteration, nothing left out" \
	'[ $rc -eq 0 ] && python3 - "$dir/gpt.json" "$src/tests/data/gpt_graph_short.kjdb" <<-"EOF"
	import json, sqlite3, sys
	d = json.load(open(sys.argv[1])); t = d["topology"]
	db = sqlite3.connect(sys.argv[2])
	nk = db.execute("SELECT count(*) FROM sequence_op WHERE iteration = ? AND op = \"kernel\"", (d["iteration"],)).fetchone()[0]
	nm = db.execute("SELECT count(*) FROM graph_node WHERE type = \"memset\"").fetchone()[0]
	sys.exit(not (t["rebuildable"] and t["kernel_nodes"] == t["kernels_matched"] == nk
	              and t["build"]["kernel"] == nk and t["build"]["memset"] == nm and not t["not_rebuilt"]))
	EOF'

# replayed by the stand-in worker: stored, printed, compared
export KJ_REPLAY_WORKER="$src/tests/tools/replay_worker_standin.py" KJ_STANDIN_KJOULE="$kj" STANDIN_LOG="$dir/worker.log"
"$kj" replay "$dir/g.kjdb" --sequence --graph > "$dir/r.txt" 2>"$dir/r.err"; rc=$?
check "replay --sequence --graph succeeds and asks the worker for the topology" \
	'[ $rc -eq 0 ] && grep -q -- "--topology" "$dir/worker.log"'
check "the topology mode is stored beside eager and graph" \
	'[ "$(q "$dir/g.kjdb" "SELECT group_concat(mode) FROM (SELECT mode FROM replay_sequence ORDER BY mode)")" = "eager,graph,topology" ]'
check "replay_topology says rebuilt, with the recorded counts" \
	'[ "$(q "$dir/g.kjdb" "SELECT status || \":\" || nodes || \":\" || edges FROM replay_topology")" = "rebuilt:$(q "$dir/g.kjdb" "SELECT count(*) FROM graph_node"):$(q "$dir/g.kjdb" "SELECT count(*) FROM graph_edge")" ]'
check "each kernel node's time where it runs is stored with its traced duration" \
	'[ "$(q "$dir/g.kjdb" "SELECT count(*) FROM replay_graph_node WHERE type = \"kernel\" AND median_ns = traced_ns AND unique_id IS NOT NULL")" = "$(q "$dir/g.kjdb" "SELECT count(*) FROM graph_node WHERE type = \"kernel\"")" ]'
check "replay prints the topology against traced busy time and the per-node sums" \
	'grep -q "^topology .*vs traced GPU busy: +0.0%" "$dir/r.txt" && grep -q "per node (CUPTI" "$dir/r.txt"'
"$kj" compare "$dir/g.kjdb" > "$dir/c.txt" 2>/dev/null && "$kj" compare "$dir/g.kjdb" --json > "$dir/c.json" 2>/dev/null; rc=$?
check "compare prints the launches as recorded beside the linear chain, each against traced busy" \
	'[ $rc -eq 0 ] && grep -q "one CUDA graph .*vs traced busy (one linear chain)" "$dir/c.txt" &&
	 grep -q "graph launches as recorded .*vs traced busy (nodes and edges as recorded)" "$dir/c.txt"'
check "compare --json: the topology replay and its offset from busy time, computed from its own fields" \
	'python3 - "$dir/c.json" <<-"EOF"
	import json, sys
	d = json.load(open(sys.argv[1]))
	t, g, b = d["sequence_topology_us"], d["sequence_graph_us"], d["busy_us"]
	ok = (t is not None and d["topology_replay"]["status"] == "rebuilt"
	      and abs(d["sequence_topology_vs_busy_pct"] - 100 * (t - b) / b) < 1e-6
	      and abs(d["sequence_graph_vs_busy_pct"] - 100 * (g - b) / b) < 1e-6)
	sys.exit(not ok)
	EOF'
STANDIN_TOPO=1.5 "$kj" replay "$dir/g.kjdb" --sequence --graph --json > "$dir/r.json" 2>/dev/null; rc=$?
check "replay --json holds the topology, and a re-run replaces the stored time" \
	'[ $rc -eq 0 ] && python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d[\"topology\"][\"replayed\"] and d[\"topology\"][\"nodes_timed\"] == d[\"kernels\"]))" "$dir/r.json" &&
	 [ "$(q "$dir/g.kjdb" "SELECT median_ns FROM replay_sequence WHERE mode = \"topology\"")" = "$(q "$dir/g.kjdb" "SELECT CAST(1.5 * median_ns AS INTEGER) FROM replay_sequence WHERE mode = \"graph\"")" ]'
check "a replay on random data stores what its buffers held" \
	'[ "$(q "$dir/g.kjdb" "SELECT group_concat(DISTINCT data) FROM replay_sequence")" = random ]'
cp "$dir/g.kjdb" "$dir/f.kjdb"
STANDIN_FAULT_ON_RANDOM=1 "$kj" replay "$dir/f.kjdb" --sequence --graph > "$dir/fr.txt" 2>"$dir/fr.err"; rc=$?
check "random data faults: replayed on small integers, stored as such, and the warning names --snapshot-graphs" \
	'[ $rc -eq 0 ] && [ "$(q "$dir/f.kjdb" "SELECT group_concat(DISTINCT data) FROM replay_sequence")" = smallint ] &&
	 grep -q "faulted on random data" "$dir/fr.err" && grep -q "replayed on smallint data.*--snapshot-graphs" "$dir/fr.err"'

cp "$dir/g.kjdb" "$dir/c.kjdb"
STANDIN_TOPO_CRASH=1 STANDIN_SEQ_KERNELS=1 "$kj" replay "$dir/c.kjdb" --sequence --graph > "$dir/cr.txt" 2>"$dir/cr.err"; rc=$?
check "a worker that crashes in the topology replay: eager and graph results stored, the topology failed with the signal named" \
	'[ $rc -eq 0 ] && [ "$(q "$dir/c.kjdb" "SELECT count(*) FROM replay_sequence WHERE mode IN (\"eager\", \"graph\") AND runs > 0")" = 2 ] &&
	 [ "$(q "$dir/c.kjdb" "SELECT count(*) FROM replay_sequence WHERE mode = \"topology\" AND runs = 0 AND median_ns IS NULL")" = 1 ] &&
	 grep -q "worker crashed (Segmentation fault) in the graph launches" "$dir/cr.err" && grep -q "worker crashed" "$dir/cr.txt"'
check "... and the in-sequence kernel times it never reached come from a second worker, without --topology or --energy" \
	'[ "$(q "$dir/c.kjdb" "SELECT count(*) FROM replay_kernel WHERE cache = \"sequence\"")" -gt 0 ] &&
	 grep -q "in-sequence time taken by another worker" "$dir/cr.err" &&
	 [ "$(grep -c -- "--sequence" "$dir/worker.log")" -ge 2 ] && ! tail -1 "$dir/worker.log" | grep -q -- "--topology"'

: > "$dir/worker.log"
"$kj" replay "$dir/h.kjdb" --sequence --graph > "$dir/hr.txt" 2>"$dir/hr.err"; rc=$?
check "with a host node: the linear chain only, and the host node named on stdout and stderr" \
	'[ $rc -eq 0 ] && ! grep -q -- "--topology" "$dir/worker.log" && grep -q "host 1" "$dir/hr.txt" && grep -q "host 1" "$dir/hr.err"'
check "with a host node: replay_topology says fallback and names it" \
	'[ "$(q "$dir/h.kjdb" "SELECT status || \":\" || not_rebuilt FROM replay_topology")" = "fallback:host 1" ] &&
	 [ "$(q "$dir/h.kjdb" "SELECT count(*) FROM replay_sequence WHERE mode = \"topology\"")" = 0 ]'
"$kj" compare "$dir/h.kjdb" > "$dir/hc.txt" 2>/dev/null
check "compare names what was not rebuilt" 'grep -q "graph launches as recorded .*not rebuilt: host 1" "$dir/hc.txt"'
cp "$dir/g.kjdb" "$dir/n.kjdb"
: > "$dir/worker.log"
"$kj" replay "$dir/n.kjdb" --sequence --graph --no-topology > /dev/null 2>&1; rc=$?
check "--no-topology: the linear chain only" \
	'[ $rc -eq 0 ] && grep -q -- "--sequence" "$dir/worker.log" && ! grep -q -- "--topology" "$dir/worker.log"'

cp "$dir/g.kjdb" "$dir/b.kjdb"
t0=$(date +%s)
STANDIN_SLEEP=30 "$kj" replay "$dir/b.kjdb" --sequence --graph --budget 2 > /dev/null 2>"$dir/b.err"; rc=$?
took=$(( $(date +%s) - t0 ))
check "--budget bounds the iteration's replay: the worker is stopped at the budget, said, nothing stored" \
	'[ $rc -ne 0 ] && [ $took -lt 15 ] && grep -q "stopped when the --budget of 2 s was spent" "$dir/b.err" &&
	 [ "$(q "$dir/b.kjdb" "SELECT count(*) FROM replay_sequence")" = "$(q "$dir/g.kjdb" "SELECT count(*) FROM replay_sequence")" ]'

# an eager iteration: nothing to rebuild; said when asked
python3 "$src/tests/tools/mkspool.py" "$dir/e" --launches 300 --functions 4 --per-iter 100 2>/dev/null
"$kj" ingest "$dir/e" -o "$dir/e.kjdb" 2>/dev/null
if [ "$(q "$dir/e.kjdb" "SELECT count(*) FROM sequence_op")" != 0 ]; then
	"$kj" replay "$dir/e.kjdb" --sequence --graph --topology --dry-run > "$dir/e.txt" 2>"$dir/e.err"; rc=$?
	check "an eager iteration with --topology: said, and the replay goes on" \
		'[ $rc -eq 0 ] && grep -q "no graph launch" "$dir/e.err"'
fi

# refusals
"$kj" replay "$dir/g.kjdb" --sequence --topology > /dev/null 2>"$dir/x.err"; rc=$?
check "--topology without --graph is refused, saying why" '[ $rc -eq 2 ] && grep -q "with --sequence --graph" "$dir/x.err"'
"$kj" replay "$dir/g.kjdb" --dry-run > /dev/null 2>"$dir/y.err"; rc=$?
check "--dry-run without --sequence is refused, saying why" '[ $rc -eq 2 ] && grep -q "goes with --sequence" "$dir/y.err"'
exit $fail
