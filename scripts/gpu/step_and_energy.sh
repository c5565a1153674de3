#!/usr/bin/env bash
# On a machine with 2 GPUs, in one call: the whole-step prediction (scripts/gpu/train_step.sh) on
# GPU 1 while GPU 0 runs the energy fidelity bench on programs replayed on their saved buffers
# (NAME+snapshot) and then the GPU tests until the time is spent. Each GPU's energy is its own
# (NVML per device; compare counts only the GPUs a run's work ran on).
# Files in $OUT: predict_step.json, energy_fidelity_snapshot.json, logs.tar.gz (every log),
# dbs.tar (the slim run databases, xz). The short tables are printed last.
# usage (device): bash scripts/gpu/step_and_energy.sh [PROGRAM+snapshot ...]
#   env: STEP_BUDGET (480 s), EF_TIMEOUT (330 s), TESTS_S (the GPU tests' limit, 150 s)
set -u
cd "$(dirname "$0")/../.."
source scripts/device-env.sh
OUT=${OUT:-/tmp/kjout}
mkdir -p "$OUT" /tmp/sae/step /tmp/sae/ef /tmp/sae/logs
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
t0=$(date +%s)
nvidia-smi --query-gpu=index,name,pci.bus_id,power.draw --format=csv > /tmp/sae/logs/gpus.txt 2>&1
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)

if [ "$ngpu" -ge 2 ]; then
	(CUDA_VISIBLE_DEVICES=1 OUT=/tmp/sae/step BUDGET=${STEP_BUDGET:-480} KJ_SWEEP_ENERGY_S=${KJ_SWEEP_ENERGY_S:-0.35} \
		bash scripts/gpu/train_step.sh > /tmp/sae/logs/step_table.txt 2>&1) &
	step=$!
else
	echo "one GPU: the step prediction is not run" > /tmp/sae/logs/step_table.txt
	step=""
fi

progs=${*:-cuda_heat+snapshot cuda_heat_graph+snapshot resnet_cudnn+snapshot}
(CUDA_VISIBLE_DEVICES=0 OUT=/tmp/sae/ef EF_TAG=snapshot EF_TIMEOUT=${EF_TIMEOUT:-330} \
	bash bench/energy_fidelity/device_run.sh $progs > /tmp/sae/logs/ef_table.txt 2>&1)
echo "energy fidelity exit $? after $(( $(date +%s) - t0 )) s" >> /tmp/sae/logs/ef_table.txt

(cd "$KJ_BUILD" && CUDA_VISIBLE_DEVICES=0 timeout ${TESTS_S:-150} ctest -L gpu --output-on-failure \
	> /tmp/sae/logs/gpu_tests.log 2>&1)
echo "gpu tests exit $? after $(( $(date +%s) - t0 )) s" >> /tmp/sae/logs/gpu_tests.log

[ -n "$step" ] && wait "$step"
cp /tmp/sae/step/predict_step.json "$OUT/" 2>/dev/null
cp /tmp/sae/ef/energy_fidelity_snapshot.json "$OUT/" 2>/dev/null
cp /tmp/sae/step/*.log /tmp/sae/step/*.txt /tmp/sae/logs/ 2>/dev/null
cp /tmp/sae/ef/*.tar.gz /tmp/sae/logs/ 2>/dev/null
tar -C /tmp/sae -czf "$OUT/logs.tar.gz" logs
(cd /tmp/sae/ef && ls *.kjdb.xz >/dev/null 2>&1 && tar -cf "$OUT/dbs.tar" *.kjdb.xz)
echo "== GPU tests (GPU 0)"
grep -E "tests passed|tests failed|Failed|\*\*\*|exit" /tmp/sae/logs/gpu_tests.log | tail -12
echo "== step prediction (GPU 1)"
tail -22 /tmp/sae/logs/step_table.txt
echo "== energy fidelity on saved buffers (GPU 0)"
tail -8 /tmp/sae/logs/ef_table.txt
