#!/usr/bin/env bash
# Clock and throttle state beside the energy figures: the replay worker's clock fields stored in
# replay_energy / replay_sequence (through the stand-in workers, no GPU), kernels --format jsonl's
# replay_energy_clock, and compare's judgement on the shipped eager run
# (examples/runs/bloom560m.kjdb) with clock states set here: a throttled program against clean
# replays, and the reverse, are not judged and say why; both clean leaves every figure as it was.
# usage: test_compare_clocks.sh KJOULE SRC_DIR BUILD_DIR
set -u
kj=$1 src=$2
. "$(dirname "$0")/lib.sh"
run="$src/examples/runs/bloom560m.kjdb"
kw="$src/tests/tools/replay_kernel_standin.py"
jq() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); exec("r=" + sys.argv[2]); print(r)' "$@"; }

# --- storage: what the worker sends is stored; an older worker's lines store NULL ---
cp "$run" "$dir/s.kjdb"
python3 -c "import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); [d.execute(s) for s in ('DELETE FROM replay_kernel', 'DELETE FROM replay_energy')]; d.commit()" "$dir/s.kjdb"
STANDIN_REASONS=0x44 KJ_REPLAY_WORKER="$kw" "$kj" replay "$dir/s.kjdb" --energy --no-sequence --cache warm >/dev/null 2>&1; rc=$?
ne=$(q "$dir/s.kjdb" "SELECT count(*) FROM replay_energy")
check "replay --energy stores each window's SM clock and reason mask (columns added to the shipped run)" \
	'[ $rc -eq 0 ] && [ "$ne" -gt 0 ] && [ "$(q "$dir/s.kjdb" "SELECT count(*) FROM replay_energy WHERE throttle_reasons = 68 AND
	 sm_clock_mean_mhz = 1755 AND sm_clock_min_mhz = 1600 AND sm_clock_max_mhz = 1980")" = "$ne" ]'
"$kj" kernels "$dir/s.kjdb" --format jsonl > "$dir/k.jsonl"
check "kernels jsonl: the replayed kernels' replay_energy_clock says throttled and why, the others null" \
	'python3 - "$dir/k.jsonl" "$ne" <<-"PY"
	import json, sys
	rows = [json.loads(l) for l in open(sys.argv[1])]
	marked = [r["replay_energy_clock"] for r in rows if r["replay_energy_clock"] is not None]
	ok = len(marked) == int(sys.argv[2]) and all(m["throttled"] is True and m["throttle_reasons"] == "SW power cap, HW thermal slowdown"
	     and m["sm_clock_mean_mhz"] == 1755 and m["sm_clock_min_mhz"] == 1600 and m["sm_clock_max_mhz"] == 1980 for m in marked)
	ok = ok and all(r["replay_energy_clock"] is None for r in rows if r["kind"] != "kernel")
	sys.exit(not ok)
	PY'
STANDIN_B2B=1 KJ_REPLAY_WORKER="$kw" "$kj" replay "$dir/s.kjdb" --energy --no-sequence --cache warm >/dev/null 2>&1
check "a kernel paced under the cap: its back-to-back window stored beside (replay_energy_b2b)" \
	'[ "$(q "$dir/s.kjdb" "SELECT count(*) FROM replay_energy_b2b b JOIN replay_kernel k ON k.unique_id = b.unique_id AND
	 k.cache = '"'"'warm'"'"' WHERE b.sm_clock_mean_mhz = 1459 AND abs(b.ns_per_launch - 1.3 * k.median_ns) < 0.01")" = "$ne" ]'
KJ_REPLAY_WORKER="$kw" "$kj" replay "$dir/s.kjdb" --energy --no-sequence --cache warm >/dev/null 2>&1
check "... and a later replay measured back to back drops it" '[ "$(q "$dir/s.kjdb" "SELECT count(*) FROM replay_energy_b2b")" = 0 ]'
check "an older worker's energy lines (no clock fields) store NULL, never 0" \
	'[ "$(q "$dir/s.kjdb" "SELECT count(*) FROM replay_energy WHERE throttle_reasons IS NULL AND sm_clock_mean_mhz IS NULL")" = "$ne" ]'
