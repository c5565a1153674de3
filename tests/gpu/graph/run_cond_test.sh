#!/usr/bin/env bash
# usage: run_cond_test.sh KJOULE COND_TARGET — exit 77 where no GPU is present.
# A hand-written program whose graph holds node kinds kjoule cannot rebuild (a WHILE and an IF
# conditional node, host nodes made node by node and by cudaLaunchHostFunc): the program runs on
# unchanged under the tracer, every run of a WHILE body's kernels belongs to the launch's
# iteration, the bodies' kernel nodes get parameters, replay finishes and names what it could not
# do, and compare shows no inf/NaN and names the node kinds that kept the graph from being rebuilt.
set -u
kj=$1 target=$2
. "$(dirname "$0")/../lib.sh"
keep=${KJ_GPU_TEST_KEEP:-}

KJ_EXPECT=$dir/expected.json "$kj" run -o "$dir/c.kjdb" -- "$target" > "$dir/run.log" 2>&1; rc=$?
check "the program runs traced, its own checks pass (WHILE trips, host nodes)" \
	'[ $rc -eq 0 ] && grep -q "iterations done" "$dir/run.log"'
db=$dir/c.kjdb
check "2 conditional nodes and 2 host nodes recorded" \
	'[ "$(q $db "SELECT count(*) FROM graph_node WHERE type = \"conditional\"")" = 2 ] && [ "$(q $db "SELECT count(*) FROM graph_node WHERE type = \"host\"")" = 2 ]'
check "the bodies were walked: their kernel nodes recorded under the conditional nodes" \
	'[ "$(q $db "SELECT count(*) FROM graph_node k JOIN graph_node c ON c.pid = k.pid AND c.node_id = k.parent_node_id WHERE c.type = \"conditional\" AND k.type = \"kernel\"")" = 3 ]'
check "the 2 conditional handles the program made are recorded" \
	'[ "$(q $db "SELECT count(*) FROM graph_conditional_handle")" = 2 ]'
check "step_body, added to the WHILE body node by node, has its parameters" \
	'[ "$(q $db "SELECT count(*) FROM launch_params p JOIN unique_kernel u ON u.id = p.unique_id JOIN kernel_name n ON n.id = u.name_id WHERE n.mangled LIKE \"%step_body%\"")" -ge 1 ]'

"$kj" compare "$db" --json > "$dir/c0.json" 2>"$dir/c0.err"
check "compare: 16 kernels (the WHILE body 5 times) and 2 graph launches per iteration" \
	'python3 -c "import json,sys; d=json.load(open(sys.argv[1])); e=json.load(open(sys.argv[2])); sys.exit(not (abs(d[\"kernels_per_iteration\"] - e[\"graph_kernels_per_iteration\"]) < 1e-9 and d[\"graph_launches_per_iteration\"] == 2))" "$dir/c0.json" "$dir/expected.json"'

"$kj" replay "$db" --energy --energy-seconds 0.5 --timeout 20 > "$dir/replay.log" 2>&1; rc=$?
check "replay --energy finishes" '[ $rc -eq 0 ]'
check "every unique kernel of the run is replayed or named with its reason" \
	'[ "$(q $db "SELECT count(*) FROM unique_kernel u WHERE NOT EXISTS (SELECT 1 FROM replay_kernel r WHERE r.unique_id = u.id AND (r.status IN (\"ok\", \"relocated\") OR length(r.error) > 0))")" = 0 ]'
check "step_body (it sets the WHILE node's condition) is not launched alone, and replay says why" \
	'[ "$(q $db "SELECT count(*) FROM replay_kernel r JOIN unique_kernel u ON u.id = r.unique_id JOIN kernel_name n ON n.id = u.name_id WHERE n.mangled LIKE \"%step_body%\" AND r.status = \"skipped\" AND r.error LIKE \"%sets the condition%\"")" -ge 1 ]'
check "the kept iteration replays as one graph, the condition setter left out and said so" \
	'[ "$(q $db "SELECT count(*) FROM replay_sequence WHERE mode = \"graph\" AND median_ns > 0")" -ge 1 ] && grep -q "set a CUDA graph conditional" "$dir/replay.log"'
"$kj" compare "$db" --json > "$dir/c.json" 2>"$dir/c.err"; "$kj" compare "$db" > "$dir/c.txt" 2>&1
check "compare keeps step_body at its in-situ time, named as not replayable alone" \
	'python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not any(\"step_body\" in w[\"name\"] for w in d[\"not_replayable_alone\"]))" "$dir/c.json"'
check "kernels per iteration still 16 after replay, in-sequence coverage of the replayable ones" \
	'python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (abs(d[\"kernels_per_iteration\"] - 16) < 1e-9 and (d[\"replay_coverage_sequence\"] or 0) > 0.5))" "$dir/c.json"' 
check "no inf or NaN anywhere in compare's output" '! grep -qiwE "inf|nan|-inf" "$dir/c.txt" "$dir/c.json"'
check "the graph launches were not rebuilt, and compare names the conditional and host nodes" \
	'[ "$(q $db "SELECT status FROM replay_topology")" != rebuilt ] && grep "graph launches as recorded" "$dir/c.txt" | grep -q conditional && grep "graph launches as recorded" "$dir/c.txt" | grep -q host'
"$kj" timeline "$db" --format chrome -o "$dir/t.json" > /dev/null 2>&1; rc=$?
check "timeline writes a Chrome trace" '[ $rc -eq 0 ] && python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$dir/t.json"'
if [ $fail -ne 0 ] || [ -n "$keep" ]; then
	tail -5 "$dir/run.log"; tail -40 "$dir/replay.log"; cat "$dir/c.txt"
	[ -n "$keep" ] && cp "$dir/c.kjdb" "$dir"/*.log "$dir/c.txt" "$keep"/ 2>/dev/null
fi
exit $fail
