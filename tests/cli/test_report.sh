# kjoule report on the shipped runs and on synthetic runs with parts missing: the page holds the
# expected charts and tables, its figures are compare's, nothing is NaN, nothing is fetched from
# the network, a missing part is named with the command that measures it, and bad input leaves
# no file behind.
set -u
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
GEN="python3 $SRC/tests/tools/kjgen.py"

# html FILE: page checks shared by every report
page_ok() {
	local f=$1
	[ -s "$f" ] || { fail "$f missing"; return; }
	[ "$(stat -c %s "$f")" -le 5242880 ] || fail "$f over 5 MB"
	# no NaN or inf outside the script (the self-check's regex names them)
	sed '/<script>/,/<\/script>/d' "$f" | grep -Eqw 'NaN|-?inf|Infinity' && fail "$f: NaN or inf in the page"
	grep -Eq '(src|href)="https?:|url\(https?:|@import' "$f" && fail "$f: loads something from the network"
	grep -q '</html>' "$f" || fail "$f: not a whole page"
	ls "$(dirname "$f")"/*.tmp.* >/dev/null 2>&1 && fail "temporary file left beside $f"
}
need() { grep -q -- "$2" "$1" || fail "$1 lacks '$2'"; }
lack() { grep -q -- "$2" "$1" && fail "$1 has '$2'"; }

# the shipped runs: the graph-launched one ships compressed
xz -dc "$SRC/examples/runs/gpt_graph.kjdb.xz" > "$T/gpt_graph.kjdb" || fail "unpacking the shipped graph run"
for run in "$SRC"/examples/runs/*.kjdb "$T/gpt_graph.kjdb"; do
	out=$T/$(basename "$run" .kjdb).html
	expect 0 "$KJ" report "$run" -o "$out"
	has "wrote $out"
	page_ok "$out"
	for id in run-facts chart-decomposition replay-figures chart-top-time kernel-table chart-gantt; do
		need "$out" "id=\"$id\""
	done
	# its figures are compare's: the mean wall and the measured energy
	"$KJ" compare "$run" --json >"$T/c.json" 2>/dev/null
	wall_ms=$(python3 -c 'import json,sys; print("%.3f" % (json.load(open(sys.argv[1]))["wall_us"]/1000))' "$T/c.json")
	need "$out" ">$wall_ms&#8239;ms<"
	n_top=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["top_kernels"]))' "$T/c.json")
	"$KJ" compare "$run" --json --top 100000 >"$T/c.json" 2>/dev/null
	n_all=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["top_kernels"]))' "$T/c.json")
	rows=$(sed -n '/id="kernel-table"/,/<\/table>/p' "$out" | grep -c '^<tr><td data-v=')
	[ "$rows" = "$n_all" ] || fail "$run: kernel table has $rows rows, compare lists $n_all"
	[ "$n_all" -ge "$n_top" ] || fail "kernel count"
done

# the shipped BLOOM run has every part: energy, power, scatter, replays, regions
B=$T/bloom560m.html
for id in chart-energy-iter chart-energy-split energy-table chart-power-run chart-power-iters \
	chart-top-energy chart-scatter regions-table stages-table; do
	need "$B" "id=\"$id\""
done
need "$B" "kept whole for replay"
need "$B" "kjoule timeline $SRC/examples/runs/bloom560m.kjdb --format svg --iteration 27"
lack "$B" "Not in this run:</b> kernel replays"
need "$B" "Not in this run:</b> CUDA API calls" # traced without --api

# the graph run: its second energy prediction (the iteration replayed as one graph), judged; on
# fallback data (small integers) not judged, and the remedy named
# (the short graph run kept as a test fixture: its sequence replay ran back to back on random data)
G=$T/gshort.html
expect 0 "$KJ" report "$SRC/tests/data/gpt_graph_short.kjdb" -o "$G" --quiet
need "$G" 'id="energy-sequence"'
need "$G" "the iteration replayed as one graph (topology replay)"
cp "$SRC/tests/data/gpt_graph_short.kjdb" "$T/gsmall.kjdb"
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("ALTER TABLE replay_sequence ADD COLUMN data TEXT"); c.execute("UPDATE replay_sequence SET data = \"smallint\""); c.commit()' "$T/gsmall.kjdb"
expect 0 "$KJ" report "$T/gsmall.kjdb" -o "$T/gsmall.html" --quiet
need "$T/gsmall.html" "replay) + idle over the rest of the wall, on smallint data"
need "$T/gsmall.html" "not judged: replayed on fallback data (trace with --snapshot-graphs)"
lack "$G" "not judged: replayed on fallback data"
# a sequence energy replayed paced as the program ran it says so, with its period
cp "$SRC/tests/data/gpt_graph_short.kjdb" "$T/gpaced.kjdb"
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("ALTER TABLE replay_sequence ADD COLUMN pace_ns INTEGER"); c.execute("UPDATE replay_sequence SET pace_ns = 1750000 WHERE energy_mj IS NOT NULL"); c.commit()' "$T/gpaced.kjdb"
expect 0 "$KJ" report "$T/gpaced.kjdb" -o "$T/gpaced.html" --quiet
need "$T/gpaced.html" "paced as the program ran it (one launch every 1750.0 µs), idle between iterations taken off"
lack "$G" "paced as the program ran it"

# a bare synthetic run: no iterations, replays, power, API calls
$GEN -o "$T/bare.kjdb" --kernels 2000 --nvtx 0 --power 0 >/dev/null
expect 0 "$KJ" report "$T/bare.kjdb" --quiet
has "wrote $T/bare.html"
page_ok "$T/bare.html"
need "$T/bare.html" "the whole run is one iteration"
need "$T/bare.html" "<code>kjoule replay $T/bare.kjdb</code>"
need "$T/bare.html" "<code>kjoule replay $T/bare.kjdb --energy</code>"
need "$T/bare.html" "no power samples"
for id in chart-power-run chart-scatter chart-energy-iter chart-top-energy chart-energy-split; do
	lack "$T/bare.html" "id=\"$id\""
done
need "$T/bare.html" 'id="chart-decomposition"'
need "$T/bare.html" 'id="kernel-table"'

# iterations and power, no replays
$GEN -o "$T/it.kjdb" --kernels 5000 --nvtx 20 --power 80 >/dev/null
expect 0 "$KJ" report "$T/it.kjdb" -o "$T/it.html" --rows 3
page_ok "$T/it.html"
for id in chart-power-run chart-power-iters chart-energy-iter; do need "$T/it.html" "id=\"$id\""; done
lack "$T/it.html" "the whole run is one iteration"
need "$T/it.html" "Not in this run:</b> energy per kernel launch"
rows=$(sed -n '/id="kernel-table"/,/<\/table>/p' "$T/it.html" | grep -c '^<tr><td data-v=')
[ "$rows" = 3 ] || fail "--rows 3 gave $rows rows"
need "$T/it.html" "The table shows the 3 kernels with the most time; the other 9 take"

# one iteration of 20,000 kernels: no gantt in the page (it would outgrow it), the command instead
$GEN -o "$T/wide.kjdb" --kernels 20000 --nvtx 0 --power 0 >/dev/null
expect 0 "$KJ" report "$T/wide.kjdb" -o "$T/wide.html" --quiet
page_ok "$T/wide.html"
need "$T/wide.html" "the iteration holds 200[0-9][0-9] GPU activities, too many to draw"
need "$T/wide.html" "kjoule timeline $T/wide.kjdb --format svg -o gantt.svg"
lack "$T/wide.html" 'id="chart-gantt"'
[ "$(stat -c %s "$T/wide.html")" -lt 1000000 ] || fail "wide run's page over 1 MB"

# no kernels at all: still a page, which says so
$GEN -o "$T/empty.kjdb" --kernels 0 >/dev/null
expect 0 "$KJ" report "$T/empty.kjdb" -o "$T/empty.html" --quiet
page_ok "$T/empty.html"
need "$T/empty.html" "the measured iterations launched none"

# kernels kept at their in-situ time are listed with why; the energy card says why it is not
# judged (stand-in data), the explained-fraction card when streams overlapped
python3 "$SRC/bench/analysis_speed/mkrun.py" -o "$T/si.kjdb" --iterations 6 --kernels 40 --streams 4 --power-ms 0.05 >/dev/null
python3 -c "import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); d.execute(\"UPDATE replay_kernel SET median_ns = median_ns / 2, error = 'data: smallint (random data failed: x)'\"); d.commit()" "$T/si.kjdb"
expect 0 "$KJ" report "$T/si.kjdb" -o "$T/si.html"
page_ok "$T/si.html"
need "$T/si.html" 'id="not-replayable"'
need "$T/si.html" "its work depends on its inputs"
need "$T/si.html" "not judged: [0-9]* % of kernel time replayed on stand-in data"
need "$T/si.html" "first-order: kernels of several streams overlapped"
lack "$T/bloom560m.html" "first-order: kernels of several streams"

# bad input: a message naming the file, no page, no temporary file
expect 1 "$KJ" report "$T/nope.kjdb" -o "$T/nope.html"
[ -e "$T/nope.html" ] && fail "page written for a missing run"
grep -q "nope.kjdb" "$T/err" || fail "error does not name the file"
echo "not a database" >"$T/text.kjdb"
expect 1 "$KJ" report "$T/text.kjdb" -o "$T/text.html"
[ -e "$T/text.html" ] && fail "page written for a text file"
expect 1 "$KJ" report "$SRC/examples/runs/bloom560m.kjdb" --region no-such-range -o "$T/r.html"
[ -e "$T/r.html" ] && fail "page written for an absent region"
ls "$T"/*.tmp.* >/dev/null 2>&1 && fail "temporary file left behind"
expect 1 "$KJ" report "$SRC/examples/runs/bloom560m.kjdb" -o "$T/no/such/dir/r.html"
expect 2 "$KJ" report
expect 2 "$KJ" report a b
expect 2 "$KJ" report "$T/bare.kjdb" --rows -3
expect 0 "$KJ" report --help
has "usage: kjoule report"
finish