"$kj" compare "$dir/s.kjdb" > "$dir/s.txt" 2>/dev/null
check "... and compare says no window recorded the reasons, judging nothing by them" \
	'grep -q "per-kernel replays    no window recorded the clocks-event reasons" "$dir/s.txt" && ! grep -q "^  !.*throttled" "$dir/s.txt"'
STANDIN_MJ=271 STANDIN_REASONS=4 KJ_REPLAY_WORKER="$src/tests/tools/replay_worker_standin.py" KJ_STANDIN_KJOULE="$kj" \
	"$kj" replay "$dir/s.kjdb" --sequence --graph --energy >/dev/null 2>&1; rc=$?
check "replay --sequence --energy stores the clock state of each mode's energy window" \
	'[ $rc -eq 0 ] && [ "$(q "$dir/s.kjdb" "SELECT count(*) FROM replay_sequence WHERE energy_mj IS NOT NULL AND throttle_reasons = 4 AND sm_clock_mean_mhz = 1755")" -ge 1 ] &&
	 [ "$(q "$dir/s.kjdb" "SELECT count(*) FROM replay_sequence WHERE energy_mj IS NULL AND throttle_reasons IS NOT NULL")" = 0 ]'

# --- compare: clock states set on copies of the shipped run (its replays' rows as measured) ---
# setclk DB PROGRAM_MASK KERNELS_MASK SEQUENCE_MASK: every slow power sample of the program, every
# replay_energy row, every replay_sequence row with an energy gets that mask (its SM clock unchanged)
setclk() {
	cp "$run" "$1" && python3 - "$@" <<-"PY"
	import sqlite3, sys
	db = sqlite3.connect(sys.argv[1]); prog, kern, seq = (int(a, 0) for a in sys.argv[2:5])
	for t in ("replay_energy", "replay_sequence"):
	    for c, ty in (("sm_clock_mean_mhz", "REAL"), ("sm_clock_min_mhz", "INTEGER"), ("sm_clock_max_mhz", "INTEGER"),
	                  ("throttle_reasons", "INTEGER")):
	        db.execute(f"ALTER TABLE {t} ADD COLUMN {c} {ty}")
	db.execute("UPDATE power_sample SET throttle_reasons = ? WHERE throttle_reasons IS NOT NULL", (prog,))
	db.execute("UPDATE replay_energy SET throttle_reasons = ?, sm_clock_mean_mhz = 1980, sm_clock_min_mhz = 1965,"
	           " sm_clock_max_mhz = 1980", (kern,))
	db.execute("UPDATE replay_sequence SET throttle_reasons = ?, sm_clock_mean_mhz = 1980 WHERE energy_mj IS NOT NULL", (seq,))
	db.commit()
	PY
}
"$kj" compare "$run" > "$dir/base.txt" 2>/dev/null
"$kj" compare "$run" --json > "$dir/base.json" 2>/dev/null
check "the shipped run (replayed before clock state was stored): replays not recorded, mismatch unknown, judged as before" \
	'[ "$(jq "$dir/base.json" "d[\"energy_clock_state\"][\"mismatch\"], d[\"energy_clock_state\"][\"replay_kernels\"][\"recorded\"], d[\"energy_clock_state\"][\"program\"][\"state\"], d[\"energy_error_judgeable\"]")" = "(None, False, '"'"'clean'"'"', True)" ] &&
	 grep -q "per-kernel replays    not recorded (replayed by an older kjoule" "$dir/base.txt"'

