#!/usr/bin/env bash
# compare's idle term: the awake idle power read from the run's quiet full-clock readings, with
# the deep idle power as fallback. Runs built here with known powers.
# usage: test_compare_idle.sh KJOULE SRC_DIR BUILD_DIR
set -u
kj=$1 src=$2
. "$(dirname "$0")/lib.sh"
# 3 forwards of 10 ms at 10 s, 10.1 s, 10.2 s, each with one 1 ms kernel
python3 - "$dir/spec.json" <<'PY'
import json, sys
k, n = [], []
for i in range(3):
    t = 10_000_000_000 + i * 100_000_000
    n.append({"name": "forward", "start": t, "end": t + 10_000_000})
    k.append({"name": "_Z4gemmv", "start": t + 1_000_000, "end": t + 2_000_000, "unique": "g"})
json.dump({"kernels": k, "nvtx": n}, open(sys.argv[1], "w"))
PY
mk() { # mk DB QUIET_CLOCK_MHZ: readings every 5 ms from 0 to 12 s; 80 W at 800 MHz for the first
       # 2 s, then 125 W at QUIET_CLOCK_MHZ, but 200 W at 1980 MHz from 10 s to 10.3 s (the forwards)
	python3 "$src/tests/tools/kjgen.py" -o "$1" --spec "$dir/spec.json" >/dev/null || return 1
	python3 - "$1" "$2" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1]); quiet_clk = int(sys.argv[2])
dev = db.execute("SELECT min(id) FROM device").fetchone()[0]
if dev is None:
    db.execute("INSERT INTO device(id, uuid, name) VALUES(1, 'GPU-test', 'test')"); dev = 1
db.execute("UPDATE kernel SET device_id = ?", (dev,))
rows, e = [], 0.0
for i in range(2400):
    t = i * 5_000_000
    w, clk = (80, 800) if t < 2e9 else (200, 1980) if 10e9 <= t < 10.3e9 else (125, quiet_clk)
    e += w * 5  # mJ per 5 ms
    rows.append((dev, t, w * 1000, w * 1000, int(e), 1 if i % 20 == 0 else 0, clk))
db.executemany("INSERT INTO power_sample(device_id, t_ns, power_mw, power_avg_mw, energy_mj,"
               " energy_updated, sm_clock_mhz) VALUES(?,?,?,?,?,?,?)", rows)
db.execute("INSERT INTO idle_power(device_id, median_mw, p10_mw, p90_mw, samples, measured_ns, source)"
           " VALUES(?, 80000, 79000, 81000, 100, 0, 'test')", (dev,))
db.commit()
PY
}
val() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print("null" if v is None else (round(v, 1) if isinstance(v, float) else v))' "$@"; }

mk "$dir/awake.kjdb" 1980 && "$kj" compare "$dir/awake.kjdb" --skip 0 --json > "$dir/awake.json" 2>/dev/null
check "basis is awake when quiet full-clock readings exist" '[ "$(val "$dir/awake.json" idle_power_basis)" = awake ]'
check "awake idle is the quiet full-clock power (125 W)" '[ "$(val "$dir/awake.json" awake_idle_power_w)" = 125.0 ]'
check "deep idle reported beside it (80 W)" '[ "$(val "$dir/awake.json" deep_idle_power_w)" = 80.0 ]'
check "idle term uses 125 W: 125 W x 9 ms = 1.125 J" '[ "$(val "$dir/awake.json" energy_idle_j)" = 1.1 ]'

mk "$dir/deep.kjdb" 900 && "$kj" compare "$dir/deep.kjdb" --skip 0 --json > "$dir/deep.json" 2>/dev/null
check "basis falls back to deep idle without quiet full-clock readings" '[ "$(val "$dir/deep.json" idle_power_basis)" = deep ]'
check "awake idle unknown then" '[ "$(val "$dir/deep.json" awake_idle_power_w)" = null ]'
check "text report names the basis" '"$kj" compare "$dir/deep.kjdb" --skip 0 2>/dev/null | grep -q "deep idle 80.0 W"'

