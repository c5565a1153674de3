#!/usr/bin/env bash
# replay --energy measures each kernel's energy with cold L2 too, for as many of the largest
# kernels as the energy windows' time holds at 0.5 s a window, and compare counts each kernel at
# the mean of its warm and cold energies. Without a GPU: the shipped eager run
# (examples/runs/bloom560m.kjdb) replayed by the stand-in worker (tests/tools/replay_kernel_standin.py:
# warm 0.4 mJ per 1000 + ID ns, cold 1.5 times that).
# usage: test_replay_cold_energy.sh KJOULE SRC_DIR BUILD_DIR
set -u
kj=$1 src=$2
. "$(dirname "$0")/lib.sh"
export KJ_REPLAY_WORKER="$src/tests/tools/replay_kernel_standin.py"
clean() { python3 -c "import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); [d.execute(s) for s in ('DELETE FROM replay_kernel', 'DELETE FROM replay_energy', 'DROP TABLE IF EXISTS replay_energy_cold')]; d.commit()" "$1"; }

# defaults: 40 s of windows at 0.25 s warm-up each; the energy kernels get cold windows while
# windows stay 0.5 s: floor((40 / 0.75 - NE) / 2) of them, largest first
cp "$src/examples/runs/bloom560m.kjdb" "$dir/a.kjdb" && clean "$dir/a.kjdb"
STANDIN_LOG="$dir/w.log" "$kj" replay "$dir/a.kjdb" --energy --no-sequence > "$dir/a.out" 2> "$dir/a.err"; rc=$?
ne=$(q "$dir/a.kjdb" "SELECT count(*) FROM replay_energy")
nc=$(q "$dir/a.kjdb" "SELECT count(*) FROM replay_energy_cold")
want=$(python3 -c "import sys; ne = int(sys.argv[1]); print(min(ne, int((40 / 0.75 - ne) / 2)))" "$ne")
check "defaults: $nc of the $ne energy kernels measured cold, as the pool holds ($want), and the line says so" \
	'[ $rc -eq 0 ] && [ "$ne" -gt 0 ] && [ "$nc" = "$want" ] && [ "$nc" -lt "$ne" ] &&
	 grep -q "energy for $ne at [0-9.]* s a window, the largest $nc also with cold L2 (two windows more each" "$dir/a.err"'
check "... the workers of the others were told --no-cold-energy, those of the cold ones not" \
	'grep -q -- "--energy.*--no-cold-energy" "$dir/w.log" && grep -- "--energy" "$dir/w.log" | grep -qv -- "--no-cold-energy"'
check "... the cold figures are the stand-in's (1.5 times warm)" \
	'[ "$(q "$dir/a.kjdb" "SELECT count(*) FROM replay_energy_cold c JOIN replay_energy e USING (unique_id) WHERE abs(c.energy_mj_per_launch - 1.5 * e.energy_mj_per_launch) < 1e-9")" = "$nc" ]'
check "... and not told --no-pace: a kernel that runs into the power cap back to back is measured spaced out" \
	'! grep -q -- "--no-pace" "$dir/w.log"'
cp "$src/examples/runs/bloom560m.kjdb" "$dir/p.kjdb" && clean "$dir/p.kjdb"
STANDIN_LOG="$dir/p.log" "$kj" replay "$dir/p.kjdb" --energy --no-sequence --back-to-back > /dev/null 2>&1; rc=$?
check "--back-to-back: every energy worker told --no-pace (energy back to back only)" \
	'[ $rc -eq 0 ] && [ "$(grep -c -- "--energy" "$dir/p.log")" -gt 0 ] &&
	 [ "$(grep -- "--energy" "$dir/p.log" | grep -vc -- "--no-pace")" = 0 ]'
check "... nor --pace-duty: the program's power samples show no capping" '! grep -q -- "--pace-duty" "$dir/w.log"'
# the program against the power cap: kernels capped back to back are measured again at the
# program's GPU busy share over its measured iterations, which replay says and passes on
cp "$src/examples/runs/bloom560m.kjdb" "$dir/cap.kjdb" && clean "$dir/cap.kjdb"
python3 -c "import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); d.execute('UPDATE power_sample SET throttle_reasons = 4 WHERE throttle_reasons IS NOT NULL'); d.commit()" "$dir/cap.kjdb"
STANDIN_LOG="$dir/cap.log" "$kj" replay "$dir/cap.kjdb" --energy --no-sequence > /dev/null 2> "$dir/cap.err"; rc=$?
"$kj" compare "$dir/cap.kjdb" --json > "$dir/cap.json" 2>/dev/null
check "a capped program: every energy worker told --pace-duty D, D its busy share (compare's busy over wall)" \
	'[ $rc -eq 0 ] && grep -q "the program ran against the power cap (7 of 7 readings capped" "$dir/cap.err" &&
	 python3 - "$dir/cap.log" "$dir/cap.json" <<-"PY"
	import json, re, sys
	lines = [l for l in open(sys.argv[1]) if "--energy" in l]
	duties = [float(m.group(1)) for l in lines for m in [re.search(r"--pace-duty (\S+)", l)] if m]
	j = json.load(open(sys.argv[2]))
	want = j["busy_us"] / j["wall_us"]
	sys.exit(not (lines and len(duties) == len(lines) and all(abs(d - want) < 0.01 * want for d in duties)))
	PY'
