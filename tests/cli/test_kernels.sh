#!/bin/bash
# kjoule kernels on databases built by tests/tools/kjgen.py: csv/jsonl shapes, values worked out
# by hand, --top/--sort/--tier, empty runs, bad files (exit 1), bad options (exit 2).
# usage: test_kernels.sh KJOULE_BIN SRC_DIR BUILD_DIR
set -u
KJ=$1 SRC=$2
. "$(dirname "$0")/lib.sh"
GEN="python3 $SRC/tests/tools/kjgen.py"

# A run with hand-checked numbers: gemm x3 (10/20/30 us), a demangled name with commas,
# a fallback group (no unique id), memcpy and memset.
cat >"$T/spec.json" <<'JSON'
{"kernels": [
 {"name": "nvjet_hsh_64x8_64x16_2x1_v_bz_TNT", "start": 1000000, "end": 1010000, "unique": "g", "grid": [16,8,1], "shmem_executed": 233472, "carveout": 100, "launch_type": 0},
 {"name": "nvjet_hsh_64x8_64x16_2x1_v_bz_TNT", "start": 1020000, "end": 1040000, "unique": "g", "grid": [16,8,1], "shmem_executed": 233472, "carveout": 100, "launch_type": 1},
 {"name": "nvjet_hsh_64x8_64x16_2x1_v_bz_TNT", "start": 1050000, "end": 1080000, "unique": "g", "grid": [16,8,1], "shmem_executed": 233472, "carveout": 100},
 {"name": "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_", "start": 1100000, "end": 1101000, "unique": "f", "launch_type": 0},
 {"name": "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_", "start": 1102000, "end": 1103000, "unique": "f"},
 {"name": "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_", "start": 1104000, "end": 1105000, "unique": "f"},
 {"name": "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_", "start": 1106000, "end": 1107000, "unique": "f"},
 {"name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "start": 1000000, "end": 1100000},
 {"name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "start": 1200000, "end": 1250000}
],
 "memcpy": [{"kind": "HtoD", "bytes": 4096, "start": 900000, "end": 905000}],
 "memset": [{"bytes": 64, "start": 1300000, "end": 1300500}]}
JSON
$GEN -o "$T/spec.kjdb" --spec "$T/spec.json" || { echo "kjgen failed"; exit 1; }

expect 0 "$KJ" kernels "$T/spec.kjdb" --format csv
cp "$T/out" "$T/spec.csv"
python3 - "$T/spec.csv" <<'PY' || fail "csv content"
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr = rows[0]
assert all(len(r) == len(hdr) for r in rows), "field counts differ"
assert len(rows) == 1 + 5, rows
d = [dict(zip(hdr, r)) for r in rows[1:]]
# busy: nccl [1000,1100) covers gemm 1..3 and fill 1; + fill [1100,1101)? no: fill 1 starts at 1100
# union (us): [900,905) 5 + [1000,1101) 101 + [1102,1103) 1 + [1104,1105) 1 + [1106,1107) 1
#           + [1200,1250) 50 + [1300,1300.5) 0.5 = 159.5 us
g = [x for x in d if x["name"].startswith("nvjet")][0]
assert g["tier"] == "gemm" and g["count"] == "3", g
assert g["total_us"] == "60.000" and g["mean_us"] == "20.000", g
assert g["min_us"] == "10.000" and g["max_us"] == "30.000", g
assert abs(float(g["share_of_busy"]) - 60 / 159.5) < 1e-6, g
assert g["grid"] == "16x8x1" and g["keyed_by"] == "params" and g["key"] == "g", g
# the L1/shared split the launches ran with and the carveout asked; unknown is empty, never 0
assert g["shmem_executed"] == "233472" and g["carveout"] == "100", g
n = [x for x in d if x["name"].startswith("nccl")][0]
assert n["tier"] == "communication" and n["count"] == "2" and n["unique_id"] == "" and n["total_us"] == "150.000", n
f = [x for x in d if "FillFunctor" in x["name"]][0]
assert f["tier"] == "elementwise" and f["count"] == "4", f
assert f["shmem_executed"] == "" and f["carveout"] == "", f
assert f["demangled"].startswith("void at::native::vectorized_elementwise_kernel<4, "), f["demangled"]
assert "," in f["demangled"]
c = [x for x in d if x["kind"] == "memcpy"][0]
assert c["tier"] == "copy" and c["bytes"] == "4096" and c["copy_kind"] == "HtoD", c
s = [x for x in d if x["kind"] == "memset"][0]
assert s["total_us"] == "0.500" and s["bytes"] == "64", s
assert [x["kind"] for x in d][0] == "kernel" and d[0]["name"].startswith("nccl"), "sorted by total"
PY

expect 0 "$KJ" kernels "$T/spec.kjdb" --format jsonl
python3 - "$T/out" <<'PY' || fail "jsonl content"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
objs = [json.loads(l) for l in lines]
assert len(objs) == 5
keys = {"name", "demangled", "tier", "count", "total_us", "mean_us", "min_us", "max_us",
        "share_of_busy", "grid", "block", "shmem", "registers", "key", "keyed_by", "unique_id",
        "shmem_executed", "carveout", "cooperative"}
for o in objs:
    assert keys <= set(o), set(o) ^ keys
g = [o for o in objs if o["name"].startswith("nvjet")][0]
assert g["grid"] == [16, 8, 1] and g["count"] == 3 and g["total_us"] == 60.0 and g["mean_us"] == 20.0
assert g["min_us"] == 10.0 and g["max_us"] == 30.0
assert g["shmem_executed"] == 233472 and g["carveout"] == 100, g
assert [o for o in objs if o["name"].startswith("nccl")][0]["shmem_executed"] is None
# cooperative when any launch was (CUPTI's launch type 1 or 2), false when the launches say
# regular, null where the run does not say (no kernel.launch_type)
assert g["cooperative"] is True, g
assert [o for o in objs if "FillFunctor" in o["name"]][0]["cooperative"] is False
assert [o for o in objs if o["name"].startswith("nccl")][0]["cooperative"] is None
PY

expect 0 "$KJ" kernels "$T/spec.kjdb"
grep -q "^# 9 kernel launches of 3 unique kernels, 1 memcpy, 1 memset; GPU busy 159.500 us" "$T/out" ||
	fail "table closing line: $(tail -1 "$T/out")"
head -1 "$T/out" | grep -q "TIER.*COUNT.*TOTAL_us.*NAME" || fail "table header"
grep -q "gemm .* 3 .*60.000" "$T/out" || fail "table gemm row"

# A larger random run: --top, --sort, --tier
$GEN -o "$T/r.kjdb" --kernels 3000 --unique 30 --random-order --streams 3 --memcpy 30 --null-unique 0.2 ||
	{ echo "kjgen failed"; exit 1; }
for sort in total count mean; do
	expect 0 "$KJ" kernels "$T/r.kjdb" --format csv --sort "$sort"
	python3 - "$T/out" "$sort" <<'PY' || fail "--sort $sort order"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
col = {"total": "total_us", "count": "count", "mean": "mean_us"}[sys.argv[2]]
v = [float(r[col]) for r in rows]
assert v == sorted(v, reverse=True), v[:10]
assert sum(int(r["count"]) for r in rows if r["kind"] == "kernel") == 3000
PY
done
expect 0 "$KJ" kernels "$T/r.kjdb" --format csv --top 7
[ "$(wc -l <"$T/out")" = 8 ] || fail "--top 7 gave $(wc -l <"$T/out") lines"
expect 0 "$KJ" kernels "$T/r.kjdb" --format csv --top 1
[ "$(wc -l <"$T/out")" = 2 ] || fail "--top 1 gave $(wc -l <"$T/out") lines"
expect 0 "$KJ" kernels "$T/r.kjdb" --format jsonl --top 3 --sort count
[ "$(wc -l <"$T/out")" = 3 ] || fail "jsonl --top 3"
expect 0 "$KJ" kernels "$T/r.kjdb" --format csv --tier gemm
python3 -c "
import csv,sys
r=list(csv.DictReader(open('$T/out')))
assert r and all(x['tier']=='gemm' for x in r)" || fail "--tier gemm"
expect 0 "$KJ" kernels "$T/r.kjdb" --tier copy --format csv
grep -q "^memcpy,copy," "$T/out" || fail "--tier copy"

# A run with no kernels: exit 0, empty results, no NaN
$GEN -o "$T/empty.kjdb" --kernels 0 --memcpy 0 --memset 0 --nvtx 0 || exit 1
expect 0 "$KJ" kernels "$T/empty.kjdb"
grep -qi "nan" "$T/out" && fail "NaN in empty table"
grep -q "no kernels" "$T/err" || fail "empty run not reported: $(cat "$T/err")"
grep -q "^# 0 kernel launches" "$T/out" || fail "empty closing line"
expect 0 "$KJ" kernels "$T/empty.kjdb" --format csv
[ "$(wc -l <"$T/out")" = 1 ] || fail "empty csv should be the header only"
expect 0 "$KJ" kernels "$T/empty.kjdb" --format jsonl
[ -s "$T/out" ] && fail "empty jsonl should be empty"

# Bad files: exit 1 and the file named
: >"$T/zero.kjdb"
head -c 2000 "$T/r.kjdb" >"$T/trunc.kjdb"
sqlite3 "$T/foreign.kjdb" "CREATE TABLE t(x)" 2>/dev/null ||
	python3 -c "import sqlite3; sqlite3.connect('$T/foreign.kjdb').execute('CREATE TABLE t(x)')"
$GEN -o "$T/newer.kjdb" --schema-version 99 --kernels 5 || exit 1
echo "not a database at all, just text" >"$T/text.kjdb"
for f in missing.kjdb zero.kjdb trunc.kjdb foreign.kjdb newer.kjdb text.kjdb; do
	expect 1 "$KJ" kernels "$T/$f"
	grep -q "$f" "$T/err" || fail "$f: error does not name the file: $(cat "$T/err")"
done
grep -q "newer" <("$KJ" kernels "$T/newer.kjdb" 2>&1) || fail "newer schema not explained"

# Each kernel's energy per launch, predicted and in situ (compare's): on the shipped BLOOM run, one
# factor turns every prediction into its in-situ figure, and the top kernel's agree with compare's
BLOOM="$(cd "$(dirname "$0")/../.." && pwd)/examples/runs/bloom560m.kjdb"
"$KJ" kernels "$BLOOM" --format jsonl > "$T/bloom.jsonl" 2>"$T/err" || fail "kernels jsonl on the shipped run"
"$KJ" compare "$BLOOM" --json > "$T/bloom_cmp.json" 2>>"$T/err" || fail "compare on the shipped run"
python3 - "$T/bloom.jsonl" "$T/bloom_cmp.json" <<'PY' || fail "kernels' in-situ energies are not compare's"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
cmp = json.load(open(sys.argv[2]))
both = [r for r in rows if r.get("energy_predicted_mj_per_launch") and r.get("energy_in_situ_mj_per_launch")]
assert len(both) >= 10, len(both)
f = [r["energy_in_situ_mj_per_launch"] / r["energy_predicted_mj_per_launch"] for r in both]
assert max(f) - min(f) < 1e-2 * max(f), (min(f), max(f))  # per-launch figures rounded to 0.1 uJ
top = cmp["top_kernels"][0]
mine = [r for r in rows if r.get("unique_id") == top["unique_id"]]
assert mine and abs(mine[0]["energy_in_situ_mj_per_launch"] - top["energy_in_situ_mj_per_launch"]) < 1e-3 * top["energy_in_situ_mj_per_launch"], (mine, top)
PY

# The same figures in the table (two columns more, only where a kernel has them) and the CSV
"$KJ" kernels "$BLOOM" --format csv > "$T/bloom.csv" 2>>"$T/err" || fail "kernels csv on the shipped run"
"$KJ" kernels "$BLOOM" --wide > "$T/bloom.txt" 2>>"$T/err" || fail "kernels table on the shipped run"
python3 - "$T/bloom.jsonl" "$T/bloom.csv" "$T/bloom.txt" <<'PY' || fail "kernels' table or csv energies are not its jsonl's"
import csv, json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
byid = {r["unique_id"]: r for r in rows if r["kind"] == "kernel"}
c = list(csv.DictReader(open(sys.argv[2])))
seen = 0
for r in c:
    if r["kind"] != "kernel":
        assert r["energy_in_situ_mj_per_launch"] == "", r
        continue
    j = byid[int(r["unique_id"])]
    for k in ("energy_predicted_mj_per_launch", "energy_in_situ_mj_per_launch"):
        if j[k] is None:
            assert r[k] == "", (k, r)
        else:
            assert abs(float(r[k]) - j[k]) < 1e-4, (k, r[k], j[k])
            seen += 1
assert seen >= 20, seen
lines = open(sys.argv[3]).read().splitlines()
hdr = lines[0].split()
assert hdr[7:9] == ["ALONE_mJ", "INSITU_mJ"], hdr
top = lines[1].split()
j = [r for r in rows if r["kind"] == "kernel"][0]
assert abs(float(top[7]) - j["energy_predicted_mj_per_launch"]) < 1e-4 and abs(float(top[8]) - j["energy_in_situ_mj_per_launch"]) < 1e-4, (top, j)
assert any(l.startswith("# energy per launch") for l in lines), "no legend"
PY
"$KJ" kernels "$T/spec.kjdb" > "$T/spec.txt" 2>&1 || fail "kernels table without replays"
grep -q "ALONE_mJ\|# energy per launch" "$T/spec.txt" && fail "energy columns shown for a run never replayed"

# Bad options: exit 2 with usage
for args in "--format xml" "--top 0" "--top abc" "--top" "--sort foo" "--tier bogus" "--bogus" "-x"; do
	# shellcheck disable=SC2086
	expect 2 "$KJ" kernels "$T/r.kjdb" $args
	grep -q "usage: kjoule kernels" "$T/err" || fail "no usage for '$args'"
done
expect 2 "$KJ" kernels
expect 2 "$KJ" kernels "$T/r.kjdb" "$T/r.kjdb"
expect 0 "$KJ" kernels --help

# Two ranks: the NCCL kernels and the memset moved to a second process on a second GPU. --rank 1
# (by GPU, then pid) and --pid 5000 show that process's rows alone; rank 0 the first's.
cp "$T/spec.kjdb" "$T/ranks.kjdb"
python3 - "$T/ranks.kjdb" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
d0 = db.execute("SELECT min(id) FROM device").fetchone()[0] or 0
db.execute("INSERT INTO device(id, uuid, name) VALUES(?, 'GPU-second', 'test')", (d0 + 1,))
db.execute("INSERT INTO process(pid, ppid, exe, args, start_ns, end_ns, ended_cleanly)"
           " SELECT 5000, ppid, exe, args, start_ns, end_ns, ended_cleanly FROM process LIMIT 1")
db.execute("UPDATE kernel SET pid = 5000, device_id = ? WHERE name_id IN"
           " (SELECT id FROM kernel_name WHERE mangled LIKE 'nccl%')", (d0 + 1,))
db.execute("UPDATE memset SET pid = 5000, device_id = ?", (d0 + 1,))
db.commit()
PY
expect 0 "$KJ" kernels "$T/ranks.kjdb" --pid 5000 --format csv
check "--pid: that process's kernels and memset alone" '[ "$(grep -c ncclDevKernel "$T/out")" = 1 ] && ! grep -q nvjet "$T/out" && grep -q "memset" "$T/out"'
expect 0 "$KJ" kernels "$T/ranks.kjdb" --rank 1 --format csv
check "--rank 1 is the second GPU's process" '[ "$(grep -c ncclDevKernel "$T/out")" = 1 ] && ! grep -q nvjet "$T/out"'
expect 0 "$KJ" kernels "$T/ranks.kjdb" --rank 0 --format csv
check "--rank 0: the first process, without the other's rows" 'grep -q nvjet "$T/out" && ! grep -q ncclDevKernel "$T/out" && ! grep -q memset "$T/out"'
expect 1 "$KJ" kernels "$T/ranks.kjdb" --rank 2
check "--rank past the last: refused, saying how many" 'grep -q "holds 2 rank" "$T/err"'
expect 2 "$KJ" kernels "$T/ranks.kjdb" --rank 0 --pid 5000
check "--rank with --pid: refused as usage" 'grep -q "choose one" "$T/err"'
expect 2 "$KJ" kernels "$T/ranks.kjdb" --pid x
check "--pid x: refused naming the option" 'grep -q -- "--pid" "$T/err"'
expect 0 "$KJ" kernels "$T/ranks.kjdb" --pid 77
check "a process without work: said, not an empty table alone" 'grep -q "process 77 ran no kernels" "$T/err"'
finish
