# bench/predict_accuracy/run.py on the stand-in worker: it sweeps, fits, predicts the held-out
# shapes inside and beyond the grid and writes its JSON with device, date, command, raw numbers.
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
row = e["inside"]["rows"][0]
assert row["time_us"] > 0 and row["time_us_pred"] > 0
# inside shapes are not training shapes
assert all(int(r_["shape"].split(",")[1]) % 512 == 256 for r_ in e["inside"]["rows"])
assert e["speed"]["s_per_sample_energy"] is not None
P
finish
