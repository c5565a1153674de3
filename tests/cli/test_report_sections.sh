# kjoule report's sections for two kinds of run: a --capture run gets a Capture section (what was
# captured, its status in info's words, the whole run's iterations beside the captured ones, the
# figures info prints) and a run of two GPU processes a Ranks section (per rank and for the job,
# the figures compare prints, checked by hand against tests/unit/test_ranks.c's job); other runs
# get neither.
set -u
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
GEN="python3 $SRC/tests/tools/kjgen.py"
MK="python3 $SRC/tests/tools/mkreportsec.py"

page_ok() {
	local f=$1
	[ -s "$f" ] || { fail "$f missing"; return; }
	sed '/<script>/,/<\/script>/d' "$f" | grep -Eqw 'NaN|-?inf|Infinity' && fail "$f: NaN or inf in the page"
	grep -q '</html>' "$f" || fail "$f: not a whole page"
}
need() { grep -qF -- "$2" "$1" || fail "$1 lacks '$2'"; }
lack() { grep -qF -- "$2" "$1" && fail "$1 has '$2'"; }
# jq FILE EXPR: a Python expression over the JSON file j, printed
jq() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
# fig X PREC: X as the page writes a figure (thousands grouped)
fig() { python3 -c 'import sys; print("{:,.{}f}".format(float(sys.argv[1]), int(sys.argv[2])))' "$1" "$2"; }

