#!/bin/bash
# kjoule compare on generated runs: text, --json parsed, -o DIR files, bad inputs.
# usage: test_compare.sh KJOULE_BIN SRC_DIR BUILD_DIR   (exit 77: skipped, no python3)
set -u
KJ=$1 SRC=$2
command -v python3 >/dev/null || exit 77
T=$(mktemp -d /tmp/kjcli_compare.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

python3 "$SRC/bench/analysis_speed/mkrun.py" -o "$T/run.kjdb" --iterations 6 --kernels 40 --power-ms 0.05 >/dev/null \
	|| fail "mkrun"
"$KJ" compare "$T/run.kjdb" >"$T/out.txt" 2>"$T/err.txt" || fail "compare text: $(cat "$T/err.txt")"
grep -q "Decomposition" "$T/out.txt" || fail "no decomposition in text report"
grep -qi "nan" "$T/out.txt" && fail "NaN in text report"

"$KJ" compare "$T/run.kjdb" --json --top 3 >"$T/out.json" || fail "compare --json"
python3 - "$T/out.json" <<'PY' || fail "json checks"
import json, math, sys
j = json.load(open(sys.argv[1]))
need = ["wall_us", "span_us", "busy_us", "kernel_sum_us", "replay_sum_warm_us", "replay_sum_cold_us",
        "sequence_eager_us", "sequence_graph_us", "idle_us", "explained_fraction", "energy_measured_j",
        "energy_predicted_j", "energy_error_pct", "tiers", "top_kernels", "regions"]
for k in need:
    assert k in j, k
for k, v in j.items():
    assert not (isinstance(v, float) and (math.isnan(v) or math.isinf(v))), k
assert j["iterations"]["instances"] == 6 and j["iterations"]["skipped"] == 1
assert abs(j["busy_us"] + j["idle_us"] + j["host_only_us"] - j["wall_us"]) < 0.01
assert 0.9 < j["explained_fraction"] < 1.1, j["explained_fraction"]
assert len(j["top_kernels"]) == 3
assert [r["name"] for r in j["regions"]] == ["layer.0", "layer.1", "layer.2", "layer.3"]
assert j["energy_measured_j"] > 0
PY

"$KJ" compare "$T/run.kjdb" -o "$T/dir" >/dev/null || fail "compare -o"
for f in full_model_timing.json comparison_report.json energy_report.json tiers.csv top_kernels.csv \
	regions.csv iterations.csv; do
	[ -s "$T/dir/$f" ] || fail "missing $f"
done
python3 - "$T/dir" <<'PY' || fail "seed files"
import csv, json, sys, os
d = sys.argv[1]
f = json.load(open(os.path.join(d, "full_model_timing.json")))
for k in ["full_model_inference_us", "full_model_inference_ms", "min_time_us", "max_time_us", "num_runs",
          "start_timestamp", "end_timestamp"]:
    assert k in f, k
assert f["num_runs"] == 5
c = json.load(open(os.path.join(d, "comparison_report.json")))
for k in ["full_model_inference_us", "predicted_from_kernels_us", "error_percent", "tier_breakdown", "top_kernels"]:
    assert k in c, k
e = json.load(open(os.path.join(d, "energy_report.json")))
for k in ["duration_seconds", "num_power_samples", "num_runs", "power_watts", "energy_joules", "energy_wh"]:
    assert k in e, k
rows = list(csv.DictReader(open(os.path.join(d, "iterations.csv"))))
assert len(rows) == 6 and rows[0]["skipped"] == "1"
PY

# a run without replay or power: still reported, with what it lacks said
python3 "$SRC/bench/analysis_speed/mkrun.py" -o "$T/bare.kjdb" --no-replay --no-power --no-api >/dev/null
"$KJ" compare "$T/bare.kjdb" >"$T/bare.txt" || fail "bare run"
grep -q "no kernel replays" "$T/bare.txt" || fail "missing replay not said"
grep -q "no power samples" "$T/bare.txt" || fail "missing power not said"
"$KJ" compare "$T/bare.kjdb" --json | python3 -c "
import json,sys; j=json.load(sys.stdin); assert j['explained_fraction'] is None and j['energy_measured_j'] is None" \
	|| fail "nulls for a bare run"

# options
"$KJ" compare "$T/run.kjdb" --region nope >/dev/null 2>"$T/e" && fail "absent region accepted"
grep -q "no NVTX range named 'nope'" "$T/e" || fail "absent region message"
"$KJ" compare "$T/run.kjdb" --skip 6 >/dev/null 2>"$T/e" && fail "--skip 6 accepted"
# --json with no iteration left: a failure exit and the reason, never an empty answer with exit 0
"$KJ" compare "$T/run.kjdb" --skip 6 --json >"$T/o" 2>"$T/e" && fail "--skip 6 --json accepted"
grep -q "leaves no iteration" "$T/e" || fail "--skip 6 --json: no reason on stderr: $(cat "$T/e")"
"$KJ" compare "$T/run.kjdb" --skip x >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad --skip is not a usage error"
"$KJ" compare >/dev/null 2>&1; [ $? -eq 2 ] || fail "no argument is not a usage error"

# bad input: missing, empty, text, foreign SQLite, truncated
"$KJ" compare "$T/missing.kjdb" 2>"$T/e" && fail "missing file accepted"
: >"$T/empty.kjdb"
"$KJ" compare "$T/empty.kjdb" 2>"$T/e" && fail "empty file accepted"
grep -q "empty" "$T/e" || fail "empty file message: $(cat "$T/e")"
echo "time,watts" >"$T/text.kjdb"
"$KJ" compare "$T/text.kjdb" 2>"$T/e" && fail "text file accepted"
python3 -c "import sqlite3; d=sqlite3.connect('$T/foreign.db'); d.execute('create table t(x)'); d.commit()"
"$KJ" compare "$T/foreign.db" 2>"$T/e" && fail "foreign db accepted"
grep -q "not a kjoule run database" "$T/e" || fail "foreign message: $(cat "$T/e")"
head -c 3000 "$T/run.kjdb" >"$T/trunc.kjdb"
"$KJ" compare "$T/trunc.kjdb" >/dev/null 2>"$T/e" && fail "truncated db accepted"
[ -s "$T/e" ] || fail "truncated db: no message"

# a run with no kernels, NVTX ranges that never close, overlapping iterations
python3 - "$SRC" "$T/odd.kjdb" <<'PY' || fail "odd run"
import sys
sys.path.insert(0, sys.argv[1] + "/tests/tools")
import kjgen
db = kjgen.create(sys.argv[2], sys.argv[1])
db.executemany("INSERT INTO nvtx_range(pid, tid, name, start_ns, end_ns, depth) VALUES(1, 1, 'f', ?, ?, 0)",
               [(1000, None), (5000, 9000), (8000, 12000), (13000, 13000)])
db.execute("COMMIT")
PY
"$KJ" compare "$T/odd.kjdb" --json >"$T/odd.json" 2>"$T/e" || fail "odd run: $(cat "$T/e")"
grep -q "never closed" "$T/e" || fail "unclosed range not warned"
grep -q "overlapping" "$T/e" || fail "overlap not warned"
grep -qi "no kernels" "$T/e" || fail "no kernels not said"
python3 -c "
import json; j=json.load(open('$T/odd.json')); assert j['busy_us'] == 0 and j['explained_fraction'] is None
assert j['iterations']['unclosed'] == 1 and j['iterations']['overlapping'] == 1" || fail "odd run json"
grep -qi nan "$T/odd.json" && fail "NaN in odd json"

# isolated replays that bracket the in-situ time are said to (the shipped graph run: warm short,
# cold long), with the figures of the Σ lines above; a run whose warm replays match in situ is not
grep -q "bracket" "$T/out.txt" && fail "bracket line on a run whose warm replays match in situ"
"$KJ" compare "$SRC/tests/data/gpt_graph_short.kjdb" >"$T/gpt.txt" 2>&1 || fail "compare gpt_graph"
w=$(awk '/Σ alone, warm L2/ {print $(NF-4)}' "$T/gpt.txt")
c=$(awk '/Σ alone, cold L2/ {print $(NF-4)}' "$T/gpt.txt")
grep -q "bracket the in-situ time (warm ${w}, cold ${c}): .*in-sequence times keep that state" "$T/gpt.txt" ||
	fail "no bracket line with warm $w cold $c: $(grep -i bracket "$T/gpt.txt")"

# a kernel replayed only on stand-in data (random data faulted) and far off its traced time does
# other work than the program's: kept at its in-situ time, its energy at its replayed power, the
# reason shown; one on stand-in data within 25 % of its time stands as replayed
cp "$T/run.kjdb" "$T/standin.kjdb"
python3 - "$T/standin.kjdb" <<'PY' || fail "standin setup"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
note = "data: smallint (random data failed: first launch (kernel ran and failed): CUDA_ERROR_ILLEGAL_ADDRESS)"
for uid, factor in ((1, 0.5), (2, 1.2)):
    db.execute("UPDATE replay_kernel SET median_ns = CAST(median_ns * ? AS INTEGER), error = ?, status = 'relocated'"
               " WHERE unique_id = ? AND cache IN ('warm', 'cold')", (factor, note, uid))
db.commit()
PY
cp "$T/standin.kjdb" "$T/random.kjdb"
sqlite3 "$T/random.kjdb" "UPDATE replay_kernel SET error = NULL" 2>/dev/null ||
	python3 -c "import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); d.execute('UPDATE replay_kernel SET error = NULL'); d.commit()" "$T/random.kjdb"
"$KJ" compare "$T/standin.kjdb" --json >"$T/standin.json" 2>"$T/e" || fail "compare standin: $(cat "$T/e")"
"$KJ" compare "$T/random.kjdb" --json >"$T/random.json" 2>"$T/e" || fail "compare random: $(cat "$T/e")"
"$KJ" compare "$T/standin.kjdb" >"$T/standin.txt" 2>"$T/e" || fail "compare standin text"
python3 - "$T/out.json" "$T/standin.json" "$T/random.json" <<'PY' || fail "stand-in data rule"
import json, math, sys
base, st, rnd = (json.load(open(p)) for p in sys.argv[1:])
before = {w["unique_id"] for w in base["not_replayable_alone"]}  # its NCCL kernel waits on peers
flagged = {w["unique_id"]: w for w in st["not_replayable_alone"] if w["unique_id"] not in before}
assert set(flagged) == {1}, flagged
assert "depends on its inputs" in flagged[1]["reason"] and "-50 %" in flagged[1]["reason"], flagged[1]
assert "replayed power" in flagged[1]["counted_as"], flagged[1]
assert {w["unique_id"] for w in rnd["not_replayable_alone"]} == before, rnd["not_replayable_alone"]
# kept at in-situ time: the replay sum moves only by kernel 2's +20 %; on random data kernel 1's
# halved time stands too and takes its in-situ time off the sum
k1 = next(k for k in base["top_kernels"] + st["not_replayable_alone"] if k.get("unique_id") == 1)
half = k1["launches_per_iteration"] * k1["in_situ_mean_us"] / 2
d_st = st["replay_sum_warm_us"] - base["replay_sum_warm_us"]
d_rnd = rnd["replay_sum_warm_us"] - base["replay_sum_warm_us"]
assert d_st > 0 and abs(d_st - d_rnd - half) < 0.02 * half, (d_st, d_rnd, half)
assert st["replay_coverage_warm"] == base["replay_coverage_warm"] == 1.0
share = 2 * half / st["kernel_sum_us"]
assert abs(st["energy_standin_share"] - share) < 0.01 * share and base["energy_standin_share"] == 0, \
    (st["energy_standin_share"], share)
assert st["energy_error_judgeable"] == (base["energy_error_judgeable"] and share <= 0.05)
e = st["energy_predicted_j"]
assert e is not None and math.isfinite(e) and abs(e / base["energy_predicted_j"] - 1) < 0.1, (e, base["energy_predicted_j"])
PY
grep -q "Not replayable alone" "$T/standin.txt" && grep -q "depends on its inputs" "$T/standin.txt" ||
	fail "stand-in kernel not named in the text"
# on random data: a kernel 3x faster alone than traced, warm and cold, did other work alone (kept at
# its in-situ time, reason shown); one 2.4-3.3x faster stands, unless its in-sequence time agrees with
# the traced one; one 3x faster whose launches ran beside another stream's kernels stands (sharing
# explains it)
cp "$T/run.kjdb" "$T/alone.kjdb"
python3 - "$T/alone.kjdb" <<'PY' || fail "alone setup"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
def scale(uid, factor):
    db.execute("UPDATE replay_kernel SET median_ns = CAST(median_ns * ? AS INTEGER) WHERE unique_id = ?"
               " AND cache IN ('warm', 'cold')", (factor, uid))
scale(1, 0.25); scale(2, 0.4); scale(3, 0.3); scale(4, 0.25)
for uid in (2, 3):  # in-sequence rows: kernel 3's agrees with its traced time, kernel 2's is as short alone
    mean = db.execute("SELECT avg(end_ns - start_ns) FROM kernel WHERE unique_id = ?", (uid,)).fetchone()[0]
    t = int(mean * (1.05 if uid == 3 else 0.5))
    db.execute("DELETE FROM replay_kernel WHERE unique_id = ? AND cache = 'sequence'", (uid,))
    db.execute("INSERT INTO replay_kernel (unique_id, cache, status, runs, min_ns, median_ns, mean_ns, max_ns)"
               " VALUES (?, 'sequence', 'ok', 20, ?, ?, ?, ?)", (uid, t, t, t, t))
cols = [r[1] for r in db.execute("PRAGMA table_info(kernel)") if r[1] != "id"]
db.execute(f"INSERT INTO kernel ({', '.join(cols)}) SELECT {', '.join('stream_id + 1000' if c == 'stream_id' else 'NULL' if c == 'unique_id' else c for c in cols)}"
           " FROM kernel WHERE unique_id = 4")
# a spin-waiting kernel that ran only before the iterations (as XLA's autotuner runs them)
db.execute("INSERT INTO kernel_name (id, mangled, demangled) VALUES (9001, '_Z11DelayKernelv', 'DelayKernel()')")
db.execute("INSERT INTO unique_kernel (id, key, name_id, launches) VALUES (9001, 'delay-outside', 9001, 1)")
first = db.execute("SELECT min(start_ns), pid, device_id, stream_id FROM kernel").fetchone()
db.execute("INSERT INTO kernel (pid, device_id, stream_id, start_ns, end_ns, name_id, unique_id) VALUES (?, ?, ?, ?, ?, 9001, 9001)",
           (first[1], first[2], first[3], first[0] - 500000, first[0] - 400000))
db.commit()
PY
"$KJ" compare "$T/alone.kjdb" --json >"$T/alone.json" 2>"$T/e" || fail "compare alone: $(cat "$T/e")"
"$KJ" compare "$T/alone.kjdb" >"$T/alone.txt" 2>"$T/e" || fail "compare alone text"
python3 - "$T/out.json" "$T/alone.json" <<'PY' || fail "alone rule"
import json, sys
base, al = (json.load(open(p)) for p in sys.argv[1:])
before = {w["unique_id"] for w in base["not_replayable_alone"]}
flagged = {w["unique_id"]: w for w in al["not_replayable_alone"] if w["unique_id"] not in before}
assert set(flagged) - {9001} == {1, 3}, sorted(flagged)
import re
factor = lambda w: float(re.search(r"\(([0-9.]+)x faster", w["reason"]).group(1))
assert factor(flagged[1]) >= 3 and "--sequence" in flagged[1]["reason"], flagged[1]
assert 2 <= factor(flagged[3]) < 3 and "iteration's replay" in flagged[3]["reason"], flagged[3]
assert all("in-situ time" in flagged[u]["counted_as"] and "extrapolated" in flagged[u]["counted_as"] for u in (1, 3))
PY
grep -q "other work alone" "$T/alone.txt" && grep -q "x faster" "$T/alone.txt" || fail "alone kernel not named in the text"
grep -q "DelayKernel" "$T/alone.txt" && fail "a kernel outside the iterations listed among the iteration's"
grep -q "and 1 kernel(s) of that kind that ran only outside the measured iterations" "$T/alone.txt" ||
	fail "the kernel outside the iterations not counted: $(grep -A12 'Not replayable' "$T/alone.txt")"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); w=[x for x in d['not_replayable_alone'] if x['unique_id'] == 9001]; sys.exit(not (len(w) == 1 and w[0]['launches_per_iteration'] == 0))" "$T/alone.json" ||
	fail "compare --json does not list the kernel outside the iterations"

