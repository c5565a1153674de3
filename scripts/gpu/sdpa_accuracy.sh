#!/usr/bin/env bash
# On the GPU machine: the sweep GPU tests, then flash_atten (cuDNN fused attention by default)
# through bench/predict_accuracy from fresh grids; the held-out summary last. Logs under $OUT.
# usage (device, repo root): bash scripts/gpu/sdpa_accuracy.sh
source scripts/device-env.sh
(cd $KJ_BUILD && timeout 200 ctest -R "gpu_sweep" --output-on-failure 2>&1 | tail -12) | tee $OUT/ctest_sweep.log
export KJ_SWEEP_WORKER=$KJ_BUILD/kjoule-sweep-worker
timeout 420 python3 bench/predict_accuracy/run.py --kjoule $KJ_BUILD/kjoule --ops flash_atten --out-dir /tmp/pa --deadline-s 400 -o $OUT/predict_accuracy_sdpa.json > $OUT/pa.log 2>&1; echo "pa exit $?"
(cd /tmp/pa && find . -name '*.csv' -not -path '*/fit/*' | tar czf $OUT/sweep_csv_sdpa.tar.gz -T -)
python3 - $OUT/predict_accuracy_sdpa.json <<'P'
import json, sys
e = json.load(open(sys.argv[1]))["ops"]["flash_atten"]
print("inside", e["inside"]["summary"]); print("beyond", e["beyond"]["summary"]); print("speed", e["speed"], e.get("seconds"))
P