setclk "$dir/thr.kjdb" 0x5 0x1 0x0
"$kj" compare "$dir/thr.kjdb" > "$dir/thr.txt" 2>/dev/null
"$kj" compare "$dir/thr.kjdb" --json > "$dir/thr.json" 2>/dev/null
check "throttled program: explained_fraction is said to read low (text and explained_program_capped)" \
	'grep -q "^  ! the program ran capped or throttled (SW power cap in 7 of 7 readings.*explained_fraction reads low" "$dir/thr.txt" &&
	 [ "$(jq "$dir/thr.json" "d[\"explained_program_capped\"]")" = True ]'
check "... and not of the shipped run, whose program ran clean" \
	'! grep -q "the program ran capped or throttled" "$dir/base.txt" && [ "$(jq "$dir/base.json" "d[\"explained_program_capped\"]")" = False ]'
check "throttled program, clean replays: both energy errors not judged, the reason said" \
	'grep -q "program               throttled: SW power cap in 7 of 7 readings" "$dir/thr.txt" &&
	 grep -q "per-kernel replays    clean: no capping or throttling in 79 windows; SM clock median 1980 MHz (1965-1980)" "$dir/thr.txt" &&
	 [ "$(grep -c "error vs measured  *not judged ([-+0-9.]*%: the program ran throttled (SW power cap) and its \(per-kernel replays\|iteration replay\) did not)" "$dir/thr.txt")" = 2 ] &&
	 ! grep -q "error vs measured  *[-+][0-9]" "$dir/thr.txt" && ! grep -q "known only to" "$dir/thr.txt"'
check "... JSON: mismatch true, the reasons named, energy_error_judgeable false, the figures as before" \
	'python3 - "$dir/thr.json" "$dir/base.json" <<-"PY"
	import json, sys
	d, b = (json.load(open(p)) for p in sys.argv[1:])
	k = d["energy_clock_state"]
	ok = k["mismatch"] is True and k["sequence_mismatch"] is True and d["energy_error_judgeable"] is False
	ok = ok and k["program"]["throttle_reasons"] == ["SW power cap"] and k["program"]["other_reasons"] == ["GPU idle"]
	ok = ok and k["program"]["throttled_fraction"] == 1.0 and k["replay_kernels"]["state"] == "clean"
	ok = ok and k["not_judged_reason"] == "the program ran throttled (SW power cap) and its per-kernel replays did not"
	ok = ok and d["energy_error_pct"] == b["energy_error_pct"] and d["energy_predicted_j"] == b["energy_predicted_j"]
	sys.exit(not ok)
	PY'

# --- explained_fraction at the program's clocks: the throttled copy, the program's readings at
# 1800 MHz, and the largest replayed kernel's back-to-back window under the cap at 1500 MHz taking
# 1.2 (b2b1) and 1.4 (b2b2) times its warm replay: the adjustment goes as the slope, so b2b2's is
# twice b2b1's; without the window (thr) nothing is computed, and says so
check "throttled program without a back-to-back window: no explained_fraction at the program's clocks, said why" \
	'grep -q "explained_fraction at the program.s clocks: not computed: no kernel has a back-to-back window" "$dir/thr.txt" &&
	 [ "$(jq "$dir/thr.json" "d[\"explained_fraction_program_clocks\"]")" = None ]'
b2b() {
	cp "$dir/thr.kjdb" "$1" && python3 - "$1" "$2" <<-"PY"
	import sqlite3, sys
	db = sqlite3.connect(sys.argv[1]); ratio = float(sys.argv[2])
	db.execute("UPDATE power_sample SET sm_clock_mhz = 1800 WHERE sm_clock_mhz IS NOT NULL")
	u, warm = db.execute("SELECT r.unique_id, r.median_ns FROM replay_kernel r JOIN (SELECT unique_id, count(*) n FROM kernel"
	                     " GROUP BY unique_id) k USING (unique_id) WHERE r.cache = 'warm' ORDER BY k.n * r.median_ns DESC LIMIT 1").fetchone()
	db.execute("CREATE TABLE replay_energy_b2b(unique_id INTEGER PRIMARY KEY, ns_per_launch REAL, energy_mj_per_launch REAL,"
	           " sm_clock_mean_mhz REAL, replayed_at TEXT)")
	db.execute("INSERT INTO replay_energy_b2b VALUES(?, ?, 1.0, 1500, 'now')", (u, warm * ratio))
	db.commit()
	PY
	"$kj" compare "$1" --json > "$1.json" 2>/dev/null
	"$kj" compare "$1" > "$1.txt" 2>/dev/null
}
b2b "$dir/b2b1.kjdb" 1.2
b2b "$dir/b2b2.kjdb" 1.4
# above: x the figure, e explained_fraction, sh the share of kernel time moved
above() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); x=d["explained_fraction_program_clocks"]; sh=d["explained_program_clocks_kernel_share"]; sys.exit(not (x is not None and x > d["explained_fraction"] and 0 < sh < 1))' "$1"; }
# doubles: the second file's adjustment is twice the first's
doubles() { python3 -c 'import json,sys; a,b=(json.load(open(p)) for p in sys.argv[1:]); d1=a["explained_fraction_program_clocks"]-a["explained_fraction"]; d2=b["explained_fraction_program_clocks"]-b["explained_fraction"]; sys.exit(not (d1 > 1e-4 and abs(d2/d1-2) < 0.01))' "$1" "$2"; }
check "a kernel measured under the cap: explained_fraction at the program's clocks above explained_fraction, in text and JSON" \
	'grep -q "explained_fraction at the program.s clocks = [0-9.]*  (1 kernel(s)" "$dir/b2b1.kjdb.txt" && above "$dir/b2b1.kjdb.json"'
check "... its adjustment doubles with the slope (capped window 1.4 against 1.2 times the warm replay)" \
	'doubles "$dir/b2b1.kjdb.json" "$dir/b2b2.kjdb.json"'

setclk "$dir/rev.kjdb" 0x1 0x40 0x0
"$kj" compare "$dir/rev.kjdb" > "$dir/rev.txt" 2>/dev/null
"$kj" compare "$dir/rev.kjdb" --json > "$dir/rev.json" 2>/dev/null
check "clean program, throttled per-kernel replays: the kernel-sum error not judged, the iteration replay's judged" \
	'grep -q "error vs measured  *not judged ([-+0-9.]*%: its per-kernel replays ran throttled (HW thermal slowdown) and the program did not)" "$dir/rev.txt" &&
	 [ "$(grep -c "error vs measured  *[-+][0-9]" "$dir/rev.txt")" = 1 ] &&
	 [ "$(jq "$dir/rev.json" "d[\"energy_clock_state\"][\"mismatch\"], d[\"energy_clock_state\"][\"sequence_mismatch\"], d[\"energy_error_judgeable\"]")" = "(True, False, False)" ]'

setclk "$dir/clean.kjdb" 0x1 0x0 0x0
"$kj" compare "$dir/clean.kjdb" > "$dir/clean.txt" 2>/dev/null
"$kj" compare "$dir/clean.kjdb" --json > "$dir/clean.json" 2>/dev/null
check "both clean: mismatch false, and text and JSON are the shipped run's but for the clock state" \
	'python3 - "$dir/clean.json" "$dir/base.json" "$dir/clean.txt" "$dir/base.txt" <<-"PY"
	import json, re, sys
	c, b = (json.load(open(p)) for p in sys.argv[1:3])
	ok = c["energy_clock_state"]["mismatch"] is False and c["energy_clock_state"]["sequence_mismatch"] is False
	c.pop("energy_clock_state"); b.pop("energy_clock_state")
	ok = ok and c == b
	clock = re.compile(r"^(  clock state |    (program|per-kernel replays|iteration replay)  )")
	ct, bt = ([l for l in open(p).read().splitlines()[1:] if not clock.match(l)] for p in sys.argv[3:5])
	sys.exit(not (ok and ct == bt))
	PY'
exit $fail
