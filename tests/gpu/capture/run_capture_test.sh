#!/usr/bin/env bash
# usage: run_capture_test.sh KJOULE CAPTURE_TARGET [PYTHON_PROGRAM ARGS...] — exit 77 without a GPU.
# kjoule run --capture step@5:3 on 10 NVTX steps of 4 kernels each: exactly 3 captured iterations
# (instances 5, 6, 7), their 12 kernels and no other, every instance marked; cuda-profiler-api
# over steps 3..5, and a start without a stop; a range that never opens; a CUDA graph captured
# before the window (its launches' callbacks on only while the stream is captured) and launched in
# each step: the window's 12 kernels carry the parameters of the launches that made their nodes,
# and copies and event records outside the window leave no record. With a Python program
# (scripts/gpu/capture.sh passes examples/torch_steps.py's user), the same window checks.
# A program that settles (40 steps of 60 ms, window step@30:3): CUPTI is taken out once it has
# settled and put back at instance 29; the window's kernels are all there, a graph's with their
# parameters; an allocation made while CUPTI was out is said; --capture-attached keeps it in; CUPTI
# is taken out again after a window no graph ran in, never after one a graph ran in (the graph's
# later launches would fault). Where transformers is installed, the compiled decode loop of
# examples/hf_decode.py (CUDA graphs) decodes every request alike with the window late in the run.
set -u
kj=$1 target=$2
shift 2
source "$(dirname "$0")/../lib.sh"

db=$dir/nvtx.kjdb
"$kj" run --capture step@5:3 -o "$db" -- "$target" --steps 10 --launches 4 >"$dir/nvtx.out" 2>"$dir/nvtx.err"
rc=$?
check "nvtx: the program ran and checked itself (rc $rc)" "[ $rc = 0 ] && grep -q '\"ok\": true' '$dir/nvtx.out'"
check "nvtx: status captured" "[ \"\$(q '$db' \"SELECT value FROM meta WHERE key='capture_status'\")\" = captured ]"
check "nvtx: all 10 instances marked" "[ \"\$(q '$db' 'SELECT count(*) FROM iteration_mark WHERE end_ns IS NOT NULL')\" = 10 ]"
check "nvtx: exactly instances 5, 6, 7 captured" "[ \"\$(q '$db' \"SELECT group_concat(instance, ',') FROM (SELECT instance FROM iteration_mark WHERE captured = 1 ORDER BY instance)\")\" = 5,6,7 ]"
check "nvtx: 12 kernels recorded" "[ \"\$(q '$db' 'SELECT count(*) FROM kernel')\" = 12 ]"
check "nvtx: every kernel ran inside the window" "[ \"\$(q '$db' 'SELECT count(*) FROM kernel k, capture_window w WHERE k.start_ns < w.start_ns OR k.end_ns > w.end_ns')\" = 0 ]"
check "nvtx: every kernel launched inside a captured instance" "[ \"\$(q '$db' 'SELECT count(*) FROM kernel k WHERE NOT EXISTS (SELECT 1 FROM iteration_mark m WHERE m.captured = 1 AND k.launch_ns BETWEEN m.start_ns AND m.end_ns)')\" = 0 ]"
check "nvtx: 3 step ranges, each ended" "[ \"\$(q '$db' \"SELECT count(*) FROM nvtx_range WHERE name = 'step' AND end_ns IS NOT NULL\")\" = 3 ]"
if [ "$(q "$db" "SELECT count(*) FROM nvtx_range WHERE name = 'step' AND end_ns IS NOT NULL")" != 3 ]; then
	echo "  the step ranges (id, tid, start, end, depth, kind) and the marks (instance, start, end, captured):"
	q "$db" "SELECT id, tid, start_ns, end_ns, depth, kind FROM nvtx_range WHERE name = 'step' ORDER BY start_ns" | sed 's/^/    /'
	q "$db" "SELECT instance, start_ns, end_ns, captured FROM iteration_mark ORDER BY instance" | sed 's/^/    /'
fi
"$kj" info "$db" >"$dir/nvtx.info" 2>&1
check "nvtx: info shows the whole run (its warm-up left out) beside the captured iterations" "grep -q 'whole run, iterations (first 1 left out) *9' '$dir/nvtx.info' && grep -q 'captured iterations *3' '$dir/nvtx.info' && grep -q 'bytes per kernel launch' '$dir/nvtx.info'"
"$kj" compare "$db" --json >"$dir/nvtx.json" 2>/dev/null
check "nvtx: compare --json has the capture and only finite numbers" \
	"python3 -c 'import json, sys; d = json.load(open(sys.argv[1]), parse_constant=lambda c: sys.exit(1)); sys.exit(0 if d[\"capture\"][\"captured\"][\"instances\"] == 3 else 1)' '$dir/nvtx.json'"