STANDIN_LOG="$dir/capb.log" "$kj" replay "$dir/cap.kjdb" --energy --no-sequence --back-to-back > /dev/null 2>&1
check "... and with --back-to-back none is" '! grep -q -- "--pace-duty" "$dir/capb.log"'
"$kj" compare "$dir/a.kjdb" --json > "$dir/a.json" 2>/dev/null
"$kj" compare "$dir/a.kjdb" > "$dir/a.txt" 2>&1
check "compare: each kernel at the mean, the rest at warm x 1.5; cold sum 1.5 x warm, mean 1.25 x" \
	'python3 -c "
import json, sys
j = json.load(open(sys.argv[1]))
w, c, m = j[\"energy_kernels_warm_j\"], j[\"energy_kernels_cold_j\"], j[\"energy_kernels_j\"]
ok = abs(j[\"energy_cold_ratio\"] - 1.5) < 1e-6 and abs(c - 1.5 * w) < 5e-3 * w and abs(m - 1.25 * w) < 5e-3 * w  # J to 3 places
sys.exit(not (ok and 0 < j[\"energy_cold_time_coverage\"] < 1))" "$dir/a.json" &&
	 grep -q "cold L2 (flushed) .*the rest at their warm energy × 1.500" "$dir/a.txt"'
# --energy-seconds given: every energy kernel cold
cp "$src/examples/runs/bloom560m.kjdb" "$dir/b.kjdb" && clean "$dir/b.kjdb"
"$kj" replay "$dir/b.kjdb" --energy --energy-seconds 0.3 --no-sequence > /dev/null 2> "$dir/b.err"; rc=$?
check "--energy-seconds: every energy kernel measured cold too" \
	'[ $rc -eq 0 ] && [ "$(q "$dir/b.kjdb" "SELECT count(*) FROM replay_energy_cold")" = "$(q "$dir/b.kjdb" "SELECT count(*) FROM replay_energy")" ] &&
	 grep -q "each also with cold L2" "$dir/b.err"'
# --cache warm: no cold windows; a later warm-only energy replay takes the stale cold rows away
"$kj" replay "$dir/b.kjdb" --energy --cache warm --no-sequence > /dev/null 2> "$dir/c.err"; rc=$?
check "--cache warm: no cold energy, and the earlier cold rows of the kernels measured again are gone" \
	'[ $rc -eq 0 ] && [ "$(q "$dir/b.kjdb" "SELECT count(*) FROM replay_energy_cold")" = 0 ] && ! grep -q "cold L2" "$dir/c.err"'
"$kj" compare "$dir/b.kjdb" --json > "$dir/b.json" 2>/dev/null
check "... and compare is back to the warm sum" \
	'python3 -c "
import json, sys
j = json.load(open(sys.argv[1]))
sys.exit(not (j[\"energy_kernels_cold_j\"] is None and j[\"energy_kernels_j\"] == j[\"energy_kernels_warm_j\"]))" "$dir/b.json"'
# the energies of a run without buffer snapshots are the fill's: replay says so, and a run with
# snapshots is not told
check "no snapshots: replay --energy says the kernels ran on the fill and how to trace" \
	'grep -q "holds no buffer snapshots.*kjoule run --snapshot" "$dir/a.err"'
cp "$src/examples/runs/bloom560m.kjdb" "$dir/s.kjdb" && clean "$dir/s.kjdb"
python3 -c "import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); d.execute(\"INSERT INTO snapshot(pid, address, bytes, correlation_id, codec, data, phase) VALUES(1, 4096, 4, 0, 'raw', x'01020304', 'before')\"); d.commit()" "$dir/s.kjdb"
"$kj" replay "$dir/s.kjdb" --energy --no-sequence > /dev/null 2> "$dir/s.err"
check "with snapshots: no such word" '! grep -q "holds no buffer snapshots" "$dir/s.err"'
exit $fail
