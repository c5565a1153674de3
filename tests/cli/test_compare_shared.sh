#!/usr/bin/env bash
# compare and info on a shared GPU: runs built here with known powers and known intervals of
# another process. 10 forwards of 10 ms, 100 ms apart; the GPU draws 200 W, 300 W while the other
# process works. An older run (no watch tables) compares exactly as before.
# usage: test_compare_shared.sh KJOULE SRC_DIR BUILD_DIR
set -u
kj=$1 src=$2
. "$(dirname "$0")/lib.sh"
# mk DB WATCH FOREIGN_ITERATIONS: WATCH is none, processes or blind
mk() {
	python3 - "$dir/spec.json" "$2" "$3" <<'PY'
import json, sys
watch, nf = sys.argv[2], int(sys.argv[3])
mig = watch == "mig"
watch = "processes" if mig else watch
k, n, fa = [], [], []
for i in range(10):
    t = 10_000_000_000 + i * 100_000_000
    n.append({"name": "forward", "start": t, "end": t + 10_000_000})
    k.append({"name": "_Z4gemmv", "start": t + 1_000_000, "end": t + 9_000_000, "unique": "g"})
    if i < nf:
        fa.append({"pid": 777 + (i % 2), "name": "python3", "start": t - 20_000_000, "end": t + 5_000_000})
spec = {"kernels": k, "nvtx": n}
if watch != "none":
    spec["watch"] = {"state": watch, "note": "other processes cannot be seen here: the driver did not"
                     " list the processes on GPU 0 (Insufficient Permissions, NVML error 4)" if watch == "blind" else None,
                     "mig": 1 if mig else 0}
    spec["foreign_activity"] = fa if watch == "processes" else []
json.dump(spec, open(sys.argv[1], "w"))
PY
	python3 "$src/tests/tools/kjgen.py" -o "$1" --spec "$dir/spec.json" >/dev/null || return 1
	python3 - "$1" "$3" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1]); nf = int(sys.argv[2])
dev = db.execute("SELECT min(id) FROM device").fetchone()[0]
if dev is None:
    db.execute("INSERT INTO device(id, uuid, name) VALUES(1, 'GPU-test', 'test')"); dev = 1
db.execute("UPDATE kernel SET device_id = ?", (dev,))
db.execute("UPDATE foreign_activity SET device_id = ?", (dev,)) if db.execute(
    "SELECT count(*) FROM sqlite_master WHERE name='foreign_activity'").fetchone()[0] else None
rows, e = [], 0.0
for i in range(2400):
    t = i * 5_000_000
    it = (t - 10_000_000_000) // 100_000_000
    w = 300 if 0 <= it < nf else 200
    e += w * 5
    rows.append((dev, t, w * 1000, w * 1000, int(e), 1))
db.executemany("INSERT INTO power_sample(device_id, t_ns, power_mw, power_avg_mw, energy_mj,"
               " energy_updated) VALUES(?,?,?,?,?,?)", rows)
db.commit()
PY
}
val() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); [v := v[k] for k in sys.argv[2].split(".")]; print("null" if v is None else (round(v, 2) if isinstance(v, float) else v))' "$@"; }

mk "$dir/old.kjdb" none 4 && "$kj" compare "$dir/old.kjdb" --skip 0 --json >"$dir/old.json" 2>/dev/null
"$kj" compare "$dir/old.kjdb" --skip 0 >"$dir/old.txt" 2>/dev/null
check "old run: energy of all iterations (4 x 3 J + 6 x 2 J)/10 = 2.4 J" '[ "$(val "$dir/old.json" energy_measured_j)" = 2.4 ]'
check "old run: shared_gpu says not watched" '[ "$(val "$dir/old.json" shared_gpu.watched)" = no ] && [ "$(val "$dir/old.json" shared_gpu.iterations_with_other_processes)" = null ]'
check "old run: the text never says no other process" '! grep -qi "other process" "$dir/old.txt"'
check "old run: info says not watched" '"$kj" info "$dir/old.kjdb" | grep -q "not watched"'

mk "$dir/alone.kjdb" processes 0 && "$kj" compare "$dir/alone.kjdb" --skip 0 --json >"$dir/alone.json" 2>/dev/null
"$kj" compare "$dir/alone.kjdb" --skip 0 >"$dir/alone.txt" 2>/dev/null
check "watched, alone: fraction 0" '[ "$(val "$dir/alone.json" shared_gpu.fraction_with_other_processes)" = 0.0 ]'
check "watched, alone: the text says none was listed" 'grep -q "no other process was listed on the GPU during the 10 measured" "$dir/alone.txt"'
mk "$dir/old0.kjdb" none 0 && "$kj" compare "$dir/old0.kjdb" --skip 0 >"$dir/old0.txt" 2>/dev/null
check "an older run compares identically: the same text but for the one watch line" \
	'diff <(grep -v "no other process was listed" "$dir/alone.txt" | sed "s#$dir/alone#X#g") <(sed "s#$dir/old0#X#g" "$dir/old0.txt") >/dev/null'
"$kj" compare "$dir/old0.kjdb" --skip 0 --json >"$dir/old0.json" 2>/dev/null
check "an older run compares identically: the same JSON but for shared_gpu and the file name" \
	'python3 -c "import json,sys; a,b=[json.load(open(f)) for f in sys.argv[1:]]; [d.pop(k,None) for d in (a,b) for k in (\"shared_gpu\",\"file\",\"run\",\"path\")]; sys.exit(a!=b)" "$dir/alone.json" "$dir/old0.json"'

