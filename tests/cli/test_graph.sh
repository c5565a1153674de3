#!/usr/bin/env bash
# A graph-launched program (synthetic spool, tests/tools/mkspool.py --graph): GPU work belongs to
# the iteration whose range was open when its graph launch ran, not to the window it ran in; the
# kept iteration holds the graph's kernels with the parameters their nodes were made with;
# framework ranges (XLA's) are not taken as iterations; the choice is visible in info.
# usage: test_graph.sh KJOULE SRC_DIR BUILD_DIR
set -u
kj=$1 src=$2
. "$(dirname "$0")/lib.sh"

python3 "$src/tests/tools/mkspool.py" "$dir/g" --graph --functions 5 --iters 6
"$kj" ingest "$dir/g" -o "$dir/g.kjdb" 2>/dev/null; rc=$?
check "ingest succeeds" '[ $rc -eq 0 ]'
check "graph launches and the instantiation are host calls" \
	'[ "$(q "$dir/g.kjdb" "SELECT count(*) FROM host_call WHERE op = \"graph_launch\"")" = 6 ] &&
	 [ "$(q "$dir/g.kjdb" "SELECT count(*) FROM host_call WHERE op = \"graph_instantiate\"")" = 1 ]'
check "every graph kernel carries its graph launch's time" \
	'[ "$(q "$dir/g.kjdb" "SELECT count(*) FROM kernel k JOIN host_call h ON h.correlation_id = k.correlation_id
	      WHERE k.graph_node_id IS NOT NULL AND k.launch_ns = h.start_ns")" = 36 ]'
check "captured and node-by-node kernels are unique kernels with parameters" \
	'[ "$(q "$dir/g.kjdb" "SELECT count(DISTINCT k.unique_id) FROM kernel k JOIN launch_params p ON p.unique_id = k.unique_id")" = 6 ]'
check "the node-by-node graph's node and edge are recorded" \
	'[ "$(q "$dir/g.kjdb" "SELECT count(*) FROM graph_node WHERE type = \"kernel\"")" = 1 ] &&
	 [ "$(q "$dir/g.kjdb" "SELECT count(*) FROM graph_edge WHERE from_node_id = 1000 AND to_node_id = 2000")" = 1 ]'
check "the kept iteration is 'forward' #4 of 6" '[ "$(q "$dir/g.kjdb" "SELECT value FROM meta WHERE key = \"params_iteration\"")" = "forward#4" ]'
check "it holds the graph's 6 kernels, each with parameters and its kernel row" \
	'[ "$(q "$dir/g.kjdb" "SELECT count(*) FROM sequence_op WHERE iteration = 4 AND op = \"kernel\" AND launch_params_id IS NOT NULL AND kernel_id IS NOT NULL")" = 6 ]'
check "the capture-time launches (which ran nothing) are not in it" \
	'[ "$(q "$dir/g.kjdb" "SELECT count(*) FROM sequence_op")" = 6 ]'

"$kj" compare "$dir/g.kjdb" --json > "$dir/c.json" 2>"$dir/c.err"; rc=$?
check "compare succeeds" '[ $rc -eq 0 ]'
check "graph kernels carry the range their node was captured in (attn x3, mlp x2 per launch; none for the node-by-node kernel)" \
	'[ "$(q "$dir/g.kjdb" "SELECT group_concat(n || \":\" || c) FROM (SELECT r.name n, count(*) c FROM kernel k JOIN nvtx_range r ON r.id = k.capture_range_id GROUP BY r.name ORDER BY r.name)")" = "attn:18,mlp:12" ]'
check "per-layer regions hold inside graph launches: attn 3 kernels, 6 us; mlp 2, 4 us per iteration; no host time" \
	'python3 -c "