db=$dir/prof.kjdb
"$kj" run --capture cuda-profiler-api -o "$db" -- "$target" --steps 10 --launches 4 --profiler 3:5 >"$dir/prof.out" 2>"$dir/prof.err"
rc=$?
check "profiler: the program ran (rc $rc)" "[ $rc = 0 ]"
check "profiler: status captured" "[ \"\$(q '$db' \"SELECT value FROM meta WHERE key='capture_status'\")\" = captured ]"
check "profiler: the kernels of steps 3..5 alone (12)" "[ \"\$(q '$db' 'SELECT count(*) FROM kernel')\" = 12 ]"
check "profiler: the window is an iteration range" "[ \"\$(q '$db' \"SELECT count(*) FROM nvtx_range WHERE name = 'cuda-profiler-api'\")\" = 1 ]"

db=$dir/nostop.kjdb
"$kj" run --capture cuda-profiler-api -o "$db" -- "$target" --steps 10 --launches 4 --profiler 7:-1 >"$dir/nostop.out" 2>"$dir/nostop.err"
check "profiler, no stop: status start_without_stop, said" "[ \"\$(q '$db' \"SELECT value FROM meta WHERE key='capture_status'\")\" = start_without_stop ] && grep -q 'without cudaProfilerStop' '$dir/nostop.err'"
check "profiler, no stop: steps 7..9 kept (12 kernels)" "[ \"\$(q '$db' 'SELECT count(*) FROM kernel')\" = 12 ]"

db=$dir/graph.kjdb
"$kj" run --capture step@5:3 -o "$db" -- "$target" --steps 10 --launches 4 --graph >"$dir/graph.out" 2>"$dir/graph.err"
rc=$?
check "graph: the program ran and checked itself (rc $rc)" "[ $rc = 0 ] && grep -q '\"ok\": true' '$dir/graph.out'"
check "graph: the window's 12 kernels, each a graph's" "[ \"\$(q '$db' 'SELECT count(*) FROM kernel WHERE graph_id IS NOT NULL')\" = 12 ] && [ \"\$(q '$db' 'SELECT count(*) FROM kernel')\" = 12 ]"
check "graph: their parameters came with the launches that made their nodes, before the window" \
	"[ \"\$(q '$db' 'SELECT count(*) FROM launch_params p JOIN (SELECT DISTINCT unique_id FROM kernel) k ON k.unique_id = p.unique_id WHERE p.correlation_id < 3221225472')\" -ge 1 ]"
check "graph: no copy or memset recorded outside the window" "[ \"\$(q '$db' 'SELECT count(*) FROM memcpy m, capture_window w WHERE m.start_ns < w.start_ns')\" = 0 ] && [ \"\$(q '$db' 'SELECT count(*) FROM memset m, capture_window w WHERE m.start_ns < w.start_ns')\" = 0 ]"

db=$dir/never.kjdb
"$kj" run --capture step@50:3 -o "$db" -- "$target" --steps 10 >"$dir/never.out" 2>"$dir/never.err"
check "never: said, and the database says so" "grep -q 'window never opened' '$dir/never.err' && [ \"\$(q '$db' \"SELECT value FROM meta WHERE key='capture_status'\")\" = never_opened ]"
check "never: no kernels, 10 instances marked" "[ \"\$(q '$db' 'SELECT count(*) FROM kernel')\" = 0 ] && [ \"\$(q '$db' 'SELECT count(*) FROM iteration_mark')\" = 10 ]"

