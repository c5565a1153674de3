# bench/predict_accuracy/run.py on the stand-in worker: it sweeps, fits, predicts the held-out
# shapes inside and beyond the grid and writes its JSON with device, date, command, raw numbers.
set -u
KJ=$1 SRC=$2
. "$SRC/tests/cli/lib.sh"
python3 -c 'import ctypes; ctypes.CDLL("libxgboost.so.0")' 2>/dev/null || { echo "libxgboost missing: skipped"; exit 77; }
KJ_SWEEP_WORKER="$SRC/tests/tools/sweep_worker_standin.py" KJ_BENCH_DEVICE=cpu-standin \
	python3 "$SRC/bench/predict_accuracy/run.py" --kjoule "$KJ" --ops layernorm --out-dir "$T/pa" \
	--gpu-name "NVIDIA H100" -o "$T/r.json" >"$T/out" 2>"$T/err" || fail "run.py: $(tail -5 "$T/err")"
has "^layernorm "
python3 - "$T/r.json" <<'P' || fail "result json"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["device"] == "cpu-standin" and r["date"] and r["command"]
e = r["ops"]["layernorm"]
assert e["inside"]["summary"]["fwd_time_n"] > 0 and e["beyond"]["summary"]["bwd_time_n"] > 0
assert e["inside"]["summary"]["fwd_time_mape_pct"] < 10
# the time error under and over 20 us of measured time: the two groups count every timed row
s = e["inside"]["summary"]
for prop in ("fwd", "bwd"):
    assert s[f"{prop}_time_n_under_20us"] + s[f"{prop}_time_n_over_20us"] == s[f"{prop}_time_n"], s
    short = [x for x in e["inside"]["rows"] if x["prop"] == prop and x["time_us"] < 20]
    if short:
        want = sum(abs(x["time_us_pred"] / x["time_us"] - 1) * 100 for x in short) / len(short)
        assert abs(s[f"{prop}_time_mape_pct_under_20us"] - want) < 1e-9, (s, want)
    else:
        assert s[f"{prop}_time_mape_pct_under_20us"] is None, s
row = e["inside"]["rows"][0]
assert "time_quoted_mape_pct" in row and "energy_quoted_mape_pct" in row, row
assert row["time_us"] > 0 and row["time_us_pred"] > 0
# inside shapes are on neither the energy grid (l step 512) nor the dense time grid (step 256)
assert all(int(r_["shape"].split(",")[1]) % 256 == 128 for r_ in e["inside"]["rows"])
assert e["speed"]["s_per_sample_energy"] is not None and e["speed"]["s_per_sample_no_energy"] is not None
# time models learn from the dense grid too; energy models only from the energy grid's third
m = {(x["prop"], x["target"]): x for x in e["models"]}
assert m[("fwd", "time")]["n_final"] > 2 * m[("fwd", "energy")]["n_final"], m
assert all(x["features"] >= 2 for x in e["models"])
P
# fit and predict again from the CSVs that run left, without sweeping
mkdir -p "$T/csv" && cp -r "$T/pa/layernorm" "$T/csv/"
rm -rf "$T/csv/layernorm/models" "$T/csv/layernorm/fit"
python3 "$SRC/bench/predict_accuracy/run.py" --kjoule /nonexistent --ops layernorm --out-dir "$T/pc" \
	--from-csv "$T/csv" --merge "$T/r.json" -o "$T/r3.json" >"$T/out" 2>"$T/err" && fail "a kjoule that is not there ran"
python3 "$SRC/bench/predict_accuracy/run.py" --kjoule "$KJ" --ops layernorm --out-dir "$T/pc" \
	--from-csv "$T/csv" --merge "$T/r.json" -o "$T/r3.json" >"$T/out" 2>"$T/err" || fail "--from-csv: $(tail -5 "$T/err")"
python3 - "$T/r.json" "$T/r3.json" <<'P' || fail "--from-csv result"
import json, sys
a, b = (json.load(open(f))["ops"]["layernorm"] for f in sys.argv[1:])
assert b["refit_from_csv"]["dir"] and b["date"] == a["date"] and b["speed"] == a["speed"]
ra = {(r["shape"], r["prop"]): r["time_us"] for r in a["inside"]["rows"]}
rb = {(r["shape"], r["prop"]): r["time_us"] for r in b["inside"]["rows"]}
assert ra == rb and len(rb) > 0
P
# a refit names the device the CSVs were measured on, never this machine's: the folder's
# measured.json first, else the GPU tag of the CSV file names; with the models' features version
cat >"$T/csv/measured.json" <<'J'
{"device": "NVIDIA H100 (stand-in)", "date": "2026-01-02", "ops": {"layernorm": {"s_per_sample_energy": 2.5}}}
J
python3 "$SRC/bench/predict_accuracy/run.py" --kjoule "$KJ" --ops layernorm --out-dir "$T/pd" \
	--from-csv "$T/csv" -o "$T/r5.json" >"$T/out" 2>"$T/err" || fail "--from-csv measured.json: $(tail -5 "$T/err")"
rm "$T/csv/measured.json"
python3 "$SRC/bench/predict_accuracy/run.py" --kjoule "$KJ" --ops layernorm --out-dir "$T/pd" \
	--from-csv "$T/csv" -o "$T/r6.json" >"$T/out" 2>"$T/err" || fail "--from-csv by tag: $(tail -5 "$T/err")"
