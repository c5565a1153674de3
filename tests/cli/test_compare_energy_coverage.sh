#!/usr/bin/env bash
# compare does not judge the parts' energy when the kernels with a replayed energy hold less than
# 80 % of the iteration's kernel time (the rest is scaled up from them, so the error no longer
# tests the parts), says so and how to replay more; at 80 % or more it judges, saying the figure
# is extrapolated. The kernels' part of the prediction carries the replayed energies' own
# uncertainty. Runs built here.
# usage: test_compare_energy_coverage.sh KJOULE SRC_DIR BUILD_DIR
set -u
kj=$1 src=$2
. "$(dirname "$0")/lib.sh"
# 200 forwards of 10 ms back to back from 10 s, each with a 4.5 ms kernel (gemm) and a 0.5 ms one (norm)
python3 - "$dir/spec.json" <<'PY'
import json, sys
k, n = [], []
for i in range(200):
    t = 10_000_000_000 + i * 10_000_000
    n.append({"name": "forward", "start": t, "end": t + 10_000_000})
    k.append({"name": "_Z4gemmv", "start": t + 1_000_000, "end": t + 5_500_000, "unique": "g"})
    k.append({"name": "_Z4normv", "start": t + 6_000_000, "end": t + 6_500_000, "unique": "n"})
json.dump({"kernels": k, "nvtx": n}, open(sys.argv[1], "w"))
PY
mk() { # mk DB KERNEL...: the kernels named (mangled) replayed with an energy, the others not replayed
	rm -f "$1"
	python3 "$src/tests/tools/kjgen.py" -o "$1" --spec "$dir/spec.json" >/dev/null || return 1
	python3 "$src/tests/tools/kjpower.py" "$1" || return 1
	python3 - "$@" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for name, ns in (("_Z4gemmv", 4_500_000), ("_Z4normv", 500_000)):
    if name not in sys.argv[2:]:
        continue
    u = db.execute("SELECT k.unique_id FROM kernel k JOIN kernel_name n ON n.id = k.name_id"
                   " WHERE n.mangled = ? LIMIT 1", (name,)).fetchone()[0]
    mj = 400 * ns / 1e6  # 400 W over its timed time
    db.execute("INSERT INTO replay_kernel(unique_id, cache, runs, median_ns, status) VALUES(?, 'warm', 10, ?, 'ok')", (u, ns))
    db.execute("INSERT INTO replay_energy(unique_id, unroll, launches, seconds, energy_mj_per_launch, power_mw,"
               " method, data) VALUES(?, 10, 1000, ?, ?, 400000, 'counter-edges', 'saved')", (u, ns * 1000 / 1e9, mj))
db.commit()
PY
}
val() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): v = v[k] if v is not None else None
print("null" if v is None else round(v, 2) if isinstance(v, float) else v)' "$1" "$2"; }
run() { # run NAME KERNEL...: the run made, compare's JSON in NAME.json and its text in NAME.txt
	local name=$1
	shift
	mk "$dir/$name.kjdb" "$@" || return 1
	"$kj" compare "$dir/$name.kjdb" --skip 0 --json > "$dir/$name.json" 2>/dev/null
	"$kj" compare "$dir/$name.kjdb" --skip 0 > "$dir/$name.txt" 2>/dev/null
}

run all _Z4gemmv _Z4normv
check "every kernel with an energy: coverage 1" '[ "$(val "$dir/all.json" energy_kernels_time_coverage)" = 1.0 ]'
check "every kernel with an energy: judged" \
	'[ "$(val "$dir/all.json" energy_coverage_stops_judging)" = False ] && [ "$(val "$dir/all.json" energy_error_judgeable)" = True ]'

run most _Z4gemmv
check "the 4.5 ms kernel alone: coverage 0.9" '[ "$(val "$dir/most.json" energy_kernels_time_coverage)" = 0.9 ]'
check "at 90 %: judged" \
	'[ "$(val "$dir/most.json" energy_coverage_stops_judging)" = False ] && [ "$(val "$dir/most.json" energy_error_judgeable)" = True ]'
check "at 90 %: the text says the kernels' figure is extrapolated" 'grep -q "(extrapolated: replayed kernels hold 90.0% of kernel time" "$dir/most.txt"'

run few _Z4normv
check "the 0.5 ms kernel alone: coverage 0.1" '[ "$(val "$dir/few.json" energy_kernels_time_coverage)" = 0.1 ]'
check "at 10 %: not judged" \
	'[ "$(val "$dir/few.json" energy_coverage_stops_judging)" = True ] && [ "$(val "$dir/few.json" energy_error_judgeable)" = False ]'
