#!/usr/bin/env bash
# usage: run_graph_test.sh KJOULE GRAPH_TARGET — exit 77 where no GPU is present.
# A hand-written program whose iterations are CUDA graphs (one built node by node, one by stream
# capture) that run after their NVTX range has closed, and a kernel that spins on a value written
# by the host: attribution, graph records, replay of node-by-node kernels, the kept iteration's
# sequence replay (linear chain, and the graph launches rebuilt with their recorded topology, each
# node timed), and a report with no inf/NaN that names the waiting kernel.
set -u
kj=$1 target=$2
. "$(dirname "$0")/../lib.sh"

KJ_EXPECT=$dir/expected.json "$kj" run -o "$dir/g.kjdb" -- "$target" > "$dir/run.log" 2>&1; rc=$?
check "the program runs traced" '[ $rc -eq 0 ]'
db=$dir/g.kjdb
check "24 graph launches and 2 instantiations recorded without --api" \
	'[ "$(q $db "SELECT count(*) FROM host_call WHERE op = \"graph_launch\"")" = 24 ] && [ "$(q $db "SELECT count(*) FROM host_call WHERE op = \"graph_instantiate\"")" = 2 ]'
check "every graph kernel keyed by its graph launch's time" \
	'[ "$(q $db "SELECT count(*) FROM kernel k JOIN host_call h ON h.pid = k.pid AND h.correlation_id = k.correlation_id WHERE k.graph_node_id IS NOT NULL AND k.launch_ns = h.start_ns")" = 60 ]'
check "the graph built node by node is recorded: 5 nodes, 3 kernels, 3 edges" \
	'[ "$(q $db "SELECT count(*) FROM graph_node WHERE graph_id = (SELECT graph_id FROM graph_node WHERE type = \"memset\" LIMIT 1)")" = 4 ] ||
	 [ "$(q $db "SELECT count(*) FROM graph_edge")" -ge 3 ]'
check "node-by-node kernels have parameters (scale, busy, add from graph A)" \
	'[ "$(q $db "SELECT count(DISTINCT n.mangled) FROM launch_params p JOIN unique_kernel u ON u.id = p.unique_id JOIN kernel_name n ON n.id = u.name_id WHERE p.correlation_id >= 3221225472")" = 3 ]'
check "the kept iteration holds the two graphs' 5 kernels with parameters" \
	'[ "$(q $db "SELECT count(*) FROM sequence_op WHERE op = \"kernel\" AND launch_params_id IS NOT NULL")" = 5 ]'

"$kj" compare "$db" --json > "$dir/c0.json" 2>/dev/null
check "compare: 5 kernels and 1 memset per iteration (the graphs'), none of the eager busy kernel" \
	'python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d[\"kernels_per_iteration\"] == 5 and d[\"memsets_per_iteration\"] == 1))" "$dir/c0.json"'

"$kj" replay "$db" --energy --energy-seconds 0.5 --timeout 20 > "$dir/replay.log" 2>&1; rc=$?
check "replay --energy finishes" '[ $rc -eq 0 ]'
"$kj" compare "$db" --json > "$dir/c.json" 2>"$dir/c.err"; "$kj" compare "$db" > "$dir/c.txt" 2>&1
check "compare names spin_until as not replayable alone" \
	'python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not any(\"spin_until\" in w[\"name\"] for w in d[\"not_replayable_alone\"]))" "$dir/c.json" && grep -q "Not replayable alone" "$dir/c.txt"'
check "no inf or NaN anywhere in compare's output" '! grep -qiwE "inf|nan|-inf" "$dir/c.txt" "$dir/c.json"'
check "every replayed sum within 3x of its in-situ sum" \
	'python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