# every kernel on stand-in data: the energy error is shown, not judged
cp "$T/run.kjdb" "$T/allstandin.kjdb"
python3 -c "import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); d.execute(\"UPDATE replay_kernel SET median_ns = median_ns / 2, error = 'data: zero (random data failed: assert)'\"); d.commit()" "$T/allstandin.kjdb"
"$KJ" compare "$T/allstandin.kjdb" >"$T/allstandin.txt" 2>"$T/e" || fail "compare allstandin: $(cat "$T/e")"
grep -q "error vs measured  *not judged ([-+][0-9.]*%: 9[0-9]% of the kernel time replayed only on stand-in data" \
	"$T/allstandin.txt" || fail "energy error judged with every kernel on stand-in data: $(grep 'error vs' "$T/allstandin.txt")"

# in-sequence kernel times that sum past the whole iteration replayed: its kernels overlapped in the
# replay (streams running at once); compare says so, and not where they sum below it
for v in over fits; do
	cp "$T/run.kjdb" "$T/seq_$v.kjdb"
	python3 - "$T/seq_$v.kjdb" $v <<'PY' || fail "sequence rows"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
f = 2.0 if sys.argv[2] == "over" else 0.9  # the eager replay holds 160 us of launch gaps
db.execute("INSERT INTO replay_kernel(unique_id, cache, runs, min_ns, median_ns, mean_ns, max_ns, stdev_ns, status)"
           " SELECT unique_id, 'sequence', runs, min_ns, CAST(median_ns * ? AS INTEGER), mean_ns, max_ns, stdev_ns,"
           " status FROM replay_kernel WHERE cache = 'warm'", (f,))