# no power samples, only the idle_power row: the idle term is the deep idle power, named as such
mk "$dir/nosamples.kjdb" 900 && python3 -c 'import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); d.execute("DELETE FROM power_sample"); d.commit()' "$dir/nosamples.kjdb"
"$kj" compare "$dir/nosamples.kjdb" --skip 0 --json > "$dir/nosamples.json" 2>/dev/null
check "without samples the idle term is the deep idle power (80 W)" '[ "$(val "$dir/nosamples.json" idle_power_w)" = 80.0 ]'
check "and it is reported as deep idle (80 W)" '[ "$(val "$dir/nosamples.json" deep_idle_power_w)" = 80.0 ]'
check "text report does not call it unknown" \
	'"$kj" compare "$dir/nosamples.kjdb" --skip 0 > "$dir/nosamples.txt" 2>/dev/null && ! grep -q "idle power unknown" "$dir/nosamples.txt"'
# the gap split: a kernel replayed at 0.8 ms and 400 W (320 mJ a launch) that ran 1 ms in situ is
# 0.400 J at its replayed power over its in-situ time; power_mw absent, the energy loop's own
# launches and seconds give the same power
for pw in 400000 NULL; do
	rm -f "$dir/split.kjdb"; mk "$dir/split.kjdb" 1980 && python3 - "$dir/split.kjdb" "$pw" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1]); u = db.execute("SELECT max(unique_id) FROM kernel").fetchone()[0]
db.execute("INSERT INTO replay_kernel(unique_id, cache, runs, median_ns, status) VALUES(?, 'warm', 10, 800000, 'ok')", (u,))
db.execute("INSERT INTO replay_energy(unique_id, unroll, launches, seconds, energy_mj_per_launch, power_mw)"
           " VALUES(?, 10, 1250, 1.0, 320.0, " + sys.argv[2] + ")", (u,))
db.commit()
PY
	"$kj" compare "$dir/split.kjdb" --skip 0 --json > "$dir/split.json" 2>/dev/null
	check "power $pw: kernels at replayed energy 0.32 J + idle 1.125 J" '[ "$(val "$dir/split.json" energy_predicted_j)" = 1.4 ]'
	check "power $pw: at replayed power x in-situ time 0.40 J + idle = 1.525 J" \
		'python3 -c "import json,sys; v=json.load(open(sys.argv[1]))[\"energy_predicted_insitu_time_j\"]; sys.exit(abs(v-1.525)>0.002)" "$dir/split.json"'
	check "power $pw: the text splits the gap into time and power" \
		'"$kj" compare "$dir/split.kjdb" --skip 0 2>/dev/null | grep -q "replayed power × in-situ time + idle .*points of the gap are time"'
done
# a second GPU sampled beside the run (another job's, at 400 W) that none of the run's work ran on:
# the measured energy and the idle term are the first GPU's alone
mk "$dir/other_gpu.kjdb" 1980 && python3 - "$dir/other_gpu.kjdb" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("INSERT INTO device(id, uuid, name) VALUES(77, 'GPU-other', 'test')")
rows = db.execute("SELECT t_ns, energy_updated, sm_clock_mhz FROM power_sample ORDER BY t_ns").fetchall()
db.executemany("INSERT INTO power_sample(device_id, t_ns, power_mw, power_avg_mw, energy_mj, energy_updated,"
               " sm_clock_mhz) VALUES(77,?,400000,400000,?,?,?)",
               [(t, 2000 * i, u, c) for i, (t, u, c) in enumerate(rows)])
db.commit()
PY
"$kj" compare "$dir/other_gpu.kjdb" --skip 0 --json > "$dir/other_gpu.json" 2>/dev/null
check "a GPU the run did not use leaves the measured energy as it was" \
	'[ "$(val "$dir/other_gpu.json" energy_measured_j)" = "$(val "$dir/awake.json" energy_measured_j)" ]'
check "and the idle term too (125 W)" '[ "$(val "$dir/other_gpu.json" awake_idle_power_w)" = 125.0 ]'
exit $fail