python3 - "$T/r5.json" "$T/r6.json" <<'P' || fail "refit device"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
ea, eb = a["ops"]["layernorm"], b["ops"]["layernorm"]
assert a["device"] == ea["device"] == "NVIDIA H100 (stand-in)" and ea["date"] == "2026-01-02", (a["device"], ea)
assert ea["speed"]["s_per_sample_energy"] == 2.5 and ea["refit_from_csv"]["date"] == a["date"], ea
assert eb["device"].startswith("NVIDIAH100 ") and b["device"] == eb["device"] and "date" not in eb, eb
for r, e in ((a, ea), (b, eb)):
    assert isinstance(e["features_version"], int) and r["features_version"] == e["features_version"], e
    assert e["command"] == r["command"] and "--from-csv" in e["command"], e
P
# a second run of another operator keeps the first one's entry (--merge)
KJ_SWEEP_WORKER="$SRC/tests/tools/sweep_worker_standin.py" KJ_BENCH_DEVICE=cpu-standin \
	python3 "$SRC/bench/predict_accuracy/run.py" --kjoule "$KJ" --ops softmax --out-dir "$T/pb" \
	--gpu-name "NVIDIA H100" --merge "$T/r.json" -o "$T/r2.json" >"$T/out" 2>"$T/err" || fail "merge run: $(tail -5 "$T/err")"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert sorted(r["ops"]) == ["layernorm", "softmax"]; assert r["ops"]["softmax"]["device"] == "cpu-standin"' "$T/r2.json" || fail "merged result"
# an extra time-only training sweep off the grid: its rows join the time models' training data,
# the held-out shapes stay off every training set, and an extra offset equal to the held-out one is refused
KJ_SWEEP_WORKER="$SRC/tests/tools/sweep_worker_standin.py" KJ_BENCH_DEVICE=cpu-standin \
	python3 "$SRC/bench/predict_accuracy/run.py" --kjoule "$KJ" --ops layernorm --out-dir "$T/pe" \
	--gpu-name "NVIDIA H100" --train-from-csv "$T/pa" --extra-train-offset 0.25 --heldout-offset 0.75 \
	-o "$T/r4.json" >"$T/out" 2>"$T/err" || fail "--extra-train-offset: $(tail -5 "$T/err")"
python3 - "$T/r.json" "$T/r4.json" <<'P' || fail "--extra-train-offset result"
import json, sys
a, b = (json.load(open(f))["ops"]["layernorm"] for f in sys.argv[1:])
assert b["extra_training"][0]["offset"] == 0.25, b.get("extra_training")
na = {(x["prop"], x["target"]): x["n_final"] for x in a["models"]}
nb = {(x["prop"], x["target"]): x["n_final"] for x in b["models"]}
assert nb[("fwd", "time")] > na[("fwd", "time")], (na, nb)
# the earlier run's held-out set joins the training (it was scored there), the extra adds no energy
n_old_inside = len({r["shape"] for r in a["inside"]["rows"]})
assert nb[("fwd", "energy")] == na[("fwd", "energy")] + n_old_inside, (na, nb, n_old_inside)
assert "pa_inside" in b["trained_on_csv"]["training_sets"], b["trained_on_csv"]
old_l = {int(r["shape"].split(",")[1]) for r in a["inside"]["rows"]}
extra_l = set(range(b["extra_training"][0]["starts"][1], b["extra_training"][0]["ends"][1] + 1,
                    b["extra_training"][0]["steps"][1]))
held_l = {int(r["shape"].split(",")[1]) for r in b["inside"]["rows"]}
assert held_l and not (held_l & extra_l) and not (held_l & old_l), (held_l, extra_l, old_l)
P
# --extra-energy: the extra sweep's rows join the energy models too
KJ_SWEEP_WORKER="$SRC/tests/tools/sweep_worker_standin.py" KJ_BENCH_DEVICE=cpu-standin \
	python3 "$SRC/bench/predict_accuracy/run.py" --kjoule "$KJ" --ops layernorm --out-dir "$T/pg" \
	--gpu-name "NVIDIA H100" --train-from-csv "$T/pa" --extra-train-offset 0.25 --extra-energy \
	--heldout-offset 0.75 -o "$T/r5.json" >"$T/out" 2>"$T/err" || fail "--extra-energy: $(tail -5 "$T/err")"
python3 - "$T/r4.json" "$T/r5.json" <<'P' || fail "--extra-energy result"
import json, sys
a, b = (json.load(open(f))["ops"]["layernorm"] for f in sys.argv[1:])
na = {(x["prop"], x["target"]): x["n_final"] for x in a["models"]}
nb = {(x["prop"], x["target"]): x["n_final"] for x in b["models"]}
assert nb[("fwd", "energy")] > na[("fwd", "energy")], (na, nb)
assert nb[("fwd", "time")] == na[("fwd", "time")], (na, nb)  # the same shapes, time measured twice
assert b["extra_training"][0]["energy_every"] > 1, b["extra_training"]
P
python3 "$SRC/bench/predict_accuracy/run.py" --kjoule "$KJ" --ops layernorm --out-dir "$T/pf" \
	--train-from-csv "$T/pa" --extra-train-offset 0.5 >"$T/out" 2>"$T/err" && fail "an extra offset equal to the held-out one ran"
grep -q "held-out offset" "$T/err" || fail "no reason given: $(cat "$T/err")"
finish
