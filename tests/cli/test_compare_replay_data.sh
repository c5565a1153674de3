#!/usr/bin/env bash
# compare says what the per-kernel energy replays ran on (replay_energy.data, from the replay
# worker): the program's own saved buffers, other launches' saved buffers over kjoule's fill, or
# the fill alone; shares by the kept iterations' kernel time. Runs built here.
# usage: test_compare_replay_data.sh KJOULE SRC_DIR BUILD_DIR
set -u
kj=$1 src=$2
. "$(dirname "$0")/lib.sh"
# 3 forwards, each with a 3 ms kernel (gemm) and a 1 ms kernel (norm)
python3 - "$dir/spec.json" <<'PY'
import json, sys
k, n = [], []
for i in range(3):
    t = 10_000_000_000 + i * 100_000_000
    n.append({"name": "forward", "start": t, "end": t + 10_000_000})
    k.append({"name": "_Z4gemmv", "start": t + 1_000_000, "end": t + 4_000_000, "unique": "g"})
    k.append({"name": "_Z4normv", "start": t + 5_000_000, "end": t + 6_000_000, "unique": "n"})
json.dump({"kernels": k, "nvtx": n}, open(sys.argv[1], "w"))
PY
mk() { # mk DB GEMM_DATA NORM_DATA (a word, or "-" for a replay that did not say: an older run)
	rm -f "$1"
	python3 "$src/tests/tools/kjgen.py" -o "$1" --spec "$dir/spec.json" >/dev/null || return 1
	python3 - "$@" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
if sys.argv[2] == "-":  # a run replayed before the data column existed
    db.execute("CREATE TABLE IF NOT EXISTS re_old AS SELECT * FROM replay_energy")
    db.execute("DROP TABLE replay_energy")
    db.execute("CREATE TABLE replay_energy(unique_id INTEGER PRIMARY KEY, unroll INTEGER, launches INTEGER,"
               " seconds REAL, energy_mj_per_launch REAL, energy_unc_mj REAL, power_mw REAL, idle_mw REAL,"
               " dynamic_mj_per_launch REAL, method TEXT, replayed_at TEXT)")
# each replayed at its in-situ time and 400 W (gemm 3 ms, 1.2 J a launch; norm 1 ms, 0.4 J)
for name, data, ns in (("_Z4gemmv", sys.argv[2], 3_000_000), ("_Z4normv", sys.argv[3], 1_000_000)):
    u = db.execute("SELECT k.unique_id FROM kernel k JOIN kernel_name n ON n.id = k.name_id"
                   " WHERE n.mangled = ? LIMIT 1", (name,)).fetchone()[0]
    mj = 400 * ns / 1e6
    db.execute("INSERT INTO replay_kernel(unique_id, cache, runs, median_ns, status) VALUES(?, 'warm', 10, ?, 'ok')", (u, ns))
    if data == "-":
        db.execute("INSERT INTO replay_energy(unique_id, unroll, launches, seconds, energy_mj_per_launch, power_mw)"
                   " VALUES(?, 10, 1000, 1.0, ?, 400000)", (u, mj))
    else:
        db.execute("INSERT INTO replay_energy(unique_id, unroll, launches, seconds, energy_mj_per_launch, power_mw, data)"
                   " VALUES(?, 10, 1000, 1.0, ?, 400000, ?)", (u, mj, data))
db.commit()
PY
}
val() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): v = v[k] if v is not None else None
print(v)' "$1" "$2"; }
mk "$dir/mixed.kjdb" saved fill && "$kj" compare "$dir/mixed.kjdb" --skip 0 --json > "$dir/mixed.json" 2>/dev/null
check "gemm on its saved buffers, norm on the fill: mixed" '[ "$(val "$dir/mixed.json" energy_replay_data)" = mixed ]'
check "3 of the 4 ms of kernel time on saved buffers" '[ "$(val "$dir/mixed.json" energy_replay_data_shares.saved)" = 0.75 ]'
check "1 of 4 ms on the fill" '[ "$(val "$dir/mixed.json" energy_replay_data_shares.fill)" = 0.25 ]'
check "the text gives the shares and the cure" \
	'"$kj" compare "$dir/mixed.kjdb" --skip 0 2>/dev/null | grep -q "replayed partly on the program.s data: 75.0% .*25.0% on kjoule.s fill alone.*--snapshot=MB"'
mk "$dir/other.kjdb" saved other_saved && "$kj" compare "$dir/other.kjdb" --skip 0 --json > "$dir/other.json" 2>/dev/null
check "another launch's buffers over the fill is not the program's data: mixed" '[ "$(val "$dir/other.json" energy_replay_data)" = mixed ]'
check "its share is named" '[ "$(val "$dir/other.json" energy_replay_data_shares.other_saved)" = 0.25 ]'
mk "$dir/saved.kjdb" saved saved && "$kj" compare "$dir/saved.kjdb" --skip 0 --json > "$dir/saved.json" 2>/dev/null
check "all on saved buffers: saved_buffers" '[ "$(val "$dir/saved.json" energy_replay_data)" = saved_buffers ]'
check "no partial note then" '! "$kj" compare "$dir/saved.kjdb" --skip 0 2>/dev/null | grep -q "replayed partly"'
mk "$dir/fill.kjdb" fill fill && "$kj" compare "$dir/fill.kjdb" --skip 0 --json > "$dir/fill.json" 2>/dev/null
check "all on the fill: random_fill" '[ "$(val "$dir/fill.json" energy_replay_data)" = random_fill ]'
check "the text says the fill and the cure" '"$kj" compare "$dir/fill.kjdb" --skip 0 2>/dev/null | grep -q "replayed on kjoule.s random fill"'
mk "$dir/old.kjdb" - - && "$kj" compare "$dir/old.kjdb" --skip 0 --json > "$dir/old.json" 2>/dev/null
check "a replay that did not say: by the run's snapshot (none: random_fill)" '[ "$(val "$dir/old.json" energy_replay_data)" = random_fill ]'
check "and no shares" '[ "$(val "$dir/old.json" energy_replay_data_shares)" = None ]'
finish