for k in (\"replay_sum_warm_us\", \"replay_sum_cold_us\", \"replay_sum_sequence_us\"):
    v = d.get(k)
    if v is not None and not (d[\"kernel_sum_us\"] / 3 <= v <= 3 * d[\"kernel_sum_us\"]):
        sys.exit(1)
" "$dir/c.json"'
check "the graph iteration was replayed as a graph" \
	'[ "$(q $db "SELECT count(*) FROM replay_sequence WHERE mode = \"graph\" AND median_ns > 0")" -ge 1 ]'
# the graph launches rebuilt as recorded (graph A: a memset and 3 kernels, fork-join; graph B: a
# captured chain of 2): every kernel node tied, timed, each node timed where it runs
check "the topology replay ran: both launches rebuilt, all 5 kernel nodes tied" \
	'[ "$(q $db "SELECT status || \":\" || graph_launches || \":\" || kernel_nodes || \":\" || kernels_matched FROM replay_topology")" = "rebuilt:2:5:5" ]'
check "the topology replay's time per iteration is within 3x of the traced GPU busy time" \
	'python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
t, b = d[\"sequence_topology_us\"], d[\"busy_us\"]
sys.exit(not (t is not None and b > 0 and b / 3 <= t <= 3 * b))
" "$dir/c.json"'
check "its energy is measured where the linear graph's is" \
	'[ "$(q $db "SELECT count(*) FROM replay_sequence WHERE mode = \"graph\" AND energy_mj IS NOT NULL")" = 0 ] ||
	 [ "$(q $db "SELECT count(*) FROM replay_sequence WHERE mode = \"topology\" AND energy_mj > 0")" = 1 ]'
check "each kernel node timed where it runs: 5 nodes, their medians within 3x of their traced durations" \
	'[ "$(q $db "SELECT count(*) FROM replay_graph_node WHERE type = \"kernel\" AND median_ns > 0 AND runs > 0")" = 5 ] &&
	 python3 -c "
import sqlite3, sys
r, t = sqlite3.connect(sys.argv[1]).execute(\"SELECT sum(median_ns), sum(traced_ns) FROM replay_graph_node\").fetchone()
sys.exit(not (t and t / 3 <= r <= 3 * t))
" $db'
check "compare prints the launches as recorded beside the linear chain" \
	'grep -q "graph launches as recorded .*vs traced busy" "$dir/c.txt" && grep -q "one CUDA graph .*vs traced busy" "$dir/c.txt"'
"$kj" replay "$db" --sequence --graph --no-topology --runs 20 > "$dir/nt.txt" 2>&1; rc=$?
check "--no-topology replays the linear chain alone" '[ $rc -eq 0 ] && ! grep -q "^topology" "$dir/nt.txt"'
# --snapshot: graph kernels' buffers saved once, before the first graph launch after recording
# (x, y, z: the three allocations the five kernels point to), and the sequence replays on them
GRAPH_TARGET_NO_SPIN=1 KJ_EXPECT=$dir/expected2.json "$kj" run --snapshot=64 -o "$dir/s.kjdb" -- "$target" > "$dir/run_s.log" 2>&1; rc=$?
check "the program runs traced with --snapshot" '[ $rc -eq 0 ]'
sdb=$dir/s.kjdb
check "the graphs' 3 buffers saved once each, before the first graph launch, under its correlation" \
	'[ "$(q $sdb "SELECT count(DISTINCT s.address) || \":\" || count(*) || \":\" || sum(s.bytes) FROM snapshot s JOIN host_call h ON h.pid = s.pid AND h.correlation_id = s.correlation_id WHERE h.op = \"graph_launch\" AND h.start_ns = (SELECT min(start_ns) FROM host_call WHERE op = \"graph_launch\") AND s.phase = \"before\"")" = "3:3:12582912" ]'
check "no graph launch but the first saved anything" \
	'[ "$(q $sdb "SELECT count(*) FROM snapshot s JOIN host_call h ON h.pid = s.pid AND h.correlation_id = s.correlation_id WHERE h.op = \"graph_launch\" AND h.start_ns > (SELECT min(start_ns) FROM host_call WHERE op = \"graph_launch\")")" = 0 ]'
"$kj" replay "$sdb" --sequence --graph --runs 20 > "$dir/ss.txt" 2>&1; rc=$?
check "the sequence replays on the snapshot, as a graph, without a fallback fill" \
	'[ $rc -eq 0 ] && [ "$(q $sdb "SELECT count(*) FROM replay_sequence WHERE mode = \"graph\" AND median_ns > 0")" -ge 1 ] && ! grep -q "smallint\|small-integer" "$dir/ss.txt"'
cp "$dir/c.txt" "${KJ_GRAPH_TEST_OUT:-/dev/null}" 2>/dev/null || true
exit $fail