# the other process worked on a second GPU, not the run's: nothing is shared
mk "$dir/beside.kjdb" processes 4 && python3 -c 'import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); d.execute("INSERT INTO device(id, uuid, name) VALUES(9, \"GPU-beside\", \"test\")"); d.execute("UPDATE foreign_activity SET device_id = 9"); d.commit()' "$dir/beside.kjdb"
"$kj" compare "$dir/beside.kjdb" --skip 0 --json >"$dir/beside.json" 2>/dev/null
check "another process on a GPU the run did not use: fraction 0" '[ "$(val "$dir/beside.json" shared_gpu.fraction_with_other_processes)" = 0.0 ]'
mk "$dir/shared.kjdb" processes 4 && "$kj" compare "$dir/shared.kjdb" --skip 0 --json >"$dir/shared.json" 2>/dev/null
"$kj" compare "$dir/shared.kjdb" --skip 0 >"$dir/shared.txt" 2>/dev/null
check "4 of 10 iterations with another process: fraction 0.4" '[ "$(val "$dir/shared.json" shared_gpu.fraction_with_other_processes)" = 0.4 ]'
check "the pids are named" '[ "$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[\"shared_gpu\"][\"other_pids\"])" "$dir/shared.json")" = "[777, 778]" ]'
check "energy from the 6 clean iterations: 2.0 J" '[ "$(val "$dir/shared.json" energy_measured_j)" = 2.0 ] && [ "$(val "$dir/shared.json" shared_gpu.energy_from)" = iterations_without_other_processes ] && [ "$(val "$dir/shared.json" shared_gpu.iterations_for_energy)" = 6 ]'
check "the text says who, how often, and which iterations the energy uses" \
	'grep -q "shared GPU: other processes (pids 777, 778) were active during 40 % of the measured iterations (4 of 10); the energy figures below use the 6 iterations without them" "$dir/shared.txt"'
"$kj" report "$dir/shared.kjdb" -o "$dir/shared.html" --quiet 2>/dev/null
check "the report says other processes were on the GPU, and who" \
	'grep -q "Other processes on the GPU" "$dir/shared.html" && grep -q "777" "$dir/shared.html"'
"$kj" diff "$dir/shared.kjdb" "$dir/shared.kjdb" --skip 0 --json >"$dir/d.json" 2>/dev/null
check "diff takes energy from the same 6 clean iterations as compare (2.0 J, n = 6)" \
	'python3 -c "
import json, sys
e = [m for m in json.load(open(sys.argv[1]))[\"totals\"] if m[\"metric\"] == \"energy_measured_j\"][0]
sys.exit(not (e[\"a_n\"] == 6 and abs(e[\"a_mean\"] - 2.0) < 0.01))
" "$dir/d.json"'
"$kj" report "$dir/old.kjdb" -o "$dir/old.html" --quiet 2>/dev/null
check "the report of an older run says nothing of other processes" '! grep -q "Other processes on the GPU" "$dir/old.html"'
check "energy_report.json carries shared_gpu" '"$kj" compare "$dir/shared.kjdb" --skip 0 -o "$dir/out" >/dev/null 2>&1; [ "$(val "$dir/out/energy_report.json" shared_gpu.iterations_with_other_processes)" = 4 ]'
check "info names the other processes" '"$kj" info "$dir/shared.kjdb" | grep -q "gpu shared: shared GPU: other processes (pids 777, 778)"'

mk "$dir/mostly.kjdb" processes 8 && "$kj" compare "$dir/mostly.kjdb" --skip 0 --json >"$dir/mostly.json" 2>/dev/null
"$kj" compare "$dir/mostly.kjdb" --skip 0 >"$dir/mostly.txt" 2>/dev/null
check "2 clean iterations are too few: all are used (2.8 J) and it says so" \
	'[ "$(val "$dir/mostly.json" energy_measured_j)" = 2.8 ] && [ "$(val "$dir/mostly.json" shared_gpu.energy_from)" = all_iterations ] && grep -q "80 % of the measured iterations (8 of 10); energy figures include their work" "$dir/mostly.txt"'

mk "$dir/blind.kjdb" blind 0 && "$kj" compare "$dir/blind.kjdb" --skip 0 --json >"$dir/blind.json" 2>/dev/null
"$kj" compare "$dir/blind.kjdb" --skip 0 >"$dir/blind.txt" 2>/dev/null
check "blind: cannot be seen here, never none" 'grep -q "other processes cannot be seen here" "$dir/blind.txt" && ! grep -q "no other process" "$dir/blind.txt"'
check "blind: JSON says cannot_see, no fraction" '[ "$(val "$dir/blind.json" shared_gpu.watched)" = cannot_see ] && [ "$(val "$dir/blind.json" shared_gpu.fraction_with_other_processes)" = null ]'
check "blind: info says cannot be seen here" '"$kj" info "$dir/blind.kjdb" | grep -q "cannot be seen here"'
mk "$dir/mig.kjdb" mig 0 && "$kj" compare "$dir/mig.kjdb" --skip 0 --json >"$dir/mig.json" 2>/dev/null
check "MIG: the text says the energy is the whole GPU's" '"$kj" compare "$dir/mig.kjdb" --skip 0 2>/dev/null | grep -q "MIG is on: power and energy are the whole GPU.s (card.s), not this instance.s"'
check "MIG: energy_scope whole_gpu; without MIG gpu" '[ "$(val "$dir/mig.json" shared_gpu.energy_scope)" = whole_gpu ] && [ "$(val "$dir/alone.json" shared_gpu.energy_scope)" = gpu ]'
exit $fail
