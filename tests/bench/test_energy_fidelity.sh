# bench/energy_fidelity/run.py --reanalyze on the shipped BLOOM run standing in for a program: the
# compare part is taken from the database with this build, the GPU part carried over, the summary
# counts the judged programs and their errors; a program without its database is refused, naming it.
set -u
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
R="$SRC/bench/energy_fidelity/run.py"
mkdir -p "$T/dbs"
cp "$SRC/examples/runs/bloom560m.kjdb" "$T/dbs/bloom.kjdb"
cp "$SRC/examples/runs/bloom560m.kjdb" "$T/dbs/bloom+snapshot.kjdb"
cat > "$T/old.json" <<'J'
{"benchmark": "energy_fidelity", "device": "stand-in", "date": "2026-11-28", "command": "by hand",
 "programs": {"bloom": {"kind": "eager HF-style transformer", "run_rc": 0, "run_s": 1.0,
                        "replay_rc": 0, "replay_s": 2.0, "compare": {}},
              "bloom+snapshot": {"kind": "eager, replayed on its saved buffers", "data": "snapshot",
                                 "run_rc": 0, "run_s": 1.0, "replay_rc": 0, "replay_s": 2.0, "compare": {}}}}
J
python3 "$R" --kjoule "$KJ" --reanalyze "$T/old.json" --dbs "$T/dbs" -o "$T/new.json" >"$T/out" 2>&1 ||
	fail "reanalyze failed: $(tail -3 "$T/out")"
"$KJ" compare "$T/dbs/bloom.kjdb" --json > "$T/cmp.json" 2>/dev/null || fail "compare on the shipped run"
python3 - "$T/new.json" "$T/cmp.json" <<'P' || fail "the result is not compare's, or its summary is off"
import json, sys
r, c = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
p = r["programs"]["bloom"]
assert p["replay_s"] == 2.0 and p["kind"] == "eager HF-style transformer"       # carried over
for k in ("energy_measured_j", "energy_predicted_j", "energy_error_pct", "energy_error_judgeable",
          "energy_prediction_method", "energy_measured_mean_unc_pct"):
    assert p["compare"][k] == c[k], (k, p["compare"][k], c[k])
assert p["compare_bad_numbers"] == []
s = r["summary"]
assert s["programs"] == 1 and s["judged"] == (1 if c["energy_error_judgeable"] else 0)
if s["judged"]:
    assert abs(s["median_abs_error_pct"] - abs(c["energy_error_pct"])) < 0.01
    assert s["within_5pct"] == (abs(c["energy_error_pct"]) <= 5)
# a program replayed on its saved buffers is summed apart from the fill's
assert r["summary_snapshot"]["programs"] == 1 and r["summary_snapshot"]["judged"] == s["judged"]
P
grep -q "median_abs_error_pct" "$T/out" || fail "no summary line printed"
# a program whose database is missing: refused, naming it, nothing written
rm "$T/dbs/bloom.kjdb" "$T/dbs/bloom+snapshot.kjdb"
python3 "$R" --kjoule "$KJ" --reanalyze "$T/old.json" --dbs "$T/dbs" -o "$T/none.json" >"$T/out2" 2>&1 &&
	fail "a missing database was not refused"
grep -q "bloom" "$T/out2" || fail "the refusal does not name the program: $(cat "$T/out2")"
[ ! -e "$T/none.json" ] || fail "a refused reanalysis wrote its output"
finish