db.commit()
PY
	"$KJ" compare "$T/seq_$v.kjdb" >"$T/seq_$v.txt" 2>&1 || fail "compare seq_$v"
	"$KJ" compare "$T/seq_$v.kjdb" --json >"$T/seq_$v.json" 2>&1 || fail "compare seq_$v --json"
done
grep -q "Σ in sequence exceeds the iteration replayed whole" "$T/seq_over.txt" || fail "no overlap line: $(grep 'Σ in sequence' "$T/seq_over.txt")"
grep -q "Σ in sequence exceeds" "$T/seq_fits.txt" && fail "overlap line where the kernels sum below the iteration"
python3 -c "import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); sys.exit(not (a['sequence_kernels_overlapped'] is True and b['sequence_kernels_overlapped'] is False and a['explained_fraction_sequence'] is None and b['explained_fraction_sequence'] > 0))" \
	"$T/seq_over.json" "$T/seq_fits.json" || fail "sequence_kernels_overlapped"

# kernels of several streams overlapping: the one-by-one substitution is first-order only, said so
python3 "$SRC/bench/analysis_speed/mkrun.py" -o "$T/streams.kjdb" --iterations 6 --kernels 40 --streams 4 --power-ms 0.05 >/dev/null \
	|| fail "mkrun --streams"
"$KJ" compare "$T/streams.kjdb" >"$T/streams.txt" 2>&1 || fail "compare streams"
"$KJ" compare "$T/streams.kjdb" --json >"$T/streams.json" 2>&1 || fail "compare streams --json"
python3 - "$T/streams.json" "$T/out.json" <<'PY' || fail "kernel_overlap_fraction"
import json, sys
s, one = (json.load(open(p)) for p in sys.argv[1:])
f = s["kernel_overlap_fraction"]
assert abs(f - s["overlap_us"] / s["kernel_sum_us"]) < 1e-3 and f > 0.05, f
assert one["kernel_overlap_fraction"] == 0, one["kernel_overlap_fraction"]
PY
grep -q "kernels of several streams ran at once for [0-9]*% of their time" "$T/streams.txt" || fail "no overlap caveat"
grep -q "kernels of several streams ran at once" "$T/out.txt" && fail "overlap caveat on one stream"
echo ok
