#!/usr/bin/env bash
# compare does not judge the parts by energy windows that ran off their kernels' timed pace (a
# window of back-to-back launches far slower than the kernel timed alone did other work: its
# energy is not the kernel's), names the worst one, and leaves paced windows (a difference of two
# windows, no pace of their own) out of the check. Runs built here.
# usage: test_compare_window_pace.sh KJOULE SRC_DIR BUILD_DIR
set -u
kj=$1 src=$2
. "$(dirname "$0")/lib.sh"
# 200 forwards of 10 ms back to back from 10 s, each with a 3 ms kernel (gemm) and a 1 ms kernel (norm)
python3 - "$dir/spec.json" <<'PY'
import json, sys
k, n = [], []
for i in range(200):
    t = 10_000_000_000 + i * 10_000_000
    n.append({"name": "forward", "start": t, "end": t + 10_000_000})
    k.append({"name": "_Z4gemmv", "start": t + 1_000_000, "end": t + 4_000_000, "unique": "g"})
    k.append({"name": "_Z4normv", "start": t + 5_000_000, "end": t + 6_000_000, "unique": "n"})
json.dump({"kernels": k, "nvtx": n}, open(sys.argv[1], "w"))
PY
mk() { # mk DB GEMM_WINDOW_MS GEMM_METHOD: gemm timed at 3 ms, its energy window GEMM_WINDOW_MS a launch
	rm -f "$1"
	python3 "$src/tests/tools/kjgen.py" -o "$1" --spec "$dir/spec.json" >/dev/null || return 1
	python3 "$src/tests/tools/kjpower.py" "$1" || return 1
	python3 - "$@" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1]); window_ms = float(sys.argv[2]); method = sys.argv[3]
for name, ns, win_ns, how in (("_Z4gemmv", 3_000_000, window_ms * 1e6, method),
                              ("_Z4normv", 1_000_000, 1_000_000, "counter-edges")):
    u = db.execute("SELECT k.unique_id FROM kernel k JOIN kernel_name n ON n.id = k.name_id"
                   " WHERE n.mangled = ? LIMIT 1", (name,)).fetchone()[0]
    mj = 400 * ns / 1e6  # 400 W over its timed time; the window's power is that energy over its pace
    db.execute("INSERT INTO replay_kernel(unique_id, cache, runs, median_ns, status) VALUES(?, 'warm', 10, ?, 'ok')", (u, ns))
    db.execute("INSERT INTO replay_energy(unique_id, unroll, launches, seconds, energy_mj_per_launch, power_mw,"
               " method, data) VALUES(?, 10, 1000, ?, ?, ?, ?, 'saved')", (u, win_ns * 1000 / 1e9, mj, mj / win_ns * 1e9, how))
db.commit()
PY
}
val() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): v = v[k] if v is not None else None
print("null" if v is None else round(v, 2) if isinstance(v, float) else v)' "$1" "$2"; }

mk "$dir/on.kjdb" 3.05 counter-edges && "$kj" compare "$dir/on.kjdb" --skip 0 --json > "$dir/on.json" 2>/dev/null
check "on pace: no window off" '[ "$(val "$dir/on.json" energy_windows_off_pace.kernels)" = 0 ]'
check "on pace: it does not stop judging" '[ "$(val "$dir/on.json" energy_windows_off_pace.stops_judging)" = False ]'
check "on pace: the parts are judged" '[ "$(val "$dir/on.json" energy_error_judgeable)" = True ]'
check "on pace: no worst kernel" '[ "$(val "$dir/on.json" energy_windows_off_pace.worst_kernel)" = null ]'

mk "$dir/slow.kjdb" 5.4 counter-edges && "$kj" compare "$dir/slow.kjdb" --skip 0 --json > "$dir/slow.json" 2>/dev/null
"$kj" compare "$dir/slow.kjdb" --skip 0 > "$dir/slow.txt" 2>/dev/null
check "a window at 1.8x the timed pace is off" '[ "$(val "$dir/slow.json" energy_windows_off_pace.kernels)" = 1 ]'
check "it is named, with its ratio" \
	'[ "$(val "$dir/slow.json" energy_windows_off_pace.worst_kernel)" = "gemm()" ] && [ "$(val "$dir/slow.json" energy_windows_off_pace.worst_ratio)" = 1.8 ]'
check "its share of the kernels' energy: 1.2 of 1.6 J" '[ "$(val "$dir/slow.json" energy_windows_off_pace.energy_share)" = 0.75 ]'
check "the parts are not judged" \
	'[ "$(val "$dir/slow.json" energy_windows_off_pace.stops_judging)" = True ] && [ "$(val "$dir/slow.json" energy_error_judgeable)" = False ]'
check "the text says why, and how to measure again" \
	'grep -q "not judged (.*ran off its timed launches (gemm(): 1.80x its timed latency).*--energy --kernel NAME" "$dir/slow.txt"'
check "the parts' other credits are not judged either" \
	'grep -q "credited other ways (kernels + idle; not judged either)" "$dir/slow.txt"'
check "on pace they are" '"$kj" compare "$dir/on.kjdb" --skip 0 2>/dev/null | grep -q "credited other ways (kernels + idle; off the measured)"'
check "the JSON says why" '"$kj" compare "$dir/slow.kjdb" --skip 0 --json 2>/dev/null | grep -q "\"why\": \"the energy window of 1 kernel"'

mk "$dir/paced.kjdb" 5.4 "paced 1:1" && "$kj" compare "$dir/paced.kjdb" --skip 0 --json > "$dir/paced.json" 2>/dev/null
check "a paced window has no pace of its own: not counted" '[ "$(val "$dir/paced.json" energy_windows_off_pace.kernels)" = 0 ]'
finish