for mode in eager graph; do
	db=$dir/detach_$mode.kjdb
	extra=
	[ $mode = graph ] && extra=--graph
	"$kj" run --capture step@30:3 -o "$db" -- "$target" --steps 40 --launches 4 --step-ms 60 $extra >"$dir/detach_$mode.out" 2>"$dir/detach_$mode.err"
	rc=$?
	check "detach $mode: the program ran and checked itself (rc $rc)" "[ $rc = 0 ] && grep -q '\"ok\": true' '$dir/detach_$mode.out'"
	check "detach $mode: CUPTI taken out once and put back at instance 29, said" \
		"[ \"\$(q '$db' 'SELECT count(*) FROM cupti_detached WHERE end_ns IS NOT NULL AND before_instance = 29')\" = 1 ] && grep -q 'CUPTI out of the program' '$dir/detach_$mode.err'"
	check "detach $mode: exactly instances 30, 31, 32 captured" "[ \"\$(q '$db' \"SELECT group_concat(instance, ',') FROM (SELECT instance FROM iteration_mark WHERE captured = 1 ORDER BY instance)\")\" = 30,31,32 ]"
	check "detach $mode: the window's 12 kernels, launched inside it" "[ \"\$(q '$db' 'SELECT count(*) FROM kernel')\" = 12 ] && [ \"\$(q '$db' 'SELECT count(*) FROM kernel k WHERE NOT EXISTS (SELECT 1 FROM iteration_mark m WHERE m.captured = 1 AND k.launch_ns BETWEEN m.start_ns AND m.end_ns)')\" = 0 ]"
	check "detach $mode: every kernel's unique kernel has its parameters" "[ \"\$(q '$db' 'SELECT count(*) FROM (SELECT DISTINCT unique_id FROM kernel) k WHERE NOT EXISTS (SELECT 1 FROM launch_params p WHERE p.unique_id = k.unique_id)')\" = 0 ]"
	check "detach $mode: no problem but the detach's own notes" "[ \"\$(q '$db' \"SELECT count(*) FROM problem WHERE severity = 'error'\")\" = 0 ]"
	check "detach $mode: no memory change said where the program allocated nothing" "[ \"\$(q '$db' \"SELECT count(*) FROM problem WHERE what LIKE '%memory in use changed%'\")\" = 0 ]"
	after=1
	[ $mode = graph ] && after=0
	check "detach $mode: taken out again after the window: $after" "[ \"\$(q '$db' 'SELECT count(*) FROM cupti_detached WHERE after_instance >= 32')\" = $after ]"
done
db=$dir/detach_alloc.kjdb
"$kj" run --capture step@30:3 -o "$db" -- "$target" --steps 40 --launches 4 --step-ms 60 --alloc-at 25 >"$dir/detach_alloc.out" 2>"$dir/detach_alloc.err"
check "detach alloc: memory allocated while CUPTI was out is said" "[ \"\$(q '$db' \"SELECT count(*) FROM problem WHERE what LIKE '%memory in use changed%'\")\" = 1 ]"
db=$dir/attached.kjdb
"$kj" run --capture step@30:3 --capture-attached -o "$db" -- "$target" --steps 40 --launches 4 --step-ms 60 >"$dir/attached.out" 2>"$dir/attached.err"
check "attached: CUPTI never taken out, the window's 12 kernels" "[ \"\$(q '$db' 'SELECT count(*) FROM cupti_detached')\" = 0 ] && [ \"\$(q '$db' 'SELECT count(*) FROM kernel')\" = 12 ]"

repo=$(cd "$(dirname "$0")/../../.." && pwd)
if python3 -c 'import torch, transformers' 2>/dev/null; then
	db=$dir/decode.kjdb
	timeout 240 "$kj" run --capture request@55:2 -o "$db" -- python3 "$repo/examples/hf_decode.py" --requests 60 >"$dir/decode.out" 2>"$dir/decode.err"
	rc=$?
	check "decode: the compiled decode loop ran (rc $rc), CUPTI out before the window" "[ $rc = 0 ] && [ \"\$(q '$db' 'SELECT count(*) FROM cupti_detached WHERE before_instance = 54')\" = 1 ]"
	check "decode: every request decoded the same tokens" "grep -q '\"requests_unlike_the_first\": 0' '$dir/decode.out'"
	check "decode: the window's kernels recorded" "[ \"\$(q '$db' 'SELECT count(*) FROM kernel')\" -gt 0 ]"
fi

if [ $# -gt 0 ]; then # a Python program with NVTX steps named "step"
	db=$dir/py.kjdb
	"$kj" run --capture step@5:3 -o "$db" -- "$@" >"$dir/py.out" 2>"$dir/py.err"
	rc=$?
	check "python: the program ran (rc $rc)" "[ $rc = 0 ]"
	check "python: exactly instances 5, 6, 7 captured" "[ \"\$(q '$db' \"SELECT group_concat(instance, ',') FROM (SELECT instance FROM iteration_mark WHERE captured = 1 ORDER BY instance)\")\" = 5,6,7 ]"
	check "python: every kernel launched inside a captured instance" "[ \"\$(q '$db' 'SELECT count(*) FROM kernel k WHERE k.launch_ns IS NULL OR NOT EXISTS (SELECT 1 FROM iteration_mark m WHERE m.captured = 1 AND k.launch_ns BETWEEN m.start_ns AND m.end_ns)')\" = 0 ] && [ \"\$(q '$db' 'SELECT count(*) FROM kernel')\" -gt 0 ]"
fi
if [ $fail != 0 ]; then
	for f in "$dir"/*.err; do echo "== $f"; tail -5 "$f"; done
fi
exit $fail
