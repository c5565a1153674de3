#!/usr/bin/env bash
# On a machine with two GPUs: every GPU test, in two lanes at once (one GPU each), then the tests
# that need both GPUs. Logs under $OUT (gpu_lane0.log, gpu_lane1.log, gpu_multi.log); a table of
# each test's outcome last. usage (device): bash scripts/gpu/all_tests.sh   (AT_SECONDS: lanes' limit)
set -u
cd "$(dirname "$0")/../.."
source scripts/device-env.sh
source scripts/gpu/lib.sh
multicast_off
secs=${AT_SECONDS:-420}
lane0="gpu_graph|gpu_capture|gpu_signal|gpu_heat|gpu_buffers|gpu_trace"
lane1="gpu_replay|test_energy_gpu|test_pipeline_gpu|gpu_harness|gpu_shared|gpu_sweep"
(cd "$KJ_BUILD" && CUDA_VISIBLE_DEVICES=0 timeout "$secs" ctest -L gpu -R "$lane0" -E multi --timeout 200 \
	--output-on-failure > "$OUT/gpu_lane0.log" 2>&1) &
(cd "$KJ_BUILD" && CUDA_VISIBLE_DEVICES=1 timeout "$secs" ctest -L gpu -R "$lane1" -E multi --timeout 200 \
	--output-on-failure > "$OUT/gpu_lane1.log" 2>&1) &
wait
(cd "$KJ_BUILD" && timeout 200 ctest -L gpu -R multi --timeout 150 --output-on-failure > "$OUT/gpu_multi.log" 2>&1)
echo "== GPU tests"
grep -hE "Test +#|tests passed|tests failed" "$OUT"/gpu_lane0.log "$OUT"/gpu_lane1.log "$OUT"/gpu_multi.log | sed 's/  */ /g'