# ---- a --capture run: 10 instances of 'forward', 3 and 4 captured, power over all of them
$GEN -o "$T/cap.kjdb" --kernels 3000 --nvtx 10 --power 80 >/dev/null
$MK capture "$T/cap.kjdb" captured
expect 0 "$KJ" report "$T/cap.kjdb" -o "$T/cap.html" --quiet
P=$T/cap.html
page_ok "$P"
for id in capture capture-facts capture-iterations; do need "$P" "id=\"$id\""; done
lack "$P" 'id="ranks"'
need "$P" '<th class="l">captured</th><td class="l"><code>forward@3:2</code>'
need "$P" '<th class="l">status</th><td class="l"><code>captured</code></td>'
need "$P" '<th class="l">window</th><td class="l">1.100&#8239;s</td>' # start of 3 to end of 4
# its figures are info's: instances, mean wall, span, energy per iteration and bound
"$KJ" info "$T/cap.kjdb" --json >"$T/info.json"
for set in whole_run:"whole run (first 1 left out)" captured:captured; do
	key=${set%%:*} lab=${set#*:}
	c="j['capture']['$key']"
	row="<tr><td class=\"l\">$lab</td><td>$(jq "$T/info.json" "$c['instances']")</td>"
	row="$row<td>$(fig "$(jq "$T/info.json" "$c['wall_ms_mean']")" 3)&#8239;ms</td>"
	row="$row<td>$(fig "$(jq "$T/info.json" "$c['span_s']")" 3)&#8239;s</td>"
	row="$row<td>$(fig "$(jq "$T/info.json" "$c['energy_j_mean']")" 3)&#8239;J</td>"
	row="$row<td>$(fig "$(jq "$T/info.json" "$c['energy_unc_j_mean']")" 3)&#8239;J</td></tr>"
	need "$P" "$row"
done
# and by hand: 10 instances of 500 ms every 600 ms, the first left out as warm-up, 2 captured; a
# 400 W counter: the whole run's 9 span 5.3 s (235.6 J each), the captured 2 span 1.1 s (220 J each)
need "$P" '<tr><td class="l">whole run (first 1 left out)</td><td>9</td><td>500.000&#8239;ms</td><td>5.300&#8239;s</td>'
need "$P" '<tr><td class="l">captured</td><td>2</td><td>500.000&#8239;ms</td><td>1.100&#8239;s</td>'
python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["capture"]; w=c["whole_run"]; x=c["captured"]; sys.exit(not (abs(w["energy_j_mean"] - 400*5.3/9) <= w["energy_unc_j_mean"] and abs(x["energy_j_mean"] - 400*1.1/2) <= x["energy_unc_j_mean"] and w["warmup_left_out"] == 1))' "$T/info.json" ||
	fail "info --json: the capture sets' energies are not the 400 W spans' within their bounds"
lack "$P" "Energy not measured"
# the captured against the whole run: apart by what the two say, bounds too wide to judge
python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["capture"]; g=c["energy_agreement"]; a=c["whole_run"]["energy_j_mean"]; x=c["captured"]["energy_j_mean"]; sys.exit(not (abs(g["apart_pct"] - 100*(x-a)/a) < 1e-6 and g["bound_pct"] > 5 and g["within"] is None))' "$T/info.json" ||
	fail "info --json: capture.energy_agreement is not the two sets' difference, or judged on bounds too wide"
need "$P" 'id="capture-agreement"'
need "$P" 'not judged: bounds this wide cannot tell'
need "$P" "re-create: <code>kjoule info $T/cap.kjdb"

# a steady loop of 16 ms iterations (tests/tools/mkreportsec.py capture steady: 8 J a 20 ms cycle by
# construction, a 2 s warm-up instance first): each iteration is far shorter than the energy
# counter's 100 ms period, the captured 50 span about 1 s, so the two agree within bounds of a few %
$GEN -o "$T/steady.kjdb" --kernels 300 --nvtx 0 --power 1 >/dev/null
$MK capture "$T/steady.kjdb" steady
"$KJ" compare "$T/steady.kjdb" --json >"$T/steady.json" 2>"$T/steady.err" || fail "compare on the steady loop: $(cat "$T/steady.err")"
python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["capture"]; g=c["energy_agreement"]; w=c["whole_run"]; x=c["captured"]
ok = (w["instances"] == 399 and x["instances"] == 50 and g["within"] is True and g["bound_pct"] < 3
      and abs(w["energy_j_mean"] - 400 * (0.02 * 398 + 0.016) / 399) <= w["energy_unc_j_mean"]
      and abs(x["energy_j_mean"] - 400 * (0.02 * 49 + 0.016) / 50) <= x["energy_unc_j_mean"])
sys.exit(not ok)' "$T/steady.json" ||
	fail "steady loop: the captured iterations and the whole run (warm-up left out) do not agree within bounds under 3 %: $(cat "$T/steady.json" | tr -d '\n ' | grep -o '"capture".*')"
# the warm-up kept (--skip 0) makes the whole run's iterations dearer than the captured: outside
"$KJ" compare "$T/steady.kjdb" --json --skip 0 >"$T/steady0.json" 2>/dev/null
python3 -c 'import json,sys; g=json.load(open(sys.argv[1]))["capture"]["energy_agreement"]; sys.exit(not (g["within"] is False and g["apart_pct"] < -15))' "$T/steady0.json" ||
	fail "steady loop, --skip 0: a 2 s warm-up among 20 ms cycles is not told apart"
# the same loop with its captured iterations slowed by tracing (20 ms every 24 ms: 9.6 J each against
# 8 J): outside the bounds, and the verdict names the captured iterations' slower pace as the cause,
# where a window that is merely atypical (the warm-up kept) is not blamed on tracing
$GEN -o "$T/traced.kjdb" --kernels 300 --nvtx 0 --power 1 >/dev/null
$MK capture "$T/traced.kjdb" traced
"$KJ" compare "$T/traced.kjdb" --json >"$T/traced.json" 2>/dev/null
python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["capture"]; g=c["energy_agreement"]
ok = (g["within"] is False and 15 < g["apart_pct"] < 20 and abs(c["captured_slower_pct"] - 100 * (20 / (16 + 4 * 50 / 399) - 1)) < 0.5
      and "tracing" in g["verdict"])
sys.exit(not ok)' "$T/traced.json" || fail "traced window: the slower captured iterations are not named: $(tr -d '\n ' <"$T/traced.json" | grep -o '"capture".*')"
"$KJ" info "$T/traced.kjdb" >"$T/traced.txt" 2>&1
need "$T/traced.txt" "captured iterations' wall time against the whole run's: +"
need "$T/traced.txt" "tracing's cost on the program's threads inside the window"
python3 -c 'import json,sys; g=json.load(open(sys.argv[1]))["capture"]["energy_agreement"]; sys.exit("tracing" in g["verdict"])' "$T/steady0.json" ||
	fail "steady loop, --skip 0: an atypical window blamed on tracing"
# a second process on another GPU marks 30 iterations of its own: the power of the first GPU
# measures the first process's iterations only
python3 - "$T/steady.kjdb" <<'P' || fail "cannot add the second process"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("INSERT INTO process_device(pid, ordinal, device_id) VALUES(5555, 0, 1)")
for i in range(30):
    s = 1_000_000_000 + 300_000_000 + i * 300_000_000
    db.execute("INSERT INTO iteration_mark(pid, name, instance, start_ns, end_ns, captured)"
               " VALUES(5555, 'step', ?, ?, ?, 0)", (i, s, s + 100_000_000))
db.commit()
P
"$KJ" info "$T/steady.kjdb" --json >"$T/steady2.json" 2>/dev/null
python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["capture"]; assert c["whole_run"]["instances"] == 399 and c["energy_agreement"]["within"] is True, c' "$T/steady2.json" ||
	fail "steady loop: another GPU's process's iterations counted against the first GPU's power"
# a run that names no process's GPU: every process's iterations count
cp "$T/steady.kjdb" "$T/nodev.kjdb"
python3 -c 'import sqlite3,sys; db=sqlite3.connect(sys.argv[1]); db.execute("DELETE FROM process_device"); db.commit()' "$T/nodev.kjdb"
"$KJ" info "$T/nodev.kjdb" --json >"$T/nodev.json" 2>/dev/null
python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["capture"]; assert c["whole_run"]["instances"] == 429, c["whole_run"]' "$T/nodev.json" ||
	fail "a run naming no process's GPU: its iterations not all counted"

# the statuses, worded as kjoule info words them
$GEN -o "$T/never.kjdb" --kernels 0 --power 80 >/dev/null
$MK capture "$T/never.kjdb" never_opened
expect 0 "$KJ" report "$T/never.kjdb" -o "$T/never.html" --quiet
page_ok "$T/never.html"
need "$T/never.html" '<code>never_opened</code>: nothing was captured (no kernels are recorded; this is not an empty program)'
need "$T/never.html" 'none: the window never opened'
need "$T/never.html" '<tr><td class="l">captured</td><td>0</td><td><span class="na">not measured</span></td><td><span class="na">not measured</span></td><td><span class="na">not measured</span>'
need "$T/never.html" '<p>Energy not measured for the captured iterations: no iteration was captured.</p>'
expect 0 "$KJ" info "$T/never.kjdb"
has "never_opened: nothing was captured (no kernels are recorded; this is not an empty program)"
$GEN -o "$T/open.kjdb" --kernels 300 --nvtx 10 --power 80 >/dev/null
$MK capture "$T/open.kjdb" unclosed_at_exit
expect 0 "$KJ" report "$T/open.kjdb" -o "$T/open.html" --quiet
page_ok "$T/open.html"
need "$T/open.html" '<code>unclosed_at_exit</code>: the window was still open when the program ended (unclosed at exit): what it recorded is kept'
need "$T/open.html" 'opened, no end recorded (the process ended inside it)'
expect 0 "$KJ" info "$T/open.kjdb"
has "unclosed_at_exit: the window was still open when the program ended (unclosed at exit): what it recorded is kept"
$GEN -o "$T/nostop.kjdb" --kernels 300 --nvtx 10 --power 80 >/dev/null
$MK capture "$T/nostop.kjdb" start_without_stop
expect 0 "$KJ" report "$T/nostop.kjdb" -o "$T/nostop.html" --quiet
need "$T/nostop.html" '<code>cuda-profiler-api</code>'
need "$T/nostop.html" '<code>start_without_stop</code>: cudaProfilerStart without cudaProfilerStop: the window ended at exit'
expect 0 "$KJ" info "$T/nostop.kjdb"
has "start_without_stop, window 1.100 s: cudaProfilerStart without cudaProfilerStop: the window ended at exit"
# no power samples: energy not measured, and why
$GEN -o "$T/nopow.kjdb" --kernels 300 --nvtx 10 --power 0 >/dev/null
$MK capture "$T/nopow.kjdb" captured
expect 0 "$KJ" report "$T/nopow.kjdb" -o "$T/nopow.html" --quiet
page_ok "$T/nopow.html"
need "$T/nopow.html" '<p>Energy not measured: no power samples of the traced GPU'

# ---- two ranks on two GPUs (tests/unit/test_ranks.c's job, its figures by hand)
$GEN -o "$T/job.kjdb" --kernels 0 >/dev/null
$MK job "$T/job.kjdb" plain
expect 0 "$KJ" report "$T/job.kjdb" -o "$T/job.html" --quiet
J=$T/job.html
page_ok "$J"
for id in ranks chart-ranks ranks-table job-table; do need "$J" "id=\"$id\""; done
lack "$J" 'id="capture"'
need "$J" '<h2>Ranks: 2 processes with GPU work on 2 GPU(s)</h2>'
# rank 0: wall 1000, busy 500, NCCL 300, exposed 200, explained 1.1, 500 mJ; rank 1: wall 1200,
# busy 700, NCCL 150, exposed 100, no replay of its compute kernel, 346.7 mJ
need "$J" '<td class="l" data-v="0">rank 0 (GPU 0)</td><td>101</td><td class="l">NVIDIA H200</td><td class="l">step</td><td>3</td><td>1,000.0</td><td>500.0</td><td>50.0&#8239;%</td><td>300.0</td><td>200.0</td><td><span class="na">not measured</span></td><td><span class="na">not measured</span></td><td>1.100</td><td>500.0</td>'
need "$J" '<td class="l" data-v="1">rank 1 (GPU 1)</td><td>102</td><td class="l">NVIDIA H200</td><td class="l">step</td><td>3</td><td>1,200.0</td><td>700.0</td><td>58.3&#8239;%</td><td>150.0</td><td>100.0</td><td><span class="na">not measured</span></td><td><span class="na">not measured</span></td><td><span class="na">not measured</span></td><td>346.7</td>'
# the job: the slowest rank's wall, energy summed with compare's bound, imbalance 600 / 450
"$KJ" compare "$T/job.kjdb" --json >"$T/c.json" 2>/dev/null
unc=$(fig "$(jq "$T/c.json" "j['job']['energy_unc_mj']")" 1)
need "$J" '<th class="l">time (the slowest rank'"'"'s wall)</th><td>1,200.0&#8239;µs</td><td class="l">rank 1 (GPU 1)</td>'
need "$J" "<th class=\"l\">energy, summed over the GPUs</th><td>846.7&#8239;mJ</td><td class=\"l\">± $unc&#8239;mJ (the GPUs' bounds added), 2 GPU(s), each once"
need "$J" '<th class="l">load imbalance</th><td>1.333</td>'
need "$J" '<th class="l">GPU types</th><td>one type</td>'
need "$J" '<th class="l">ranks that died</th><td>0</td>'
lack "$J" 'different GPU types'
# no NCCL calls in this run: the two NCCL columns not measured, and the notes say why, per rank
[ "$(grep -c '(GPU [01]): NCCL bytes not known: ' "$J")" = 2 ] || fail "ranks: the NCCL bytes' reason is not said per rank"
# the chart: one bar group per rank, wall / busy / NCCL / exposed
[ "$(sed -n '/id="chart-ranks"/,/<\/svg>/p' "$J" | grep -c 'text-anchor="end">rank ')" = 2 ] || fail "chart-ranks: not one group per rank"
need "$J" $'wall: 1200.000 µs\nGPU busy (its own GPU): 700.000 µs\nNCCL kernels: 150.000 µs\nNCCL exposed (no compute overlapped): 100.000 µs'

# rank 1 on another GPU type, died, its GPU without power samples
$GEN -o "$T/odd.kjdb" --kernels 0 >/dev/null
$MK job "$T/odd.kjdb" odd
expect 0 "$KJ" report "$T/odd.kjdb" -o "$T/odd.html" --quiet
O=$T/odd.html
page_ok "$O"
need "$O" '<th class="l">GPU types</th><td>mixed</td><td class="l">NVIDIA H200, NVIDIA H100 80GB HBM3</td>'
need "$O" 'the ranks run on different GPU types (NVIDIA H200, NVIDIA H100 80GB HBM3)'
need "$O" '<li>rank 1 (GPU 1) (pid 102) died: ended by SIGTERM from pid 100 (torchrun)</li>'
need "$O" '<li>rank 1 (GPU 1): energy not measured: '
lack "$O" 'rank 0 (GPU 0): energy not measured'
need "$O" '<th class="l">energy, summed over the GPUs</th><td><span class="na">not measured</span></td><td class="l">some GPU of the job has no energy figure'
need "$O" '<th class="l">ranks that died</th><td>1</td>'

# ---- runs that are neither: no section (the shipped run's page is otherwise main's)
expect 0 "$KJ" report "$SRC/examples/runs/bloom560m.kjdb" -o "$T/bloom.html" --quiet
$GEN -o "$T/plain.kjdb" --kernels 300 --nvtx 10 --power 80 --devices 2 >/dev/null
expect 0 "$KJ" report "$T/plain.kjdb" -o "$T/plain.html" --quiet
for p in "$T/bloom.html" "$T/plain.html"; do
	page_ok "$p"
	lack "$p" 'id="capture"'
	lack "$p" 'id="ranks"'
done
finish