check "the text says why and how to replay more" \
	'grep -q "not judged (.*the kernels with a replayed energy hold 10.0% of the kernel time, under 80%.*larger --budget, or --all)" "$dir/few.txt"'
check "the parts' other credits are not judged either" 'grep -q "credited other ways (kernels + idle; not judged either)" "$dir/few.txt"'
check "no inf or NaN in the JSON" '! grep -qiE "\b(inf|nan)\b" "$dir/few.json"'

# the replayed energies' own uncertainty in the kernels' part: unknown where the rows lack it; with
# 200 and 100 mJ a launch, one launch each an iteration, no cold-L2 energies (the mean: each at
# its warm), sqrt(200^2 + 100^2) mJ
check "a replayed energy without its uncertainty: unknown, and said" \
	'[ "$(val "$dir/all.json" energy_kernels_predicted_unc_j)" = null ] && grep -q "own uncertainty: unknown" "$dir/all.txt"'
python3 -c 'import sqlite3,sys; db=sqlite3.connect(sys.argv[1])
db.execute("UPDATE replay_energy SET energy_unc_mj = CASE WHEN unique_id = (SELECT k.unique_id FROM kernel k JOIN kernel_name n ON n.id = k.name_id WHERE n.mangled = ? LIMIT 1) THEN 200 ELSE 100 END", ("_Z4gemmv",))
db.commit()' "$dir/all.kjdb"
"$kj" compare "$dir/all.kjdb" --skip 0 --json > "$dir/unc.json" 2>/dev/null
"$kj" compare "$dir/all.kjdb" --skip 0 > "$dir/unc.txt" 2>/dev/null
check "the kernels' uncertainty: 100 sqrt(5) mJ an iteration" \
	'python3 -c "import json,sys; v=json.load(open(sys.argv[1]))[\"energy_kernels_predicted_unc_j\"]; sys.exit(not (v and abs(v - 5 ** 0.5 / 10) < 1e-3))" "$dir/unc.json"'
check "and its line in the text" 'grep -q "own uncertainty: ± 0.223607" "$dir/unc.txt"'
"$kj" report "$dir/all.kjdb" --skip 0 -o "$dir/unc.html" >/dev/null 2>&1
check "and beside the prediction in the report" 'grep -q "id=\"energy-parts-unc\"[^>]*>± 0.224<" "$dir/unc.html"'
# placed by the in-sequence times (gemm 3/4 of the way from warm to cold, norm 1/2): gemm
# sqrt((200/4)^2 + (400*3/4)^2), norm sqrt((100/2)^2 + (100/2)^2), together sqrt(97500) mJ
python3 -c 'import sqlite3,sys; db=sqlite3.connect(sys.argv[1])
for name, warm, cold, seq, unc in (("_Z4gemmv", 4_500_000, 5_500_000, 5_250_000, 400), ("_Z4normv", 500_000, 700_000, 600_000, 100)):
    u = db.execute("SELECT k.unique_id FROM kernel k JOIN kernel_name n ON n.id = k.name_id WHERE n.mangled = ? LIMIT 1", (name,)).fetchone()[0]
    db.execute("INSERT INTO replay_kernel(unique_id, cache, runs, median_ns, status) VALUES(?, \"cold\", 10, ?, \"ok\")", (u, cold))
    db.execute("INSERT INTO replay_kernel(unique_id, cache, runs, median_ns, status) VALUES(?, \"sequence\", 10, ?, \"ok\")", (u, seq))
    db.execute("INSERT INTO replay_energy_cold(unique_id, launches, seconds, energy_mj_per_launch, energy_unc_mj, ns_per_launch) VALUES(?, 1000, 1, ?, ?, ?)", (u, 500 * cold / 1e6, unc, cold))
db.commit()' "$dir/all.kjdb"
"$kj" compare "$dir/all.kjdb" --skip 0 --json > "$dir/placed.json" 2>/dev/null
check "placed: the method is placed_in_sequence" '[ "$(val "$dir/placed.json" energy_prediction_method)" = placed_in_sequence ]'
check "placed: each window weighted as placed, sqrt(97500) mJ an iteration" \
	'python3 -c "import json,sys; v=json.load(open(sys.argv[1]))[\"energy_kernels_predicted_unc_j\"]; sys.exit(not (v and abs(v - 97500 ** 0.5 / 1000) < 1e-3))" "$dir/placed.json"'
finish
