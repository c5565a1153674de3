# The --capture run shipped in examples/runs (a GPT training loop of 500 steps on an H200 under
# --capture step@100:200, CUPTI taken out of the program after the window): info and compare read
# its two sets of iterations as the run recorded them (200 captured, 498 over the whole run past its
# two warm-up steps: the first holds seconds of start-up, the second over 100 ms where the steady
# ones take about 13), every figure finite. Tracing slowed the captured steps by more than the energy
# bounds, and their energy lies outside the bounds: the verdict names tracing's cost as the cause;
# with the warm-up kept (--skip 0, its first step holds seconds of start-up) the window is told apart
# as atypical instead; --whole-skip leaves out a long start of the whole run's set alone. report
# renders its Capture section. The period CUPTI was out is shown; the
# same run saying two periods shows them in info and compare.
set -u
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
xz -dc "$SRC/examples/runs/gpt_train_capture.kjdb.xz" >"$T/cap.kjdb" || fail "cannot unpack the shipped run"
expect 0 "$KJ" info "$T/cap.kjdb" --json
cp "$T/out" "$T/info.json"
python3 - "$T/info.json" <<'P' || fail "info --json on the shipped capture run: $(grep -A30 '"capture"' "$T/info.json" | head -40)"
import json, math, sys
c = json.load(open(sys.argv[1]))["capture"]
w, x, g = c["whole_run"], c["captured"], c["energy_agreement"]
assert c["range"] == "step@100:200" and c["status"] == "captured", c
assert x["instances"] == 200 and x["energy_instances"] == 200, x
assert w["instances"] == 498 and w["warmup_left_out"] == 2, w
for s in (w, x):
    for k in ("wall_ms_mean", "span_s", "energy_j_mean", "energy_unc_j_mean"):
        assert isinstance(s[k], float) and math.isfinite(s[k]) and s[k] > 0, (k, s)
assert x["span_s"] < w["span_s"] and x["energy_unc_j_mean"] < 0.05 * x["energy_j_mean"], (x, w)
assert g["within"] is False and g["bound_pct"] < 5 and abs(g["apart_pct"]) > g["bound_pct"], g
assert c["captured_slower_pct"] > g["bound_pct"] and "tracing" in g["verdict"], (c, g)
assert c["cupti_detaches"] == 1 and 0 < c["cupti_detached_s"] < w["span_s"], c
P
expect 0 "$KJ" info "$T/cap.kjdb"
has "s in 1 period$"
has "captured iterations' wall time against the whole run's: +"
cp "$T/cap.kjdb" "$T/out_periods.kjdb"
python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.executemany("INSERT OR REPLACE INTO meta VALUES(?, ?)", [("capture_detaches", "2"), ("capture_detached_ns", "1500000000")]); c.commit()' "$T/out_periods.kjdb"
expect 0 "$KJ" info "$T/out_periods.kjdb"
has "CUPTI out of the program outside the window: 1.5 s in 2 periods"
expect 0 "$KJ" compare "$T/out_periods.kjdb" --json
python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["capture"]; assert c["cupti_detaches"] == 2 and c["cupti_detached_s"] == 1.5, c' "$T/out" ||
	fail "compare --json does not carry the periods CUPTI was out"
expect 0 "$KJ" compare "$T/cap.kjdb" --json --skip 0
python3 -c 'import json,sys; g=json.load(open(sys.argv[1]))["capture"]; a=g["energy_agreement"]; assert g["whole_run"]["warmup_left_out"] == 0 and a["within"] is False and "tracing" not in a["verdict"], g' "$T/out" ||
	fail "compare --skip 0: the start-up step kept, the window is not told apart as atypical"
# --whole-skip sets the whole run's set alone: a long start left out there, every captured step kept
expect 0 "$KJ" compare "$T/cap.kjdb" --json --skip 0 --whole-skip 100
python3 -c 'import json,sys; g=json.load(open(sys.argv[1]))["capture"]; w=g["whole_run"]; assert w["warmup_left_out"] == 100 and w["instances"] == 400 and g["captured"]["instances"] == 200, g' "$T/out" ||
	fail "compare --whole-skip 100 does not leave out the whole run's first 100 alone"
expect 2 "$KJ" compare "$T/cap.kjdb" --whole-skip=-3
grep -q -- "--whole-skip" "$T/err" || fail "a bad --whole-skip is not named: $(cat "$T/err")"
expect 0 "$KJ" report "$T/cap.kjdb" -o "$T/cap100.html" --quiet --whole-skip 100
grep -q "whole run (first 100 left out)" "$T/cap100.html" || fail "report --whole-skip 100: the whole run's row does not say so"
expect 0 "$KJ" report "$T/cap.kjdb" -o "$T/cap.html" --quiet
grep -q 'id="capture-agreement"' "$T/cap.html" || fail "the report has no capture agreement"
grep -q "tracing&#39;s cost\|tracing's cost" "$T/cap.html" || fail "the report does not name tracing's cost as why the two differ"
sed '/<script>/,/<\/script>/d' "$T/cap.html" | grep -Eqw 'NaN|-?inf|Infinity' && fail "NaN or inf in the report"
finish
