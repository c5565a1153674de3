#!/usr/bin/env bash
# `kjoule fit` + `predict` of today's build on the committed sweep CSVs, without a GPU: writes
# bench/results/predict_accuracy.json (the H100 grids: linear1, linear2, flash_atten, layernorm,
# softmax from sweep_csv/h100_dense, held out at the dense grid's midpoints; linear3 and linear4
# from sweep_csv/h100_heldout_0.75, measured whole on their current implementation, held out at
# 0.75 of a step) and bench/results/predict_accuracy_sdpa.json (flash_atten on cuDNN's fused
# attention, sweep_csv/h200_sdpa). Each operator's entry names the device and date of its CSVs.
# usage: bash bench/predict_accuracy/refit.sh [KJOULE]   (default build/kjoule; a few minutes)
set -euo pipefail
cd "$(dirname "$0")/../.."
kj=${1:-build/kjoule}
S=bench/results/sweep_csv R=bench/results
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() { python3 bench/predict_accuracy/run.py --kjoule "$kj" --out-dir "$work/out" "$@"; }
run --from-csv $S/h100_dense --ops linear1,linear2,flash_atten,layernorm,softmax -o "$work/pa.json"
run --from-csv $S/h100_heldout_0.75 --ops linear3,linear4 --heldout-offset 0.75 --merge "$work/pa.json" -o "$work/pa.json"
run --from-csv $S/h200_sdpa --ops flash_atten -o "$work/sdpa.json"
mv "$work/pa.json" $R/predict_accuracy.json
mv "$work/sdpa.json" $R/predict_accuracy_sdpa.json
