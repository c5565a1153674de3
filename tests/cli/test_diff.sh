# kjoule diff: a run against itself changes nothing; against a copy with one kernel planted 20 %
# slower exactly that kernel is flagged; different GPUs are said first; --html writes a page;
# bad input is refused.
set -u
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
RUN=$SRC/examples/runs/bloom560m.kjdb
# jq-like reads of the JSON
jv() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$@"; }

# the same run twice: nothing changed, every kernel matched by name and geometry
expect 0 "$KJ" diff "$RUN" "$RUN" --json
cp "$T/out" "$T/self.json"
[ "$(jv "$T/self.json" 'd["kernels_changed"]')" = 0 ] || fail "self diff flags kernels"
[ "$(jv "$T/self.json" 'sum(m["significant"] for m in d["totals"])')" = 0 ] || fail "self diff flags totals"
[ "$(jv "$T/self.json" 'd["kernels_only_a"] + d["kernels_only_b"]')" = 0 ] || fail "self diff: kernels only in one run"
[ "$(jv "$T/self.json" 'set(k["match"] for k in d["kernels"]) == {"name+geometry"}')" = True ] || fail "self diff: not all matched by key"
[ "$(jv "$T/self.json" 'd["warnings"]')" = "[]" ] || fail "self diff warns"
[ "$(jv "$T/self.json" 'd["same_gpu"] and d["same_command"]')" = True ] || fail "same gpu/command"
# the spread is there (54 measured forwards, busy varies by ~2 us)
[ "$(jv "$T/self.json" '[m for m in d["totals"] if m["metric"]=="busy_us"][0]["a_sd"] > 0')" = True ] || fail "no spread"

# one kernel planted 20 % slower in every launch (the third by time: a cuBLAS GEMM)
cp "$RUN" "$T/slow.kjdb"
python3 - "$T/slow.kjdb" >"$T/planted" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
uid = c.execute("SELECT unique_id FROM kernel WHERE unique_id IS NOT NULL GROUP BY unique_id"
                " ORDER BY sum(end_ns - start_ns) DESC LIMIT 1 OFFSET 2").fetchone()[0]
c.execute("UPDATE kernel SET end_ns = start_ns + (end_ns - start_ns) * 12 / 10 WHERE unique_id = ?", (uid,))
c.commit()
n, gx, gy, gz, bx, by, bz = c.execute("SELECT coalesce(k.demangled, k.mangled), grid_x, grid_y, grid_z, block_x, block_y, block_z"
    " FROM unique_kernel u JOIN kernel_name k ON k.id = u.name_id WHERE u.id = ?", (uid,)).fetchone()
print("%s | grid %d,%d,%d block %d,%d,%d" % (n, gx, gy, gz, bx, by, bz))
PY
expect 0 "$KJ" diff "$RUN" "$T/slow.kjdb" --json
cp "$T/out" "$T/slow.json"
[ "$(jv "$T/slow.json" 'd["kernels_changed"]')" = 1 ] || fail "planted: $(jv "$T/slow.json" 'd["kernels_changed"]') kernels flagged, want 1"
[ "$(jv "$T/slow.json" '[k["key"] for k in d["kernels"] if k["significant"]]')" = "['$(cat "$T/planted")']" ] ||
	fail "planted: flagged $(jv "$T/slow.json" '[k["key"] for k in d["kernels"] if k["significant"]]'), want $(cat "$T/planted")"
[ "$(jv "$T/slow.json" 'round(d["kernels"][0]["delta_pct"])')" = 20 ] || fail "planted kernel's delta is not +20 %"
[ "$(jv "$T/slow.json" 'd["kernels"][0]["a_count"] == d["kernels"][0]["b_count"]')" = True ] || fail "counts changed"
# text and HTML forms
expect 0 "$KJ" diff "$RUN" "$T/slow.kjdb" --html "$T/d.html"
has "kernels: 1 changed beyond their spread, 0 only in A, 0 only in B"
has "CHANGED"
has "wrote $T/d.html"
grep -q 'id="diff-kernels"' "$T/d.html" || fail "diff page lacks its kernel table"
grep -q '<b>changed</b>' "$T/d.html" || fail "diff page flags nothing"
sed '/<script>/,/<\/script>/d' "$T/d.html" | grep -Eqw 'NaN|inf|Infinity' && fail "NaN in the diff page"

# a different GPU and program: said up front, kernels still compared
cp "$RUN" "$T/other.kjdb"
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("UPDATE device SET name = ?", ("NVIDIA H100 80GB HBM3",)); c.execute("UPDATE meta SET value = ? WHERE key = ?", ("[\"python3\",\"other.py\"]", "command")); c.commit()' "$T/other.kjdb"
expect 0 "$KJ" diff "$RUN" "$T/other.kjdb"
has "warning: different GPUs: A ran on NVIDIA H200, B on NVIDIA H100 80GB HBM3"
has "warning: different commands"
has "kernels: 0 changed"

# one run's kernel energies with cold L2 (the mean of warm and cold), the other's warm alone: said
cp "$RUN" "$T/cold.kjdb"
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); uid=c.execute("SELECT unique_id FROM replay_energy LIMIT 1").fetchone()[0]; c.execute("CREATE TABLE replay_energy_cold(unique_id INTEGER PRIMARY KEY, launches INTEGER, seconds REAL, energy_mj_per_launch REAL, energy_unc_mj REAL, ns_per_launch REAL, flush_mj REAL, flush_unc_mj REAL, replayed_at TEXT)"); c.execute("INSERT INTO replay_energy_cold(unique_id, energy_mj_per_launch, ns_per_launch) VALUES(?, 1.0, 1000)", (uid,)); c.commit()' "$T/cold.kjdb"
expect 0 "$KJ" diff "$RUN" "$T/cold.kjdb"
has "warning: the kernels' replayed energies differ in kind: B's are the mean of warm and cold L2, A's warm L2 alone"
expect 0 "$KJ" diff "$T/cold.kjdb" "$T/cold.kjdb" --json
[ "$(jv "$T/out" 'd["warnings"]')" = "[]" ] || fail "a cold run against itself warns"

# a synthetic run against the shipped one: kernels only in one run
python3 "$SRC/tests/tools/kjgen.py" -o "$T/syn.kjdb" --kernels 3000 --nvtx 10 >/dev/null
expect 0 "$KJ" diff "$RUN" "$T/syn.kjdb" --json --quiet
[ "$(jv "$T/out" 'd["kernels_only_a"] > 0 and d["kernels_only_b"] > 0')" = True ] || fail "only-in-one-run kernels not listed"
[ "$(jv "$T/out" 'all(k["delta_us"] is None for k in d["kernels"] if k["match"].startswith("only"))')" = True ] || fail "delta for an unmatched kernel"

# bad input
expect 1 "$KJ" diff "$RUN" "$T/nope.kjdb"
grep -q "nope.kjdb" "$T/err" || fail "error does not name the missing file"
expect 1 "$KJ" diff "$RUN" "$RUN" --html "$T/no/such/dir/d.html"
expect 2 "$KJ" diff "$RUN"
expect 2 "$KJ" diff "$RUN" "$RUN" --sigma -1
expect 0 "$KJ" diff --help
has "usage: kjoule diff"
finish
