#!/usr/bin/env bash
# On the GPU machine: a short real sweep with kjoule-sweep-worker, fit, predict, and the
# prediction-accuracy benchmark (held-out shapes inside the grid and up to 2x past its ends;
# seconds per sample with and without --energy). Logs under $OUT (at most 8 files); the short
# summary table is printed last.
# usage (device): source scripts/device-env.sh; bash scripts/gpu/sweep.sh [OPS]
#   OPS: comma-separated operators for the benchmark (default: linear1..4, flash_atten,
#   layernorm, softmax). Copy $OUT/predict_accuracy.json to bench/results/ to commit it.
set -u
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT"
kj=$KJ_BUILD/kjoule
ops=${1:-linear1,linear2,linear3,linear4,flash_atten,layernorm,softmax}
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

echo "== predict_accuracy: sweep, fit, predict held-out shapes ($ops)"
timeout 420 python3 bench/predict_accuracy/run.py --kjoule "$kj" --ops "$ops" --out-dir "$work/pa" \
	-o "$OUT/predict_accuracy.json" >"$OUT/predict_accuracy.log" 2>&1
echo "exit $?"
cp "$work/pa/models/models.json" "$OUT/models.json" 2>/dev/null
ls "$work"/pa/models/*linear1_fp16_fwd_time.svg >/dev/null 2>&1 && cp "$work"/pa/models/*linear1_fp16_fwd_time.svg "$OUT/"

echo "== a transformer step from the fitted operators (operators without a model show '-')"
printf 'layers: 24\nhidden: 1024\nheads: 16\nseq: 1024\nbatch: 4\nprecision: fp16\n' >"$work/gpt.yml"
"$kj" predict --models "$work/pa/models" --model "$work/gpt.yml" 2>&1 | tee "$OUT/predict_model.txt" | tail -4

echo "== summary: held-out MAPE % (inside the grid | beyond it) and seconds per sample"
tail -n "$(( $(echo "$ops" | tr ',' '\n' | wc -l) + 1 ))" "$OUT/predict_accuracy.log"
