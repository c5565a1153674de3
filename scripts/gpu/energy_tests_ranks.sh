#!/usr/bin/env bash
# On a machine with two GPUs, in about nine minutes: (1) at once, GPU 0: the energy bench of the
# GPT graph and JAX programs on their saved buffers; GPU 1: the GPU tests of the harness, replay,
# pipeline, sweep protocol and tracing (signals included), then the decode loop's energy bench;
# (2) both GPUs: the tensor-parallel job whose rank 1 dies. Files in $OUT: each bench's result,
# slim databases and logs, and logs.tar.gz (the tests' logs).
#   usage (device): bash scripts/gpu/energy_tests_ranks.sh
set -u
cd "$(dirname "$0")/../.."
source scripts/device-env.sh
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT" /tmp/etr
kj=$KJ_BUILD/kjoule
(CUDA_VISIBLE_DEVICES=0 EF_TAG=c_gpu0 EF_TIMEOUT=${ETR_EF0_S:-330} bash bench/energy_fidelity/device_run.sh \
	gpt_graph+snapshot jax_step+snapshot >/tmp/etr/ef_c_gpu0.txt 2>&1) &
p0=$!
(
	cd "$KJ_BUILD" && CUDA_VISIBLE_DEVICES=1 timeout ${ETR_TESTS_S:-200} ctest -L gpu \
		-R 'gpu_harness|^gpu_replay$|gpu_replay_verify|test_pipeline_gpu|gpu_sweep_protocol|gpu_trace|gpu_signal' \
		--output-on-failure >/tmp/etr/gpu_tests.log 2>&1
	echo "ctest rc $?" >>/tmp/etr/gpu_tests.log
	cd /work/main && CUDA_VISIBLE_DEVICES=1 EF_TAG=c_gpu1 EF_TIMEOUT=${ETR_EF1_S:-300} bash bench/energy_fidelity/device_run.sh \
		decode_compiled+snapshot >/tmp/etr/ef_c_gpu1.txt 2>&1
) &
p1=$!
wait $p0 $p1
echo "== rank death (both GPUs)"
timeout ${ETR_DIE_S:-150} env KJ_TP_KEEP=/tmp/etr/die bash tests/gpu/multi/run_tp_die_test.sh "$kj" . >/tmp/etr/tp_die.log 2>&1
echo "tp_die rc $?" >>/tmp/etr/tp_die.log
cp /tmp/etr/die/compare*.txt /tmp/etr/ 2>/dev/null
tar -C /tmp -czf "$OUT/logs.tar.gz" etr --exclude='*.kjdb'
echo "== tests"; grep -E 'tests passed|Passed|Failed|Not Run|ctest rc|\*\*\*' /tmp/etr/gpu_tests.log | tail -14
echo "== rank death"; grep -E '^(ok|FAIL)|tp_die rc' /tmp/etr/tp_die.log | tail -14
for g in 0 1; do echo "== energy GPU $g"; tail -n 6 /tmp/etr/ef_c_gpu$g.txt; done