import json, sys
r = {x[\"name\"]: x for x in json.load(open(sys.argv[1]))[\"regions\"]}
ok = (r[\"attn\"][\"kernels_per_iteration\"] == 3 and abs(r[\"attn\"][\"gpu_busy_us\"] - 6) < 1e-9 and
      r[\"mlp\"][\"kernels_per_iteration\"] == 2 and abs(r[\"mlp\"][\"gpu_busy_us\"] - 4) < 1e-9 and
      r[\"attn\"][\"time_us\"] is None and r[\"attn\"][\"captured_in_graph\"] and r[\"capture\"][\"kernels_per_iteration\"] == 5)
sys.exit(not ok)
" "$dir/c.json"'
check "compare takes 'forward' (not the XLA ranges around it) and 6 kernels per iteration" \
	'python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d[\"iterations\"][\"region\"] == \"forward\" and d[\"kernels_per_iteration\"] == 6))" "$dir/c.json"'
check "one graph launch per iteration, said as such" \
	'python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d[\"graph_launches_per_iteration\"] != 1)" "$dir/c.json" &&
	 "$kj" compare "$dir/g.kjdb" 2>/dev/null | grep -q "graph launches 1.0 per iteration"'
check "GPU busy per iteration is the graph's kernel time (6 x 2 us)" \
	'python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(abs(d[\"busy_us\"] - 12.0) > 1e-6)" "$dir/c.json"'
"$kj" compare "$dir/g.kjdb" --region 'XlaModule:#hlo_module=step#' --json > "$dir/x.json" 2>/dev/null; rc=$?
check "a framework range is still an iteration when named" \
	'[ $rc -eq 0 ] && python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d[\"iterations\"][\"region\"] != \"XlaModule:#hlo_module=step#\")" "$dir/x.json"'
"$kj" info "$dir/g.kjdb" > "$dir/info.txt" 2>&1
check "info shows the choice and the candidates" \
	'grep -q "iteration *.forward. (most GPU work)" "$dir/info.txt" && grep -q "framework.s own" "$dir/info.txt" && grep -q "graph_launches *6" "$dir/info.txt"'
"$kj" timeline "$dir/g.kjdb" --format ascii > "$dir/t.txt" 2>&1; rc=$?
check "timeline draws a graph iteration" '[ $rc -eq 0 ] && [ -s "$dir/t.txt" ]'
"$kj" timeline "$dir/g.kjdb" --format chrome -o "$dir/t.json" 2>/dev/null
check "the chrome timeline shows the 6 graph launches on their thread, each with arrows to its 6 kernels" \
	'python3 -c "
import json, sys
ev = json.load(open(sys.argv[1]))[\"traceEvents\"]
launches = [e for e in ev if e.get(\"name\") == \"cuGraphLaunch\"]
flows = [e for e in ev if e.get(\"cat\") == \"launch\" and e.get(\"ph\") == \"f\"]
sys.exit(not (len(launches) == 6 and len(flows) == 36))
" "$dir/t.json"'

# the range told at run wins, and an absent one is said
"$kj" ingest "$dir/g" -o "$dir/told.kjdb" --iteration-range 'XlaModule:#hlo_module=step#' 2>/dev/null
check "the range told at run is the iteration for every analysis" \
	'"$kj" info "$dir/told.kjdb" | grep -q "named at run" &&
	 "$kj" compare "$dir/told.kjdb" --json 2>/dev/null | python3 -c "import json,sys; sys.exit(json.load(sys.stdin)[\"iterations\"][\"region\"] != \"XlaModule:#hlo_module=step#\")"'
"$kj" ingest "$dir/g" -o "$dir/absent.kjdb" --iteration-range nosuch 2>/dev/null
check "a told range the run lacks is said, and the rule goes on" \
	'"$kj" info "$dir/absent.kjdb" | grep -q "range named at run is absent"'

# the shipped graph-launched run (a GPT-2-medium-shaped model in torch.cuda.graph, traced on an H100):
# per iteration, compare's kernels and busy time are those of the iteration's own graph launch,
# counted here from the database without compare
run=$src/tests/data/gpt_graph_short.kjdb
"$kj" compare "$run" --json > "$dir/s.json" 2>/dev/null; rc=$?
check "compare reads the shipped graph run" '[ $rc -eq 0 ]'
check "its kernels per iteration are its graph launch's, its busy time within 1 % of that launch's" \
	'python3 "$src/tests/tools/graph_iteration_check.py" "$run" "$dir/s.json"'
check "its 44 forwards (75 ms, under two energy-counter updates) give no energy mean to judge by, and compare says why" \
	'python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d[\"energy_error_judgeable\"] is False and d[\"energy_measured_too_short\"] is True and 70 < d[\"energy_measured_span_ms\"] < 80))" "$dir/s.json" &&
	 "$kj" compare "$run" 2>/dev/null | grep -q "under two updates of the energy counter"'
check "... and no energy error of it reads as a judgement" \
	'[ "$("$kj" compare "$run" 2>/dev/null | grep "error vs measured" | grep -vc "not judged")" = 0 ]'
check "the shipped BLOOM run (1.6 J a forward) is judgeable, and no warning is printed" \
	'"$kj" compare "$src/examples/runs/bloom560m.kjdb" --json 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin); sys.exit(not (d[\"energy_error_judgeable\"] is True and d[\"energy_measured_mean_unc_pct\"] <= 1))" &&
	 "$kj" compare "$src/examples/runs/bloom560m.kjdb" > "$dir/bloom.txt" 2>/dev/null &&
	 ! grep -q "the measured mean is known only to" "$dir/bloom.txt"'
# the graph-launched run the demo shows: 1,004 forwards, a loop long enough for its energy to judge
xz -dc "$src/examples/runs/gpt_graph.kjdb.xz" > "$dir/long.kjdb"
check "the shipped graph run's loop (1.6 s of whole counter periods) is measured to 1 % and judged" \
	'"$kj" compare "$dir/long.kjdb" --json 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin); sys.exit(not (d[\"energy_measured_basis\"] == \"loop\" and d[\"energy_error_judgeable\"] is True and d[\"energy_measured_mean_unc_pct\"] <= 1 and d[\"energy_prediction_method\"] == \"placed_in_sequence\"))" &&
	 "$kj" compare "$dir/long.kjdb" 2>/dev/null | grep "error vs measured" | head -n 1 | grep -vq "not judged"'
check "nothing in its compare output is inf or NaN" \
	'"$kj" compare "$run" > "$dir/run.txt" 2>&1 && ! grep -qiwE "inf|nan" "$dir/run.txt" && [ -s "$dir/s.json" ] && ! grep -qiE "nan|infinity" "$dir/s.json"'
# the second energy prediction: the iteration replayed as one graph (the run's replay_sequence row),
# plus idle power over the rest of the wall, recomputed here from the database and compare's wall
check "compare predicts energy from the iteration replayed as one graph" 'python3 - "$run" "$dir/s.json" <<'"'"'P'"'"'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
c = json.load(open(sys.argv[2]))
# the topology replay where the run has one with energy, else the linear chain as one graph
modes = {m for (m,) in db.execute("SELECT mode FROM replay_sequence WHERE energy_mj IS NOT NULL")}
want_mode = "topology" if "topology" in modes else "graph"
assert c["energy_sequence_mode"] == want_mode, (c["energy_sequence_mode"], modes)
mj, ns = db.execute("SELECT avg(energy_mj), avg(median_ns) FROM replay_sequence WHERE mode = ? AND energy_mj IS NOT NULL", (want_mode,)).fetchone()
want = (mj + c["idle_power_w"] * max(c["wall_us"] * 1e3 - ns, 0) * 1e-6) / 1000
got = c["energy_predicted_sequence_j"]
assert abs(got - want) <= 0.002 * want + 0.0005, (got, want)
err = 100 * (got - c["energy_measured_j"]) / c["energy_measured_j"]
assert abs(c["energy_error_sequence_pct"] - err) < 0.5, (c["energy_error_sequence_pct"], err)
P'
check "info: a graph run without saved buffers names --snapshot-graphs; the eager BLOOM run names --snapshot" \
	'"$kj" info "$run" 2>/dev/null | grep -q "traced without --snapshot-graphs" &&
	 "$kj" info "$src/examples/runs/bloom560m.kjdb" 2>/dev/null | grep -q "traced without --snapshot)"'
check "a graph run without saved buffers lists them as missing; the eager BLOOM run does not" \
	'python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not any(\"--snapshot-graphs\" in m for m in d[\"missing\"]))" "$dir/s.json" &&
	 "$kj" compare "$src/examples/runs/bloom560m.kjdb" --json > "$dir/bloom.json" 2>/dev/null &&
	 ! grep -q -- "--snapshot-graphs" "$dir/bloom.json"'
# a run stored before replay_sequence.data existed gets the column on its next sequence replay
cp "$run" "$dir/old.kjdb"
KJ_REPLAY_WORKER="$src/tests/tools/replay_worker_standin.py" KJ_STANDIN_KJOULE="$kj" \
	"$kj" replay "$dir/old.kjdb" --sequence --graph > /dev/null 2>&1; rc=$?
check "an older run replayed again: replay_sequence gains its data column, the new rows say random" \
	'[ $rc -eq 0 ] && [ "$(q "$dir/old.kjdb" "SELECT group_concat(DISTINCT data) FROM replay_sequence WHERE data IS NOT NULL")" = random ]'
# a sequence replayed on small integers (random data faulted) draws less power: its energy error is
# not judged, and compare says why and what to do; on the program's saved buffers it is judged
cp "$run" "$dir/small.kjdb"
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("ALTER TABLE replay_sequence ADD COLUMN data TEXT") if "data" not in [r[1] for r in c.execute("PRAGMA table_info(replay_sequence)")] else None; c.execute("UPDATE replay_sequence SET data = ?", (sys.argv[2],)); c.commit()' "$dir/small.kjdb" smallint
"$kj" compare "$dir/small.kjdb" --json > "$dir/small.json" 2>/dev/null
"$kj" compare "$dir/small.kjdb" > "$dir/small.txt" 2>&1
check "a sequence energy on small-integer data: error not judged, the data named, --snapshot-graphs advised" \
	'python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d[\"energy_error_sequence_pct\"] is None and d[\"energy_sequence_data\"] == \"smallint\" and d[\"energy_predicted_sequence_j\"] > 0))" "$dir/small.json" &&
	 grep -q "not judged: replayed on smallint data" "$dir/small.txt" && grep -q -- "--snapshot-graphs" "$dir/small.txt"'
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("UPDATE replay_sequence SET data = ?", (sys.argv[2],)); c.commit()' "$dir/small.kjdb" random
check "on random data the error is judged, with a note that points to the program's buffers" \
	'"$kj" compare "$dir/small.kjdb" 2>/dev/null | grep -A1 "error vs measured" | grep -q "on random data: .*--snapshot-graphs"'
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("UPDATE replay_sequence SET data = ?", (sys.argv[2],)); c.commit()' "$dir/small.kjdb" random+snapshot
check "on the program's saved buffers the error is judged and says so" \
	'"$kj" compare "$dir/small.kjdb" --json 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin); sys.exit(not isinstance(d[\"energy_error_sequence_pct\"], float))" &&
	 "$kj" compare "$dir/small.kjdb" 2>/dev/null | grep -q "on the program.s saved buffers"'
# a topology energy measured paced (one launch per program period, each waited for: the program
# synchronised after each forward) is per period: the part of the period outside the iteration's
# wall comes off at idle power, recomputed here from the database and compare's wall
cp "$run" "$dir/paced.kjdb"
python3 - "$dir/paced.kjdb" <<'P'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
if "pace_ns" not in [r[1] for r in c.execute("PRAGMA table_info(replay_sequence)")]:
    c.execute("ALTER TABLE replay_sequence ADD COLUMN pace_ns INTEGER")
c.execute("UPDATE replay_sequence SET pace_ns = CAST(median_ns * 1.3 AS INTEGER) WHERE energy_mj IS NOT NULL")
c.commit()
P
"$kj" compare "$dir/paced.kjdb" --json > "$dir/paced.json" 2>/dev/null
check "a paced topology energy: per period, less idle power over the period's part outside the wall" 'python3 - "$dir/paced.kjdb" "$dir/paced.json" <<'"'"'P'"'"'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
c = json.load(open(sys.argv[2]))
mode = c["energy_sequence_mode"]
mj, pace = db.execute("SELECT avg(energy_mj), avg(pace_ns) FROM replay_sequence WHERE mode = ? AND energy_mj IS NOT NULL", (mode,)).fetchone()
assert pace is not None, "no paced row"
want = (mj + c["idle_power_w"] * (c["wall_us"] * 1e3 - pace) * 1e-6) / 1000
assert abs(c["energy_sequence_pace_us"] - pace / 1e3) < 0.01, c["energy_sequence_pace_us"]
got = c["energy_predicted_sequence_j"]
assert abs(got - want) <= 0.002 * want + 0.0005, (got, want)
P
'
check "compare says the replay ran paced as the program ran" \
	'"$kj" compare "$dir/paced.kjdb" 2>/dev/null | grep -q "paced as the program ran: one launch every"'
# a worker's device-side assertion flood (one line per thread of a kernel on random indices) is one
# line with its count; its own warnings pass as they are
STANDIN_ASSERTS=300 KJ_REPLAY_WORKER="$src/tests/tools/replay_worker_standin.py" KJ_STANDIN_KJOULE="$kj" \
	"$kj" replay "$dir/small.kjdb" --sequence --graph > /dev/null 2> "$dir/asserts.err"
check "a worker's 300 device-side assertion lines become one line with the count; its warning stays" \
	'[ "$(grep -c "Assertion \`" "$dir/asserts.err")" = 0 ] && grep -q "300 device-side assertion message" "$dir/asserts.err" &&
	 grep -q "a stand-in warning" "$dir/asserts.err"'
# an iteration that faults on every fill: the topology replay names why it was not attempted
cp "$run" "$dir/fa.kjdb"
STANDIN_FAULT_ALWAYS=1 KJ_REPLAY_WORKER="$src/tests/tools/replay_worker_standin.py" KJ_STANDIN_KJOULE="$kj" \
	"$kj" replay "$dir/fa.kjdb" --sequence --graph > "$dir/fa.out" 2>&1
check "an iteration that faulted on every fill: topology 'not attempted', with the first failure" \
	'grep -q "topology replay failed: not attempted: the iteration failed first as eager (first iteration: CUDA_ERROR_ASSERT)" "$dir/fa.out" &&
	 [ "$(q "$dir/fa.kjdb" "SELECT count(*) FROM replay_topology WHERE status = '"'"'failed'"'"' AND reason LIKE '"'"'not attempted:%'"'"'")" = 1 ]'
check "... and compare says the kept iteration's replay failed, not that it was never run" \
	'"$kj" compare "$dir/fa.kjdb" 2>/dev/null | grep "eager (stream of launches)" | grep -q "failed: .kjoule replay RUN --sequence. says why" &&
	 "$kj" compare "$dir/fa.kjdb" --json 2>/dev/null | python3 -c "import json,sys; sys.exit(not json.load(sys.stdin)[\"sequence_replay_failed\"])" &&
	 "$kj" compare "$run" --json 2>/dev/null | python3 -c "import json,sys; sys.exit(json.load(sys.stdin)[\"sequence_replay_failed\"])"'
# the worker's paced period is stored; --back-to-back tells the worker not to pace
cp "$run" "$dir/pw.kjdb"
STANDIN_MJ=900 STANDIN_PACE=1777000 STANDIN_LOG="$dir/pw.argv" KJ_REPLAY_WORKER="$src/tests/tools/replay_worker_standin.py" \
	KJ_STANDIN_KJOULE="$kj" "$kj" replay "$dir/pw.kjdb" --sequence --graph --energy > /dev/null 2>&1; rc1=$?
STANDIN_MJ=900 STANDIN_PACE=1777000 STANDIN_LOG="$dir/pw.argv" KJ_REPLAY_WORKER="$src/tests/tools/replay_worker_standin.py" \
	KJ_STANDIN_KJOULE="$kj" "$kj" replay "$dir/pw.kjdb" --sequence --graph --energy --back-to-back > /dev/null 2>&1; rc2=$?
check "a paced replay stores its period; --back-to-back asks the worker for none and stores none" \
	'[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && [ "$(head -1 "$dir/pw.argv" | grep -c -- --no-pace)" = 0 ] &&
	 [ "$(tail -1 "$dir/pw.argv" | grep -c -- --no-pace)" = 1 ] &&
	 [ "$(q "$dir/pw.kjdb" "SELECT count(*) FROM replay_sequence WHERE pace_ns IS NOT NULL")" = 0 ]'
STANDIN_MJ=900 STANDIN_PACE=1777000 KJ_REPLAY_WORKER="$src/tests/tools/replay_worker_standin.py" \
	KJ_STANDIN_KJOULE="$kj" "$kj" replay "$dir/pw.kjdb" --sequence --graph --energy > /dev/null 2>&1
check "... and paced again, the graph modes' rows carry the period" \
	'[ "$(q "$dir/pw.kjdb" "SELECT group_concat(DISTINCT pace_ns) FROM replay_sequence WHERE mode != '"'"'eager'"'"'")" = 1777000 ]'
# a memset node inside the graph (cuDNN resets a tile counter before its attention kernel): its
# runs get the destination the node holds, and the kept iteration keeps it where it ran, between
# the two kernels, named by row, so replay repeats it at its place
python3 "$src/tests/tools/mkspool.py" "$dir/gm" --graph --functions 5 --iters 6 --graph-memset
"$kj" ingest "$dir/gm" -o "$dir/gm.kjdb" 2>/dev/null; rc=$?
check "graph memsets: ingest succeeds" '[ $rc -eq 0 ]'
check "graph memsets: every run has the node's destination and width" \
	'[ "$(q "$dir/gm.kjdb" "SELECT count(*) FROM memset WHERE graph_node_id IS NOT NULL AND address = 139637979873280 AND element_bytes = 4")" = 6 ]'
check "graph memsets: the kept iteration holds it between the first and second kernel, by row" \
	'python3 - "$dir/gm.kjdb" <<-"EOF"
	import sqlite3, sys
	db = sqlite3.connect(sys.argv[1])
	ops = db.execute("SELECT s.op, m.graph_node_id IS NOT NULL AND m.correlation_id = s.correlation_id"
	                 " FROM sequence_op s LEFT JOIN memset m ON m.id = s.memset_id ORDER BY s.ordinal").fetchall()
	sys.exit(ops != [("kernel", 0), ("memset", 1)] + [("kernel", 0)] * 5)
	EOF'
python3 "$src/tests/tools/mkspool.py" "$dir/gc" --graph --functions 5 --iters 6 --graph-memset=child
"$kj" ingest "$dir/gc" -o "$dir/gc.kjdb" 2>/dev/null
check "graph memsets in child graphs (no clone record back): paired with the one node of their shape" \
	'[ "$(q "$dir/gc.kjdb" "SELECT count(*) FROM memset WHERE graph_node_id IS NOT NULL AND address = 139637979873280 AND element_bytes = 4")" = 6 ]'
python3 "$src/tests/tools/mkspool.py" "$dir/gx" --graph --functions 5 --iters 6 --graph-memset=xla
"$kj" ingest "$dir/gx" -o "$dir/gx.kjdb" 2>/dev/null
check "graph memsets read again from clones (XLA): one destination, still paired" \
	'[ "$(q "$dir/gx.kjdb" "SELECT count(*) FROM memset WHERE graph_node_id IS NOT NULL AND address = 139637979873280 AND element_bytes = 4")" = 6 ]'
python3 "$src/tests/tools/mkspool.py" "$dir/gn" --graph --functions 5 --iters 6
"$kj" ingest "$dir/gn" -o "$dir/gn.kjdb" 2>/dev/null
check "graph memsets: none made up without the node" '[ "$(q "$dir/gn.kjdb" "SELECT count(*) FROM memset")" = 0 ]'
# kernels inside a WHILE node's body (CUPTI gives them no correlation id): each run is tied to
# the graph launch that ran it, by its graph and time, after the graph's kernels or before them,
# also when the host has already made the next launch
for v in "end" "start" "end --queued" "start --queued"; do
	n=w$(echo "$v" | tr -d ' -')
	python3 "$src/tests/tools/mkspool.py" "$dir/$n" --graph --functions 5 --iters 6 --while-body 3 --while-at $v
	"$kj" ingest "$dir/$n" -o "$dir/$n.kjdb" 2>/dev/null; rc=$?
	check "WHILE body ($v): every body run tied to the launch whose kernels ran beside it" \
		'[ $rc -eq 0 ] && [ "$(q "$dir/$n.kjdb" "SELECT count(*) FROM kernel b JOIN host_call h ON h.correlation_id = b.correlation_id AND h.op = \"graph_launch\"
		      WHERE b.graph_node_id = 7000 AND b.launch_ns = h.start_ns AND EXISTS (SELECT 1 FROM kernel a WHERE a.graph_node_id != 7000
		      AND a.correlation_id = b.correlation_id AND abs(a.start_ns - b.start_ns) < 50000)")" = 18 ]'
	"$kj" compare "$dir/$n.kjdb" --json > "$dir/$n.json" 2>/dev/null
	check "WHILE body ($v): 9 kernels per iteration (6 of the graph, 3 body runs)" \
		'python3 -c "import json,sys; sys.exit(json.load(open(sys.argv[1]))[\"kernels_per_iteration\"] != 9)" "$dir/$n.json"'
done
check "WHILE body: the run says how its uncorrelated records were tied" \
	'q "$dir/wstart.kjdb" "SELECT what FROM problem" | grep -q "18 tied to the graph launch"'
# a chain replayed without the kernels that set a conditional's condition: compare says how many
it=$(q "$dir/wend.kjdb" "SELECT iteration FROM sequence_op LIMIT 1")
nk=$(q "$dir/wend.kjdb" "SELECT count(*) FROM sequence_op WHERE op = 'kernel'")
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("INSERT INTO replay_sequence(iteration, mode, runs, launches, median_ns, min_ns, max_ns) VALUES(?, \"graph\", 10, ?, 20000, 19000, 21000)", (int(sys.argv[2]), int(sys.argv[3]) - 3)); c.commit()' "$dir/wend.kjdb" "$it" "$nk"
"$kj" compare "$dir/wend.kjdb" > "$dir/wl.txt" 2>&1; "$kj" compare "$dir/wend.kjdb" --json > "$dir/wl.json" 2>/dev/null
"$kj" report "$dir/wend.kjdb" -o "$dir/wl.html" > /dev/null 2>&1
check "... and the report's replay figures say so too" 'grep -q "left out 3 kernel launch" "$dir/wl.html"'
check "a chain that left out 3 condition setters: compare says so, in text and JSON" \
	'[ "$nk" = 9 ] && grep -q "the chain left out 3 kernel launch" "$dir/wl.txt" &&
	 python3 -c "import json,sys; sys.exit(json.load(open(sys.argv[1]))[\"sequence_launches_left_out\"] != 3)" "$dir/wl.json"'
# a graph that is one WHILE node (nothing of a launch is correlated): the exec's records split into
# one run per launch at the longest waits, in launch order, also when the host runs a launch ahead
for v in "" "--queued"; do
	n=wo$(echo "$v" | tr -d ' -')
	python3 "$src/tests/tools/mkspool.py" "$dir/$n" --graph --functions 5 --iters 6 --while-body 3 --while-only $v
	"$kj" ingest "$dir/$n" -o "$dir/$n.kjdb" 2>/dev/null; rc=$?
	lag=$([ -n "$v" ] && echo 1218000 || echo 218000)
	check "WHILE node alone${v:+ ($v)}: each launch's 3 body runs tied to it, none to the launch after" \
		'[ $rc -eq 0 ] && [ "$(q "$dir/$n.kjdb" "SELECT count(*) FROM kernel b JOIN host_call h ON h.correlation_id = b.correlation_id
		      AND h.op = \"graph_launch\" WHERE b.start_ns - h.start_ns BETWEEN $lag - 100 AND $lag + 3100")" = 18 ]'
done
exit $fail
