#!/usr/bin/env bash
# On the GPU machine: a short real sweep with kjoule-sweep-worker, fit, predict, and the
# prediction-accuracy benchmark (held-out shapes inside the grid and up to 2x past its ends;
# seconds per sample with and without --energy). Logs under $OUT (at most 8 files); the short
# summary table is printed last.
# usage (device): source scripts/device-env.sh; bash scripts/gpu/sweep.sh [OPS]
#   OPS: comma-separated operators for the benchmark (default linear1,flash_atten,layernorm),
#   measured one at a time: each done operator is in the result at once, and none starts that the
#   pace so far says would end past DEADLINE_S (450) seconds. The result keeps the operators of
#   bench/results/predict_accuracy.json it did not measure, so copying $OUT/predict_accuracy.json
#   there after each run builds up the whole set (about 330 s an operator with --energy: two a call).
#   SKIP_CHECK=1 leaves out the run_function check of every test config.
set -u
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT"
kj=$KJ_BUILD/kjoule
ops=${1:-linear1,flash_atten,layernorm}
worker=""
for w in "$KJ_BUILD/src/sweep/worker/kjoule-sweep-worker" "$KJ_BUILD/kjoule-sweep-worker"; do
	[ -x "$w" ] && worker=$w && break
done
if [ -z "$worker" ]; then
	echo "kjoule-sweep-worker is not built in $KJ_BUILD: nothing to measure"
	exit 1
fi
export KJ_SWEEP_WORKER=$worker
work=/tmp/kjsweep
rm -rf "$work"; mkdir -p "$work"

echo "== operators the worker implements"
"$worker" --list >"$work/list.txt" 2>&1
cut -d' ' -f1 "$work/list.txt" | tr '\n' ' '; echo

if [ -z "${SKIP_CHECK:-}" ]; then
echo "== correctness: every test config, run_function (fwd and bwd against a reference)"
{
	for f in configs/sweep/test/*.yml; do
		op=$(basename "$f" .yml)
		sed 's/"run": "get_one"/"run": "run_function"/' "$f" >"$work/rf_$op.yml"
		printf '%-32s ' "$op"
		res=$(timeout 60 "$kj" sweep "$work/rf_$op.yml" --precision fp16 2>"$work/rf_$op.err")
		echo "${res:-$(tail -1 "$work/rf_$op.err")}"
	done
} | tee "$OUT/sweep_check.log"
fi

echo "== predict_accuracy: sweep, fit, predict held-out shapes ($ops), one operator at a time"
timeout 520 python3 bench/predict_accuracy/run.py --kjoule "$kj" --ops "$ops" --out-dir "$work/pa" \
	--deadline-s "${DEADLINE_S:-450}" \
	--merge bench/results/predict_accuracy.json -o "$OUT/predict_accuracy.json" 2>&1 | tee "$OUT/predict_accuracy.log" | grep -E "^== |done at|deadline"
echo "exit ${PIPESTATUS[0]}"
# every measured CSV (training grid, held-out shapes) for fitting studies on a machine without a GPU
(cd "$work/pa" && find . -name '*.csv' -not -path '*/fit/*' | tar czf "$OUT/sweep_csv.tar.gz" -T -) 2>/dev/null
first=${ops%%,*}
ls "$work"/pa/$first/models/*_fwd_time.svg >/dev/null 2>&1 && cp "$(ls "$work"/pa/$first/models/*_fwd_time.svg | head -1)" "$OUT/"

echo "== summary: held-out MAPE % (inside the grid | beyond it) and seconds per sample"
python3 - "$OUT/predict_accuracy.json" <<'P' 2>/dev/null || tail -5 "$OUT/predict_accuracy.log"
import json, sys
r = json.load(open(sys.argv[1]))
f = lambda x: "-" if x is None else "%.1f" % x
print("%-12s %9s %9s %9s %9s %10s %10s %8s %7s" % ("op", "in fwd t%", "in bwd t%", "in fwd E%",
      "in bwd E%", "out fwd t%", "out bwd t%", "s/sample", "s/s+E"))
for op, e in r["ops"].items():
    i, b, s = e["inside"]["summary"], e["beyond"]["summary"], e["speed"]
    print("%-12s %9s %9s %9s %9s %10s %10s %8s %7s" % (op, f(i["fwd_time_mape_pct"]),
          f(i["bwd_time_mape_pct"]), f(i["fwd_energy_mape_pct"]), f(i["bwd_energy_mape_pct"]),
          f(b["fwd_time_mape_pct"]), f(b["bwd_time_mape_pct"]),
          f(s["s_per_sample_no_energy"]), f(s["s_per_sample_energy"])))
P
